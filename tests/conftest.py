"""Shared fixtures: small programs written to temporary folders, and real-world modules."""

from __future__ import annotations

import shutil
import sysconfig
from collections.abc import Callable
from pathlib import Path

import pytest

from gi.program import Program

#: Non-trivial modules of the installed Python: decorators, async code, match statements,
#: f-strings, comments and docstrings. Copied, never edited in place.
REAL_WORLD = ("asyncio/tasks.py", "dataclasses.py", "contextlib.py", "traceback.py", "textwrap.py")

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "experiments" / "programs"


@pytest.fixture
def make_program(tmp_path: Path) -> Callable[[str], Program]:
    """Write `source` as mod.py in a fresh folder and load it as the program."""

    def make(source: str, name: str = "mod.py") -> Program:
        folder = tmp_path / f"program{len(list(tmp_path.iterdir()))}"
        folder.mkdir()
        (folder / name).write_text(source, encoding="utf-8")
        return Program.load(folder, [name])

    return make


@pytest.fixture(scope="session")
def real_world_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("realworld")
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for relative in REAL_WORLD:
        shutil.copyfile(stdlib / relative, folder / relative.replace("/", "_"))
    return folder


@pytest.fixture(scope="session")
def real_world(real_world_folder: Path) -> Program:
    return Program.load(real_world_folder, ["*.py"])


@pytest.fixture
def example_copy(tmp_path: Path) -> Callable[[str], Path]:
    """A copy of one of the example programs, so tests can check it is left unchanged."""

    def copy(name: str) -> Path:
        destination = tmp_path / name
        shutil.copytree(EXAMPLES / name, destination)
        return destination

    return copy
