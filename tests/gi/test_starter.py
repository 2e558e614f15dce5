"""`gi init`: on each example project, a starter config that validates as written, never makes
a test editable, puts run folders outside the project, and (for one) runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gi.cli import main
from gi.config import load_config
from gi.program import Program

EXAMPLES = Path(__file__).resolve().parents[2] / "experiments" / "programs"
NAMES = sorted(path.name for path in EXAMPLES.iterdir() if path.is_dir())


def copy_example(tmp_path: Path, name: str) -> Path:
    destination = tmp_path / name
    shutil.copytree(EXAMPLES / name, destination, ignore=shutil.ignore_patterns("__pycache__"))
    return destination


def test_every_example_is_found() -> None:
    assert set(NAMES) >= {"batching", "bsearch", "dedupe", "grading", "windows"}


@pytest.mark.parametrize("name", NAMES)
def test_init_writes_a_config_that_validates_unchanged(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    project = copy_example(tmp_path, name)
    assert main(["init", str(project)]) == 0
    assert f"wrote {project / 'gi.toml'}" in capsys.readouterr().out
    config = load_config(project / "gi.toml")
    assert config.program_root == project.resolve()
    assert config.tests.train == ["tests"] and config.tests.holdout == ["holdout"]
    tests = config.tests.train + config.tests.holdout
    program = Program.load(config.program_root, config.program.files, protected=tests)
    assert program.files == (f"{name}.py",), "tests and the workload are never editable"
    assert not config.run_folder.resolve().is_relative_to(project.resolve()), "the run folder is outside the copy"
    has_workload = (project / "workload.py").exists()
    assert ("runtime" in config.objectives.names()) == has_workload
    assert (config.workload is not None) == has_workload


def test_init_never_overwrites_a_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = copy_example(tmp_path, "grading")
    (project / "gi.toml").write_text("# mine\n")
    assert main(["init", str(project)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gi: error: ") and "never overwrites" in err[0]
    assert (project / "gi.toml").read_text() == "# mine\n"


def test_init_without_tests_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "lonely").mkdir()
    (tmp_path / "lonely" / "lonely.py").write_text("X = 1\n")
    assert main(["init", str(tmp_path / "lonely")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "no tests found" in line
    assert not (tmp_path / "lonely" / "gi.toml").exists()


def test_tests_inside_a_package_and_beside_the_code(tmp_path: Path) -> None:
    project = tmp_path / "deep"
    (project / "src" / "pkg" / "tests").mkdir(parents=True)
    (project / "src" / "pkg" / "core.py").write_text("def one():\n    return 1\n")
    (project / "src" / "pkg" / "tests" / "helpers.py").write_text("ONE = 1\n")
    (project / "src" / "pkg" / "tests" / "test_core.py").write_text("def test_one():\n    assert True\n")
    (project / "src" / "pkg" / "util_test.py").write_text("def test_util():\n    assert True\n")
    assert main(["init", str(project)]) == 0
    config = load_config(project / "gi.toml")
    assert config.program.files == ["src/pkg/core.py"]
    assert config.tests.train == ["src/pkg/tests", "src/pkg/util_test.py"]


def test_top_level_test_files_and_nested_packages(tmp_path: Path) -> None:
    project = tmp_path / "pkg"
    (project / "src" / "pkg").mkdir(parents=True)
    (project / "src" / "pkg" / "core.py").write_text("def one():\n    return 1\n")
    (project / "src" / "pkg" / "__init__.py").write_text("")
    (project / "conftest.py").write_text("import sys\nsys.path.insert(0, 'src')\n")
    (project / "setup.py").write_text("")
    (project / "test_core.py").write_text("from pkg.core import one\n\n\ndef test_one():\n    assert one() == 1\n")
    assert main(["init", str(project)]) == 0
    config = load_config(project / "gi.toml")
    assert config.program.files == ["src/pkg/__init__.py", "src/pkg/core.py"]
    assert config.tests.train == ["test_core.py"] and config.tests.holdout == []


def test_the_grading_starter_config_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The config as written, but for a tiny budget (population and generations)."""
    project = copy_example(tmp_path, "grading")
    assert main(["init", str(project)]) == 0
    config = project / "gi.toml"
    text = config.read_text()
    config.write_text(text.replace("population = 20", "population = 2").replace("generations = 10", "generations = 0"))
    assert main(["run", str(config), "--quiet"]) == 0
    summary = json.loads((tmp_path / "grading-gi-runs" / "grading-seed1" / "summary.json").read_text())
    assert summary["baseline"]["training"]["passed"] > 0
    assert summary["baseline"]["holdout"]["passed"] > 0
