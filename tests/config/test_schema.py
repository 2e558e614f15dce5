"""`gi config --schema`: the JSON Schema editors check a config with agrees with load_config."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gi.cli.main import main
from gi.cli.starter import OriginalRun, starter_config, survey
from gi.config import load_config
from gi.config.schema import config_schema
from gi.model.errors import ConfigError
from tests.config.test_config import EXAMPLES, GOOD, MISTAKES, write

REPO = EXAMPLES.parent
#: Mistakes load_config finds that a schema cannot: they need the file system, or are not TOML.
BEYOND_A_SCHEMA = {
    "program.root = '.*nowhere': no such folder",
    "tests.train: 'tset' does not exist under program.root",
    "tests.holdout 'tests' holds tests.train 'tests': a held-out test must be one the search never runs",
    "program.python = '.venv/bin/python': no such interpreter",
    "not valid TOML: Cannot overwrite a value (at line 14",
    "tests.differential_inputs = .*'grading.letter' is not 'module:function'",
    # Rules across sections, or an import: load_config's.
    "search.grid = .*: ranges.size: low must be below high",
    "search.grid.features: 'runtime' is measured only when an objective is runtime",
    "feature 'measures:lines' is a function of your own: give its [low, high] in ranges",
    "search.islands.island[0].operators: llm not among the run's operators",
    "search.islands.migration: cannot import 'nowhere'",
}


def unescaped(pattern: str) -> str:
    return re.sub(r"\\(.)", r"\1", pattern)


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft7Validator:
    schema = config_schema()
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def errors(validator: jsonschema.Draft7Validator, data: dict[str, Any]) -> list[str]:
    return [error.message for error in validator.iter_errors(data)]


@pytest.mark.parametrize("config", sorted(EXAMPLES.glob("*.toml")), ids=lambda path: path.name)
def test_every_example_config_follows_the_schema(validator: jsonschema.Draft7Validator, config: Path) -> None:
    assert errors(validator, tomllib.loads(config.read_text())) == []


SCHEMA_SAYS = [mistake for mistake in MISTAKES if unescaped(mistake[2]) not in BEYOND_A_SCHEMA]


def test_the_mistakes_beyond_a_schema_are_load_configs() -> None:
    assert {unescaped(pattern) for _, _, pattern in MISTAKES} >= BEYOND_A_SCHEMA


@pytest.mark.parametrize(("old", "new", "pattern"), SCHEMA_SAYS, ids=[m[2][:40] for m in SCHEMA_SAYS])
def test_the_schema_rejects_what_load_config_rejects(
    validator: jsonschema.Draft7Validator, old: str, new: str, pattern: str
) -> None:
    found = errors(validator, tomllib.loads(GOOD.replace(old, new, 1)))
    assert found, f"the schema accepts what load_config rejects ({pattern})"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("seed = 1", "seed = 1\nseeds = [1, 2]"),
        ('operators = "all"', 'operators = "all"\n\n[workload]\ncall = "a:b"\ncommand = ["python", "b.py"]'),
        ('operators = "all"', 'operators = "all"\n\n[[arms]]\nname = "a"\nsearch = { populaton = 4 }'),
        ('operators = "all"', 'operators = "all"\n\n[[arms]]\nsearch = { population = 4 }'),
        ('operators = "all"', 'operators = "all"\n\n[llm]\nmodel = "m"'),
        ('operators = "all"', 'operators = "all"\n\n[llm]\nbase_url = "u"\nmodel = "m"\n[[llm.models]]\nweight = 1'),
        ('algorithm = "nsga2"', 'algorithm = "nsga2"\ncrossovers = ["two_point"]'),
    ],
)
def test_the_schema_and_load_config_reject_a_wrong_config(
    validator: jsonschema.Draft7Validator, tmp_path: Path, old: str, new: str
) -> None:
    text = GOOD.replace(old, new, 1)
    assert errors(validator, tomllib.loads(text)), "the schema accepts it"
    with pytest.raises(ConfigError):
        load_config(write(tmp_path, text))


def test_a_users_objective_and_arms_that_set_keys_are_valid(validator: jsonschema.Draft7Validator) -> None:
    arm = '\n\n[[arms]]\nname = "ls"\nsearch = { algorithm = "local_search" }'
    text = GOOD.replace(
        'minimize = ["failed_tests", "complexity", "size"]', 'minimize = ["failed_tests", "mine:lines"]'
    ).replace('operators = "all"', 'operators = "all"' + arm)
    assert errors(validator, tomllib.loads(text)) == []


@pytest.mark.parametrize("example", ["grading", "dedupe", "windows"])
def test_the_configs_gi_init_writes_follow_the_schema(
    validator: jsonschema.Draft7Validator, tmp_path: Path, example: str
) -> None:
    project = shutil.copytree(EXAMPLES / "programs" / example, tmp_path / example)
    for original in (None, OriginalRun(tests=4, failing=("tests/test_a.py::t",), slowest=0.1, seconds=1.0)):
        text = starter_config(survey(project), original)
        assert errors(validator, tomllib.loads(text)) == []


def test_the_commented_config_in_the_docs_follows_the_schema(validator: jsonschema.Draft7Validator) -> None:
    page = (REPO / "docs/reference/commented-config.md").read_text()
    block = re.search(r"```toml\n(.*?)\n```", page, flags=re.S)
    assert block is not None
    assert errors(validator, tomllib.loads(block.group(1))) == []


def test_gi_config_schema_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--schema"]) == 0
    assert json.loads(capsys.readouterr().out) == config_schema()


def test_gi_config_without_what_to_print_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["config"])
    assert exit_.value.code == 2 and "--schema" in capsys.readouterr().err


def test_taplo_checks_a_config_that_names_the_schema(tmp_path: Path) -> None:
    """What an editor on taplo does with the schema a config's first line names."""
    taplo = shutil.which("taplo") or shutil.which("taplo", path=str(Path(sys.executable).parent))
    if taplo is None:
        pytest.skip("taplo is not installed (the dev extra installs it)")
    (tmp_path / "gi.schema.json").write_text(json.dumps(config_schema()))
    good = (EXAMPLES / "grading.toml").read_text()
    for name, text, code in (("good", good, 0), ("bad", good.replace("population = 20", "populaton = 20"), 1)):
        path = tmp_path / f"{name}.toml"
        path.write_text("#:schema ./gi.schema.json\n" + text)
        result = subprocess.run([taplo, "check", path.name], cwd=tmp_path, capture_output=True, text=True, check=False)
        assert result.returncode == code, result.stderr
    assert "populaton" in result.stderr
