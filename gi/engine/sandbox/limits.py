"""The limits a command runs under: `Limits`, and the cgroups that hold them as root (a pids
cgroup caps the process count; a fork bomb at the cap is stopped at once), removed when their
owner died."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gi.config import Config

import contextlib
import fcntl
import functools
import os
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from gi.engine.sandbox.claims import _lock_folder


@dataclass(frozen=True)
class Limits:
    """Limits for every command a variant runs."""

    memory_mb: int = 4096
    #: Use bubblewrap where it works (see `isolation`).
    isolate: bool = True
    #: The most processes (threads included) the command may have at once.
    processes: int = 256
    #: The largest file the command may write.
    file_mb: int = 1024
    #: The most each folder the command may write holds (outputs/, TMPDIR and HOME, /tmp,
    #: /dev/shm: RAM in bubblewrap; without it, outputs/ and TMPDIR together, checked as it runs).
    disk_mb: int = 512
    #: The most files and folders a command may add to each folder it may write (in bubblewrap,
    #: counted by the finisher; without it, in outputs/ and TMPDIR together, as it runs).
    disk_files: int = 100_000
    #: How much of stdout and of stderr is kept (the tail).
    output_kb: int = 256
    #: Further host folders the command may read (e.g. a package the project imports).
    read_only: tuple[Path, ...] = ()
    #: Let the command write in its copy of the project (tests that write where they stand),
    #: but for what the verdict reads (`gi.fitness.tests.VERDICT_FILES`): a workspace used once.
    writable_program: bool = False


@functools.cache
def _processes_of_this_user() -> int:
    """How many processes this user has now (counted once per gi process)."""
    count = 0
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and entry.stat().st_uid == os.getuid():
                count += 1
    return count


def _own_cgroups() -> dict[str, Path]:
    """This process's cgroup folder per controller ("pids", "memory"; v2: "" for all), from
    /proc/self/cgroup and the cgroup mounts."""
    folders: dict[str, Path] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return folders
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            mount = Path("/sys/fs/cgroup") / controller if controller else Path("/sys/fs/cgroup")
            if controller in ("pids", "memory", "") and (mount / path.lstrip("/")).is_dir():
                folders[controller] = mount / path.lstrip("/")
    return folders


#: Per controller, the files that set a limit: cgroup v1 first, then v2.
_LIMIT_FILES = {"pids": ("pids.max",), "memory": ("memory.limit_in_bytes", "memory.max")}
#: Forks the process cap refuses a command before gi stops it as a fork bomb. A program that
#: meets the cap and stops (or backs off) stays far below; a bomb passes it in milliseconds.
FORK_BOMB_REFUSALS = 1000
#: Seconds between two looks at a running command's refused forks (here and in gi.engine.warm).
WATCH_INTERVAL = 0.05


def stops_fork_bombs() -> bool:
    """Whether gi can tell a fork bomb here: it reads refused forks from a pids cgroup of its
    own, which it makes as root (or in a cgroup delegated to it)."""
    return "pids" in _Cgroups.parents()


def memory_held_together() -> bool:
    """Whether `Limits.memory_mb` holds a command's processes together (a memory cgroup of the
    command's), not only each of them (RLIMIT_AS)."""
    return "memory" in _Cgroups.parents()


def memory_warning(limits: Limits) -> str:
    """One line for the start of a run where memory_mb binds each process alone, or ""."""
    if memory_held_together():
        return ""
    return (f"evaluation.memory_mb = {limits.memory_mb} limits each process of a command alone, not the command's"
            " processes together: gi may make no memory cgroup here (it can as root, or where a cgroup v2 is"
            " delegated to this user), so a variant that starts many processes may use more")  # fmt: skip


#: An empty gi cgroup at least this old, whose lock is free, was left by a killed gi process.
STALE_CGROUP_SECONDS = 60.0


