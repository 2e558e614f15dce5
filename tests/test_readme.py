"""README.md is a front door: short, every job findable from its first screen, and every command
block runs as written.

Each section's `sh` blocks run in order in a fresh folder laid out as a clone is (the
repository's `experiments/`, and `.venv` the environment these tests run in), with bash, as a
newcomer pastes them; what the section says to expect is then checked in what the commands
wrote. Two blocks are not run here, each for a reason and with a check that stands in (NOT_RUN).
Only addresses change: the Dask recipe's port becomes a free one, and the model recipe's server
is tests/llm_server.py's, which speaks the OpenAI protocol with scripted replies, on its own port.
`toml` blocks are checked against the config's JSON Schema.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gi.config.schema import config_schema
from tests.llm_server import Action, ModelServer, ScriptedModel, serve

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
#: What of the repository the README's commands use (a fresh clone holds them all).
CLONED = ("experiments",)
#: The most lines README may have, and how far down its table of contents may start.
MOST_LINES = 300
FIRST_SCREEN = 25
#: Seconds one section's commands may take (a whole search each, on a loaded machine).
SECTION_TIMEOUT = 900


@dataclass(frozen=True)
class Block:
    section: str
    language: str
    text: str
    line: int


def readme_blocks() -> list[Block]:
    """Every fenced block of README.md with the heading it stands under."""
    found: list[Block] = []
    section = ""
    lines = README.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        heading = re.match(r"^#{2,3} (.+)$", line)
        if heading:
            section = heading.group(1).strip()
        fence = re.match(r"^(`{3,})(\w*)\s*$", line)
        if fence:
            end = next(i for i in range(index + 1, len(lines)) if lines[i].strip() == fence.group(1))
            found.append(Block(section, fence.group(2), "\n".join(lines[index + 1 : end]), index + 1))
            index = end
        index += 1
    return found


#: Blocks not run by this test: why, and what stands in for running them.
NOT_RUN = {
    'python3 -m venv .venv && .venv/bin/pip install -e ".[dev]"': (
        "the install: .ci/run installs exactly this way before every test (test_ci_installs_as_readme_says)"
    ),
    '.venv/bin/pip install -e ".[local-llm]"\n.venv/bin/gi llm serve &': (
        "builds llama-cpp-python from source for minutes; tests/cli/test_local_model.py runs `gi llm serve`"
        " with a short run where the extra is installed"
    ),
}


def sections() -> dict[str, list[Block]]:
    """The `sh` blocks this test runs, by section, in README's order."""
    found: dict[str, list[Block]] = {}
    for block in readme_blocks():
        if block.language == "sh" and block.text not in NOT_RUN:
            found.setdefault(block.section, []).append(block)
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def fresh_clone(folder: Path) -> Path:
    """A folder laid out as a clone of the repository is, with `.venv` the running environment."""
    if not (Path(sys.prefix) / "bin" / "gi").is_file():
        pytest.skip(f"README's commands run .venv/bin/gi: install gi into the environment tests run in ({sys.prefix})")
    folder.mkdir()
    for name in CLONED:
        shutil.copytree(REPO / name, folder / name, ignore=shutil.ignore_patterns("runs", "__pycache__"))
    (folder / ".venv").symlink_to(Path(sys.prefix))
    return folder


def run_block(block: Block, folder: Path, text: str) -> None:
    """Run one block with bash in `folder`; what it leaves running (`&`) is stopped afterwards.
    The output goes to a file, not a pipe: a process left running would hold a pipe open."""
    log = folder / f"readme-line-{block.line}.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            ["bash", "-e", "-c", text], cwd=folder, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            process.wait(timeout=SECTION_TIMEOUT)
        finally:
            for signum in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(process.pid, signum)
                except ProcessLookupError:
                    break
                if signum == signal.SIGTERM:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        process.wait(timeout=10)
    shown = log.read_text(errors="replace")[-4000:]
    assert process.returncode == 0, f"README.md line {block.line} ({block.section}) failed:\n{text}\n{shown}"


def summary(run_folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_folder / "summary.json").read_text())
    return data


