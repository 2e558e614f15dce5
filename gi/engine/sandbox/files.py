"""Files in a workspace, written and read so that nothing a variant planted is followed: new
files only, regular files only, links never followed; and folders removed whatever a variant
did to their permissions."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from gi.model.errors import EvaluationError
from gi.model.program import IGNORED_DIRS


def user_folder() -> Path:
    """This user's own folder for gi's locks and caches on this machine: `gi-<uid>` in the
    temporary folder, made private (0700) by its first gi process. Shared paths there belong
    to whoever made them first: root's timing lock, readable only, made another user's run
    crash at its first timing. A folder of that name that is not this user's alone (another
    user made it) is refused in one line."""
    folder = Path(tempfile.gettempdir()) / f"gi-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    found = os.lstat(folder)
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid() or found.st_mode & 0o077:
        raise EvaluationError(
            f"{folder}: gi's folder for this user's locks is not a private folder of this user's"
            " (another user made it, or it is a link); remove it, or set TMPDIR to a folder of your own"
        )
    return folder


def copy_program(root: Path, destination: Path, exclude: Iterable[Path] = ()) -> None:
    """Copy the project folder, without version control, caches, environments and `exclude`
    (absolute paths: the run folder, the reply cache, held-out tests during search)."""
    excluded = {path.resolve() for path in exclude}

    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = {name for name in names if name in IGNORED_DIRS or name.endswith((".pyc", ".pyo"))}
        return skipped | {name for name in names if (Path(folder) / name).resolve() in excluded}

    shutil.copytree(root, destination, ignore=ignore, symlinks=True)


def write_new(path: Path, data: bytes) -> None:
    """Create `path` and write `data`, never through a link: an existing entry is removed first
    (unlink does not follow links) and the file is created exclusively."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(descriptor, "wb") as stream:
        stream.write(data)


def read_regular(path: Path, max_bytes: int) -> bytes | None:
    """The content of `path` if it is a regular file (not a link, a FIFO or a device) of at most
    `max_bytes`; None otherwise. For files a variant could have planted."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        return stream.read(max_bytes + 1)[:max_bytes]


def remove_tree(path: Path) -> None:
    """Delete a folder a variant wrote in, however deep it nested its folders (shutil.rmtree
    recurses, and a variant can nest deeper than Python's recursion limit) and whatever it
    made read-only in it (as root that stops nothing; as a user it would keep the folder)."""
    try:
        _rmtree(str(path))
    except (RecursionError, OSError):
        subprocess.run(["rm", "-rf", "--one-file-system", "--", str(path)], check=False, capture_output=True)


def _rmtree(path: str) -> None:
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=lambda _, name, error: _writable_and_again(name, error))
    else:
        shutil.rmtree(path, onerror=lambda _, name, info: _writable_and_again(name, info[1]))


def _writable_and_again(name: str, error: BaseException) -> None:
    """shutil.rmtree's error handler: what it could not remove for want of permission is
    removed again once its folder (and it, if a folder: never through a link) is writable and
    readable for its owner. Anything else that is still there is an error."""
    if isinstance(error, FileNotFoundError):
        return
    if not isinstance(error, PermissionError):
        raise error
    changed = False
    for folder in (os.path.dirname(name), name):
        with contextlib.suppress(OSError):
            mode = os.lstat(folder).st_mode
            if stat.S_ISDIR(mode) and mode & stat.S_IRWXU != stat.S_IRWXU:
                os.chmod(folder, stat.S_IRWXU)
                changed = True
    if not changed:
        raise error  # not a question of modes (an immutable file, another owner's folder)
    if stat.S_ISDIR(os.lstat(name).st_mode):
        _rmtree(name)
    else:
        os.unlink(name)


def _unlink(path: Path) -> None:
    """Remove a file (or link), making its folder writable first if it has to."""
    try:
        path.unlink(missing_ok=True)
    except PermissionError:
        os.chmod(path.parent, stat.S_IRWXU)
        path.unlink(missing_ok=True)


def _empty_folder(path: Path) -> None:
    for entry in list(path.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            remove_tree(entry)
        else:
            entry.unlink(missing_ok=True)