def remove_stale_cgroups(min_age: float = STALE_CGROUP_SECONDS) -> tuple[Path, ...]:
    """Remove the cgroups a killed gi process left behind: the `gi-*` folders in the folders gi
    makes cgroups in that are older than `min_age` seconds, not locked by a live owner (each
    command's cgroups are locked as they are made) and hold no process (the kernel refuses to
    remove one that does). Returns what it removed."""
    removed: list[Path] = []
    now = time.time()
    for parent, _ in _Cgroups.parents().values():
        try:
            entries = [entry for entry in parent.iterdir() if entry.name.startswith("gi-")]
        except OSError:
            continue
        for entry in entries:
            try:
                descriptor = os.open(entry, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if now - os.fstat(descriptor).st_mtime < min_age:
                    continue  # just made: its owner may not have locked it yet
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                entry.rmdir()
                removed.append(entry)
            except OSError:
                continue  # locked by its owner, or it holds processes
            finally:
                os.close(descriptor)
    return tuple(removed)


#: The first command of a process sweeps (later ones would find nothing new of a killed gi).
_sweep_cgroups = functools.cache(remove_stale_cgroups)


class _Cgroups:
    """A pids and a memory cgroup per command, where gi may make them (as root, under its own
    cgroups): they cap the process count (the kernel's RLIMIT_NPROC does not bind root) and
    the memory of all the command's processes together, RAM-backed files included (RLIMIT_AS
    is per process). Every process in them is killed when the command ends."""

    @staticmethod
    @functools.cache
    def parents() -> dict[str, tuple[Path, str]]:
        """Controller -> (the folder to make cgroups in, the limit file), for those that work:
        as root, or as any user where the cgroup this process is in was delegated to it (cgroup
        v2: a systemd user session's, or a container's), found by making one."""
        usable: dict[str, tuple[Path, str]] = {}
        own = _own_cgroups()
        for controller, files in _LIMIT_FILES.items():
            parent = own.get(controller) or own.get("")
            if parent is None:
                continue
            probe = parent / f"gi-probe-{os.getpid()}"
            try:
                probe.mkdir()
                found = next((name for name in files if (probe / name).exists()), None)
                probe.rmdir()
            except OSError:
                continue
            if found is not None:
                usable[controller] = (parent, found)
        return usable

    def __init__(self, limits: Limits) -> None:
        self.folders: list[Path] = []
        self.processes = limits.processes
        self._pids: Path | None = None
        self._claims: list[int] = []
        values = {"pids": limits.processes, "memory": limits.memory_mb * 1024 * 1024}
        _sweep_cgroups()
        for controller, (parent, name) in self.parents().items():
            folder = Path(tempfile.mkdtemp(prefix="gi-", dir=parent))
            claim = _lock_folder(folder)  # unlocked, the age rule of remove_stale_cgroups still holds
            if claim is not None:
                self._claims.append(claim)
            try:
                (folder / name).write_text(str(values[controller]))
                self.folders.append(folder)
            except OSError:  # no limit then (or a sweeper took it: its clock jumped)
                with contextlib.suppress(OSError):
                    folder.rmdir()
                continue
            if controller == "pids":
                self._pids = folder

    def refused_forks(self) -> int:
        """How many forks the process cap has refused the command (0 without a pids cgroup)."""
        if self._pids is None:
            return 0
        try:
            events = (self._pids / "pids.events").read_text().split()
        except OSError:
            return 0
        counts = dict(zip(events[::2], events[1::2], strict=False))
        return int(counts.get("max", 0))

    def fork_bomb(self, before: int = 0) -> str:
        """Why the command is a fork bomb (its refused forks since `before`), or ""."""
        refused = self.refused_forks() - before
        if refused < FORK_BOMB_REFUSALS:
            return ""
        return (f"gi stopped the command: its processes kept forking at the cap of {self.processes}"
                f" ({refused} forks refused), a fork bomb")  # fmt: skip

    def join(self) -> str:
        """Shell words that move the shell into the cgroups before it runs the command."""
        return "".join(f'echo $$ > "{folder / "cgroup.procs"}" && ' for folder in self.folders)

    def close(self) -> None:
        """Kill whatever is still in the cgroups (what escaped the process group: daemons, or
        everything, when the reaper itself was killed) and remove them."""
        for folder in self.folders:
            for _ in range(100):
                try:
                    pids = [int(pid) for pid in (folder / "cgroup.procs").read_text().split()]
                except OSError:
                    pids = []
                if not pids:
                    break
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                time.sleep(0.01)
            for _ in range(100):  # the last processes may take a moment to leave after SIGKILL
                try:
                    folder.rmdir()
                    break
                except OSError:
                    time.sleep(0.01)
        for claim in self._claims:
            os.close(claim)
        self._claims.clear()


def sandbox_limits(config: Config) -> Limits:
    """The limits every command of a run gets, from the [evaluation] section."""
    section = config.evaluation
    return Limits(
        memory_mb=section.memory_mb,
        isolate=section.isolate,
        processes=section.processes,
        file_mb=section.file_mb,
        disk_mb=section.disk_mb,
        disk_files=section.disk_files,
        read_only=tuple(config.resolve(path) for path in section.read_only),
    )
