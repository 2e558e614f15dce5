"""The generated reference pages: current, complete, and refused where a key has no description."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from gi.cli.main import HANDLERS, _parser
from gi.cli.reference import config_page, main, pages, stale, tables, undocumented

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "docs" / "reference"


def test_the_committed_reference_is_what_the_code_makes() -> None:
    assert stale(REFERENCE) == [], "docs/reference/ is out of date: run `python -m gi.cli.reference` and commit it"


def test_every_config_key_has_a_description() -> None:
    assert undocumented() == [], "give these keys Field(description=...) in their table's model (gi/config/)"


def test_a_key_without_a_description_is_found() -> None:
    class Inner(BaseModel):
        told: Annotated[int, Field(description="a key that says what it is")] = 1
        untold: int = 2

    class Outer(BaseModel):
        inner: Annotated[Inner, Field(description="a table")] = Inner()
        bare: str = ""

    assert undocumented(Outer) == ["inner.untold", "bare"]


def test_the_config_reference_lists_every_key_of_every_table_with_its_default() -> None:
    page = config_page()
    for table in tables():
        assert f"## `{table.header}`" in page
        for name in table.model.model_fields:
            entry = page.split(f"### `{name}` {{ #{table.anchor}-{name} }}", 1)
            assert len(entry) == 2, f"{table.path}.{name} is not in the config reference"
            assert "**default** " in entry[1].split("### ", 1)[0]
    assert "**default** `20`" in page.split("{ #search-population }", 1)[1].split("###", 1)[0]


def test_a_computed_default_says_what_it_is_not_this_machines_value() -> None:
    entry = config_page().split("{ #evaluation-workers }", 1)[1].split("###", 1)[0]
    assert "**default** the cores gi may run on, at most 4" in entry


def test_the_commands_reference_has_every_command() -> None:
    page = pages()["commands.md"]
    for command in HANDLERS:
        assert re.search(rf"^## `gi {command}( \w+)?`", page, flags=re.M), f"gi {command} is not in the commands page"
    assert "--generations N" in page and "Exit codes" in page


def test_check_says_which_page_is_stale(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--folder", str(tmp_path)]) == 0
    assert main(["--folder", str(tmp_path), "--check"]) == 0
    page = tmp_path / "commands.md"
    page.write_text(page.read_text().replace("gi run", "gi walk", 1))
    assert main(["--folder", str(tmp_path), "--check"]) == 1
    assert f"{page} is out of date" in capsys.readouterr().err


def test_the_generated_pages_do_not_depend_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    before = pages()
    monkeypatch.setenv("COLUMNS", "40")
    assert pages() == before
    assert _parser().prog == "gi"
