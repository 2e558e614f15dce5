"""The program as a bundle for Dask workers: its files by content digest, materialised once
per worker in a private cache folder."""

from __future__ import annotations

import collections
import hashlib
import os
import stat
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from gi.engine.backends.base import BackendError
from gi.engine.sandbox.files import remove_tree
from gi.model.program import IGNORED_DIRS, Program

# --- the bundle: the program, shipped once ---------------------------------------------------------


@dataclass(frozen=True)
class Bundle:
    """The project folder as data: file contents by relative (POSIX) path, and their hash."""

    files: Mapping[str, bytes]
    digest: str

    @property
    def key(self) -> str:
        """Its name on a Dask cluster (with a suffix per run, the worker plugin's name)."""
        return f"gi-bundle-{self.digest}"


def bundle_digest(files: Mapping[str, bytes]) -> str:
    """SHA-256 of the paths and contents of a bundle, in path order."""
    digest = hashlib.sha256()
    for path in sorted(files):
        data = files[path]
        digest.update(f"{path}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def bundle_program(root: Path, exclude: Iterable[Path] = ()) -> Bundle:
    """The files `copy_program` copies from `root` (no version control, caches, environments,
    compiled files nor `exclude`), read into memory. Workers do not share this machine's file
    system, so a link is shipped as the file it points to when that is a regular file inside
    `root`, and left out otherwise."""
    root = root.resolve()
    excluded = {path.resolve() for path in exclude}
    files: dict[str, bytes] = {}
    for folder, subfolders, names in os.walk(root):
        here = Path(folder)
        subfolders[:] = sorted(
            name
            for name in subfolders
            if name not in IGNORED_DIRS and not (here / name).is_symlink() and (here / name).resolve() not in excluded
        )
        for name in sorted(names):
            path = here / name
            if name in IGNORED_DIRS or name.endswith((".pyc", ".pyo")) or path.resolve() in excluded:
                continue
            target = path.resolve()
            if not target.is_file() or not target.is_relative_to(root):
                continue
            files[path.relative_to(root).as_posix()] = target.read_bytes()
    return Bundle(files, bundle_digest(files))


def default_cache() -> Path:
    """Where a machine keeps the bundles its workers received: one folder per user."""
    return Path(tempfile.gettempdir()) / f"gi-bundles-{os.getuid()}"


def _private_folder(path: Path) -> None:
    """Make `path` (mode 700) or check that it is a folder of ours, not a link someone planted."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise BackendError(f"{path}: the bundle cache must be a folder of this user's, not a link")


#: On a worker: bundles this process received, wrote to disk, and loaded as programs, by hash.
RECEIVED: collections.Counter[str] = collections.Counter()
MATERIALISED: collections.Counter[str] = collections.Counter()
LOADED: collections.Counter[str] = collections.Counter()
_BUNDLES: dict[str, Path] = {}
_PROGRAMS: dict[tuple[str, tuple[str, ...], tuple[str, ...]], Program] = {}
_WORKER_GUARD = threading.Lock()


def materialise(files: Mapping[str, bytes], digest: str, cache: Path) -> Path:
    """The bundle's folder `cache/<digest>`, written first if this machine does not have it. The
    files go to a fresh folder renamed into place, so workers racing to write one bundle leave
    one whole copy, and a folder by that name is always complete."""
    target = cache / digest
    if target.is_dir():
        return target
    if bundle_digest(files) != digest:
        raise BackendError(f"the program bundle a worker received does not match its hash {digest[:12]}")
    _private_folder(cache)
    staging = Path(tempfile.mkdtemp(prefix=f".{digest[:12]}-", dir=cache))
    try:
        for relative, data in files.items():
            parts = PurePosixPath(relative).parts
            if not parts or relative.startswith("/") or ".." in parts:
                raise BackendError(f"the program bundle holds a path outside the project: {relative!r}")
            path = staging.joinpath(*parts)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        try:
            staging.rename(target)
        except OSError:  # another worker of this machine was first
            if not target.is_dir():
                raise
        else:
            MATERIALISED[digest] += 1
    finally:
        if staging.exists():
            remove_tree(staging)
    return target