def members(run_folder: Path) -> list[dict[str, Any]]:
    return [member for member in summary(run_folder)["front"] if member["id"] != "original"]


# What each section says to expect, checked in what its commands wrote (the folder they ran in).
def expect_quick_start(folder: Path) -> None:
    run = folder / "experiments/runs/grading-simplify-seed1"
    simpler = [m for m in members(run) if m["objectives"]["complexity"] < 12 and m["holdout"]["failed"] == 0]
    assert simpler, "no member with lower complexity passing its held-out tests"
    original = (folder / "experiments/programs/grading/grading.py").read_text()
    assert (folder / "grading-copy/grading.py").read_text() != original, "gi apply changed nothing"


def expect_own_project(folder: Path) -> None:
    assert (folder / "my-project/gi.toml").is_file()
    assert (folder / "my-project-gi-runs/my-project-seed1/summary.json").is_file()


def expect_faster(folder: Path) -> None:
    config = tomllib.loads((folder / "fast-project/gi.toml").read_text())
    assert "runtime" in config["objectives"]["minimize"] and config["workload"]["call"] == "workload:run"
    run = folder / "fast-project-gi-runs/fast-project-seed1"
    front = members(run)
    scans = [m for m in front if "-        if value in result:" in (run / m["diff"]).read_text()]
    assert scans, f"no member changes the quadratic check: {[m['descriptions'] for m in front]}"
    assert all("speedup" in member for member in scans), "the rigorous re-measurement did not time them"


def expect_repair(folder: Path) -> None:
    config = tomllib.loads((folder / "broken/gi.toml").read_text())
    assert config["objectives"]["constraint"] == "none"
    run = folder / "broken-gi-runs/broken-seed1"
    assert summary(run)["baseline"]["objectives"]["failed_tests"] == 4
    fixes = [m for m in members(run) if m["objectives"]["failed_tests"] == 0 and m["holdout"]["failed"] == 0]
    assert any('< becomes <= in "while i < len(values) - width:"' in d for m in fixes for d in m["descriptions"])
    assert summary(run)["plausible"]


def expect_overfitting(folder: Path) -> None:
    run = folder / "experiments/runs/grading-simplify-seed2"
    front = members(run)
    assert any(member["overfits"] for member in front)
    assert summary(run)["validation"]["front"]["checked"] > 0
    assert all("ablation" in member and "minimal" in member for member in front)


def expect_arms(folder: Path) -> None:
    runs = folder / "experiments/runs/grading-arms"
    compared = json.loads((runs / "compare.json").read_text())
    assert set(compared["arms"]) == {"nsga2", "local_search", "random"}
    assert compared["pairs"], "no pair of arms was tested"


def expect_editor(folder: Path) -> None:
    schema = json.loads((folder / "experiments/gi.schema.json").read_text())
    for config in (folder / "experiments").glob("*.toml"):
        jsonschema.validate(tomllib.loads(config.read_text()), schema)


EXPECTED: dict[str, Callable[[Path], None]] = {
    "Quick start": expect_quick_start,
    "Your own project": expect_own_project,
    "Faster code": expect_faster,
    "Repairing failing tests": expect_repair,
    "Studying overfitting": expect_overfitting,
    "Experiments with arms and seeds": expect_arms,
    "Editor support": expect_editor,
}


#: Sections whose searches other tests of the default run already make (whole runs each, most of
#: the suite's minutes on CI's 2 cores): marked `exhaustive`, run with `-m exhaustive`. The
#: others, and every check of README's text, run by default.
COVERED_ELSEWHERE = {
    "Your own project": "tests/cli/test_starter.py runs gi init, then gi run on the config it wrote",
    "Simpler code": "the quick start's search with other objectives given by --set (tests/run/test_objectives.py)",
    "Using a model, local or remote": "tests/run/test_llm_runs.py runs the model's searches on a scripted server",
    "Studying overfitting": "tests/studies/test_overfitting.py runs seed 2, gi validate, gi ablate and gi minimize",
    "Experiments with arms and seeds": "tests/studies/test_arms.py runs arms and seeds, and gi compare on them",
    "Many machines": "tests/engine/test_dask.py::test_a_dask_run_gives_the_same_front",
}


