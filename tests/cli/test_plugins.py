"""Operators, objectives and algorithms from an installed package, found through entry points
(`gi.operators`, `gi.objectives`, `gi.algorithms`) as pytest finds its plugins: a small package
built and installed with pip into a folder on PYTHONPATH, listed by `gi operators`, `gi
objectives` and `gi algorithms` with where each comes from, and used by a run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.daily import write_config, write_project

PYPROJECT = """\
[build-system]
requires = ["setuptools>=70"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1"

[tool.setuptools]
py-modules = ["{module}"]

{entry_points}
"""

ENTRY_POINTS = """\
[project.entry-points."gi.operators"]
drop_if = "gi_demo_plugin:DropIf"

[project.entry-points."gi.objectives"]
if_count = "gi_demo_plugin:IF_COUNT"

[project.entry-points."gi.algorithms"]
elitist = "gi_demo_plugin:Elitist"
"""

PLUGIN = '''\
"""An operator, an objective and an algorithm that gi finds through entry points."""

import ast
import dataclasses

from gi.algorithms import NSGA2
from gi.fitness.measures import Basis, Measure
from gi.fitness.objectives import Direction, Objective
from gi.model.edits import DeleteStatement
from gi.mutators import BaseOperator, choose_site
from gi.mutators.base import statement_sites


class DropIf(BaseOperator):
    name = "drop_if"
    description = "delete an if statement"

    def propose(self, program, patch, rng, context):
        def is_if(site):
            return type(program.node(site.location)).__name__ == "If" and site.context.removable

        site = choose_site(statement_sites(program), rng, context, is_if)
        return DeleteStatement(site.location) if site else None


def if_statements(variant):
    trees = [ast.parse(text) for text in variant.sources.values()]
    return float(sum(isinstance(node, ast.If) for tree in trees for node in ast.walk(tree)))


IF_COUNT = Objective(
    "if_count", Direction.MINIMIZE, "if statements", Measure("if_count", Basis.PROGRAM, "if statements", if_statements)
)


class Elitist(NSGA2):
    name = "elitist"
    description = "NSGA-II that always takes parents from the archive"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.settings = dataclasses.replace(self.settings, archive_parents=1.0)
'''


def install(tmp_path: Path, name: str, module: str, source: str, entry_points: str) -> Path:
    """Build the package `name` (one module) and install it with pip into a folder of its own."""
    project = tmp_path / name
    project.mkdir()
    (project / "pyproject.toml").write_text(PYPROJECT.format(name=name, module=module, entry_points=entry_points))
    (project / f"{module}.py").write_text(source)
    target = tmp_path / f"{name}-site"
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--no-build-isolation",
               "--target", str(target), str(project)]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, text=True, cwd=tmp_path)
    return target


def gi(*args: str, path: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(path), "COLUMNS": "200"}
    command = [sys.executable, "-m", "gi.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, env=environment, cwd=cwd, check=False)


@pytest.mark.slow
def test_an_installed_package_adds_an_operator_an_objective_and_an_algorithm(tmp_path: Path) -> None:
    site = install(tmp_path, "gi-demo-plugin", "gi_demo_plugin", PLUGIN, ENTRY_POINTS)
    for command, name in (("operators", "drop_if"), ("objectives", "if_count"), ("algorithms", "elitist")):
        listed = gi(command, path=site, cwd=tmp_path)
        assert listed.returncode == 0, listed.stderr
        [row] = [line for line in listed.stdout.splitlines() if f" {name} " in line]
        assert "gi-demo-plugin 0.1" in row, row
        assert any(" gi " in line for line in listed.stdout.splitlines()), "gi's own are listed beside it"

    project = write_project(tmp_path / "project")
    config = write_config(tmp_path, project, tmp_path / "runs", population=4, generations=2)
    text = config.read_text().replace('operators = ["statement_delete"]', 'operators = ["drop_if"]')
    text = text.replace('minimize = ["failed_tests", "complexity", "size"]', 'minimize = ["failed_tests", "if_count"]')
    config.write_text(text.replace("[search]\n", '[search]\nalgorithm = "elitist"\n'))
    run = gi("run", str(config), "--quiet", path=site, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    summary = json.loads((tmp_path / "runs" / "chain-seed1" / "summary.json").read_text())
    assert [objective["name"] for objective in summary["objectives"]] == ["failed_tests", "if_count"]
    assert summary["baseline"]["objectives"]["if_count"] == 4  # tests/daily.py's chain of four ifs
    assert set(summary["operators"]) - {"drop"} == {"drop_if"}  # (drop: a mutation that drops an edit)
    # Deleting an `if` that returns early for a value no training test uses keeps the tests passing.
    assert min(m["objectives"]["if_count"] for m in summary["front"] if m["objectives"]["failed_tests"] == 0) < 4

    # Without the package, a config naming its components is one clear line.
    without = gi("run", str(config), "--quiet", "--fresh", path=tmp_path / "nowhere", cwd=tmp_path)
    assert without.returncode == 2 and "Traceback" not in without.stderr
    assert "unknown operator 'drop_if'" in without.stderr


BROKEN = """\
[project.entry-points."gi.operators"]
statement_delete = "gi_broken_plugin:nothing"
"""


def test_a_package_whose_component_clashes_or_does_not_load_is_one_clear_line(tmp_path: Path) -> None:
    site = install(tmp_path, "gi-broken-plugin", "gi_broken_plugin", "nothing = None\n", BROKEN)
    listed = gi("operators", path=site, cwd=tmp_path)
    assert listed.returncode == 2 and "Traceback" not in listed.stderr
    [line] = listed.stderr.strip().splitlines()
    assert line.startswith("gi: error: gi-broken-plugin 0.1: entry point statement_delete = 'gi_broken_plugin:nothing'")
    assert line.endswith(": gi already gives the operator 'statement_delete'"), line
