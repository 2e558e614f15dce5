from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gi.engine.project import find_environment, import_roots, module_names, probe
from gi.model.errors import ProgramError


def touch(root: Path, *files: str) -> None:
    for file in files:
        path = root / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")


def test_import_roots_of_the_usual_layouts(tmp_path: Path) -> None:
    touch(tmp_path, "src/pkg/__init__.py", "src/pkg/sub/__init__.py", "src/pkg/sub/mod.py", "src/ns/mod.py")
    touch(tmp_path, "flat.py", "toolz/__init__.py", "toolz/curried/__init__.py")
    files = ["src/pkg/__init__.py", "src/pkg/sub/mod.py", "src/ns/mod.py", "flat.py", "toolz/curried/__init__.py"]
    roots = import_roots(tmp_path, files)
    assert roots == ("src", ".")
    assert module_names(files, roots) == {
        "pkg": "src/pkg/__init__.py",
        "pkg.sub.mod": "src/pkg/sub/mod.py",
        "ns.mod": "src/ns/mod.py",
        "flat": "flat.py",
        "toolz.curried": "toolz/curried/__init__.py",
    }


def test_a_projects_environment_is_found(tmp_path: Path) -> None:
    assert find_environment(tmp_path) is None
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / ".venv")], check=True)
    assert find_environment(tmp_path) == tmp_path / ".venv" / "bin" / "python"


def test_an_environment_without_pytest_is_refused_naming_the_fix(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "env")], check=True)
    python = str(tmp_path / "env" / "bin" / "python")
    with pytest.raises(ProgramError, match=r"pytest is not installed there .*: .*env/bin/python -m pip install pytest"):
        probe(python, tmp_path)


def test_probe_of_gis_own_interpreter() -> None:
    found = probe(sys.executable)
    assert found.version == sys.version_info[:2]
    assert found.has_coverage
    assert "pytest-xdist" in found.plugins  # gi's dev environment has it
    assert found.pytest_options() == ("-p", "no:randomly", "-n", "0")
    assert str(Path(sys.prefix).resolve()) in found.folders
