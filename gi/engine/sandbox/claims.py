"""What a killed gi left behind: workspaces are claimed by their owner (an flock and a mark
naming the folder), and the next gi process removes those whose owner died."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
from pathlib import Path

from gi.engine.sandbox.files import _unlink, read_regular, remove_tree, write_new

# --- what a killed gi left behind ----------------------------------------------------------------

#: The file in a workspace that says its owner holds the lock on the folder (an flock, held
#: until the folder is removed, dropped by the kernel when the owner dies). It names the
#: folder (device and inode), so a copy of a workspace is no workspace; it is removed last.
CLAIMED = ".gi-claimed"


def _lock_folder(folder: Path) -> int | None:
    """A descriptor of the new `folder` holding an exclusive flock on it, for as long as this
    process keeps it open; None where locks fail (or someone else already holds one)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(descriptor)
        return None
    return descriptor


def _identity(descriptor: int) -> bytes:
    info = os.fstat(descriptor)
    return f"{info.st_dev}:{info.st_ino}".encode()


def _claim(base: Path) -> int | None:
    """Lock a new workspace folder, then mark it claimed. The mark comes second, so a marked
    folder whose lock is free has no owner. None where the file system has no locks: the
    folder stays unclaimed, never swept."""
    descriptor = _lock_folder(base)
    if descriptor is not None:
        try:
            write_new(base / CLAIMED, _identity(descriptor))
        except OSError:
            os.close(descriptor)
            return None
    return descriptor


def _remove_workspace(base: Path) -> bool:
    """Remove a workspace folder, its claim mark last: a gi killed halfway through leaves a
    folder the next one still knows as a workspace. Whether it is gone."""
    try:
        entries = [entry for entry in os.scandir(base) if entry.name != CLAIMED]
    except OSError:
        entries = []
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                remove_tree(Path(entry.path))
            else:
                _unlink(Path(entry.path))
    with contextlib.suppress(OSError):
        if os.listdir(base) in ([CLAIMED], []):  # else it stays marked, for the next sweep
            _unlink(base / CLAIMED)
            base.rmdir()
    return not os.path.lexists(base)


def remove_stale_workspaces(parent: Path) -> tuple[Path, ...]:
    """Remove the workspaces in `parent` whose gi process died without removing them (a kill -9,
    a lost machine): this user's `gi-*` folders whose claim mark names them and whose lock is
    free. Returns what it removed. Folders it cannot open, other users', copies and unclaimed
    ones (being made, or from an older gi) are left alone."""
    removed: list[Path] = []
    try:
        entries = [entry for entry in parent.iterdir() if entry.name.startswith("gi-")]
    except OSError:
        return ()
    for entry in entries:
        try:
            descriptor = os.open(entry, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            if os.fstat(descriptor).st_uid != os.geteuid():
                continue
            if read_regular(entry / CLAIMED, 64) != _identity(descriptor):
                continue  # unclaimed, a copy, or swapped for another folder
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if not os.path.samestat(os.lstat(entry), os.fstat(descriptor)):
                continue
        except OSError:
            continue  # its owner is alive, or it went meanwhile
        else:
            if _remove_workspace(entry):
                removed.append(entry)
        finally:
            os.close(descriptor)
    return tuple(removed)


#: A process's first workspace in a folder sweeps it: a killed gi's leftovers are all there by then.
_sweep_workspaces = functools.cache(remove_stale_workspaces)