def section_params() -> list[Any]:
    return [
        pytest.param(name, marks=pytest.mark.exhaustive) if name in COVERED_ELSEWHERE else name for name in sections()
    ]


@pytest.fixture
def scripted_model() -> Iterator[ModelServer]:
    """A server speaking the OpenAI protocol whose every reply is one plain completion."""
    model = ScriptedModel(default=Action(reply="    return None\n"))
    yield from serve(model)


def test_readme_is_a_front_door() -> None:
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= MOST_LINES, f"README.md has {len(lines)} lines; at most {MOST_LINES}"
    contents = next(i for i, line in enumerate(lines) if line.startswith("**Contents:**"))
    assert contents < FIRST_SCREEN, "the table of contents must be on the first screen"
    toc = " ".join(lines[contents : next(i for i in range(contents, len(lines)) if lines[i].startswith("#"))])
    headings = {
        re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        for heading in re.findall(r"^#{2,3} (.+)$", text, flags=re.M)
    }
    linked = re.findall(r"\]\(#([\w-]+)\)", toc)
    assert set(linked) <= headings, f"the contents link to no heading: {set(linked) - headings}"
    recipes = {name for name in sections() if name not in ("Quick start",)} | {"Using a model, local or remote"}
    for recipe in recipes:
        anchor = re.sub(r"[^\w\- ]", "", recipe.lower()).replace(" ", "-")
        assert anchor in linked, f"the recipe {recipe!r} is not in the contents"
    assert not re.search(r"20\d\d-\d\d-\d\d", text), "README holds no dated measurements (docs/benchmarks/ does)"


def test_every_readme_block_is_run_or_says_why_not() -> None:
    texts = {block.text for block in readme_blocks() if block.language == "sh"}
    assert set(NOT_RUN) <= texts, f"NOT_RUN names blocks README no longer has: {set(NOT_RUN) - texts}"
    assert set(EXPECTED) <= set(sections()), f"no such section: {set(EXPECTED) - set(sections())}"
    assert set(COVERED_ELSEWHERE) <= set(sections()), f"no such section: {set(COVERED_ELSEWHERE) - set(sections())}"


def test_ci_installs_as_readme_says() -> None:
    install = next(text for text in NOT_RUN if 'pip install -e ".[dev]"' in text)
    assert install in (REPO / ".ci/run").read_text(), ".ci/run must install exactly as README.md says"


def test_readme_configs_follow_the_schema() -> None:
    schema = config_schema()
    fragment = {**schema, "required": []}  # a block shows some tables of a config, not all
    for block in readme_blocks():
        if block.language == "toml":
            jsonschema.validate(tomllib.loads(block.text), fragment)


@pytest.mark.slow
@pytest.mark.parametrize("section", section_params())
def test_readme_section_runs_as_written(section: str, tmp_path: Path, scripted_model: ModelServer) -> None:
    folder = fresh_clone(tmp_path / "clone")
    port = str(free_port())
    for block in sections()[section]:
        text = block.text.replace("8786", port).replace("http://127.0.0.1:8000/v1", scripted_model.base_url)
        run_block(block, folder, text)
    if "llm.base_url" in " ".join(block.text for block in sections()[section]):
        assert scripted_model.model.requests, "the run never asked the model"
        run = folder / "experiments/runs/grading-simplify-seed1"
        assert summary(run)["llm"]["requests"] > 0
    if section in EXPECTED:
        EXPECTED[section](folder)


def test_readme_links_lead_somewhere() -> None:
    text = README.read_text(encoding="utf-8")
    headings = {
        re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        for heading in re.findall(r"^#{2,3} (.+)$", text, flags=re.M)
    }
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://")):
            continue
        if target.startswith("#"):
            assert target[1:] in headings, f"README.md links to #{target[1:]}, which no heading is"
        else:
            assert (REPO / target.split("#")[0]).is_file(), f"README.md links to {target}, which does not exist"
