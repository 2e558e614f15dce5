"""A workspace per evaluation: a copy of the program with the variant's sources, gi's tools,
the command's outputs and its temporary folder (see gi/engine/sandbox/runner.py)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gi.engine.sandbox.claims import _claim, _remove_workspace, _sweep_workspaces
from gi.engine.sandbox.files import copy_program, write_new

# --- the workspace -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Workspace:
    """The folders of one evaluation; see the module doc."""

    base: Path

    @property
    def program(self) -> Path:
        return self.base / "program"

    @property
    def tools(self) -> Path:
        return self.base / "tools"

    @property
    def outputs(self) -> Path:
        return self.base / "outputs"

    @property
    def temporary(self) -> Path:
        return self.base / "temporary"


@contextmanager
def workspace(
    root: Path,
    sources: Mapping[str, str],
    *,
    parent: Path | None = None,
    exclude: Iterable[Path] = (),
    encodings: Mapping[str, str] | None = None,
) -> Iterator[Workspace]:
    """A fresh workspace: a copy of the program with `sources` (relative path -> text) written
    in, each in its file's encoding (UTF-8 unless `encodings` says otherwise). The first one a
    process makes in a folder removes the workspaces there that a killed gi left behind."""
    folder = Path(parent if parent is not None else tempfile.gettempdir())
    _sweep_workspaces(folder)
    space = Workspace(Path(tempfile.mkdtemp(prefix="gi-", dir=folder)))
    claim = _claim(space.base)
    try:
        copy_program(root, space.program, exclude)
        for relative, text in sources.items():
            target = space.program / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            write_new(target, text.encode((encodings or {}).get(relative, "utf-8")))
        for made in (space.tools, space.outputs, space.temporary):
            made.mkdir()
        yield space
    finally:
        _remove_workspace(space.base)
        if claim is not None:
            os.close(claim)


def install_tool(space: Workspace, name: str, text: str) -> Path:
    """Put one of gi's files into the workspace's tools/ (read-only to the command) and return its path."""
    path = space.tools / name
    write_new(path, text.encode("utf-8"))
    return path
