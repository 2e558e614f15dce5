"""The sandbox: a workspace per variant and a command runner with limits and isolation.

Every variant's code is hostile until proven otherwise: a mutation or a language model may
have written code that deletes files, reads secrets, opens sockets, forks, floods its
output or forges its own test results. Each evaluation gets a `Workspace`:

    <temporary folder>/      made by gi, never writable by the variant
        program/   a copy of the project with the variant's sources  (read-only inside)
        tools/     gi's own files: the pytest plugin, the workload script  (read-only inside)
        outputs/   what the command hands back: timings, coverage, return values  (writable)
        temporary/ HOME and TMPDIR  (writable)

gi writes only into folders the variant cannot write (program/ and tools/ are filled before
the first command runs) and reads back only regular files from outputs/, without following
links, after every process of the command is dead.

`Sandbox` runs a command in the workspace. Always: a new session and process group, a
wall-clock limit (the whole group is killed when it strikes), limits on address space, file
size and process count, stdout and stderr kept only as a bounded tail while they stream.
Where bubblewrap works (`isolation()` says), also: a user namespace with every capability
dropped and no nested namespaces, no network of any kind (a network namespace with only
loopback, so no host Unix socket either: the host's /run and /tmp are not mounted), its own
PID namespace (nothing it starts outlives it), and a file system that holds only the system
folders, the Python installation and the workspace: nothing of the home folder, nothing of
the user's project but the copy, all read-only but outputs/ and temporary/. As root, a
pids cgroup caps the process count (the kernel does not apply RLIMIT_NPROC to root), and a
command whose processes keep forking at the cap (a fork bomb: `FORK_BOMB_REFUSALS` refused
forks) is stopped at once: its spinning processes would otherwise starve the machine until
the wall-clock limit.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import hashlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gi.program import IGNORED_DIRS
from gi.results import ProcessOutcome

#: Environment variables passed through to sandboxed commands; everything else is dropped.
#: What gi keeps of a command's channel (the test report): far more than any honest report.
CHANNEL_BYTES = 8 * 1024 * 1024
_PASSED_ENV = ("LANG", "LC_ALL", "TZ", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
#: System folders mounted read-only inside the sandbox (those that exist on the host).
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: The few files of /etc the interpreter and its libraries read; the rest of /etc stays out.
_ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/alternatives")


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
    #: How much of stdout and of stderr is kept (the tail).
    output_kb: int = 256
    #: Further host folders the command may read (e.g. a package the project imports).
    read_only: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Isolation:
    """What a run's commands are isolated by: said at the start of every run and in summary.json."""

    sandboxed: bool
    description: str


@functools.cache
def _bubblewrap_problem() -> str | None:
    """Why bubblewrap cannot give the isolation we ask of it here, or None when it can."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    argv = ["bwrap", *_NAMESPACES, "--ro-bind", "/", "/", "--proc", "/proc", "--", "true"]
    try:
        probe = subprocess.run(argv, capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap does not start ({error})"
    if probe.returncode != 0:
        reason = probe.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"bubblewrap cannot make its namespaces here ({reason[-1] if reason else probe.returncode})"
    return None


_NAMESPACES = (
    "--unshare-user", "--disable-userns", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
    "--unshare-cgroup-try", "--hostname", "gi", "--cap-drop", "ALL", "--die-with-parent", "--new-session",
)  # fmt: skip


def bubblewrap_available() -> bool:
    """True if bubblewrap can make every namespace the sandbox uses."""
    return _bubblewrap_problem() is None


def isolation(limits: Limits) -> Isolation:
    """Which isolation commands get under `limits` on this machine, in one line."""
    bounds = f"{limits.memory_mb} MiB, {limits.processes} processes, files up to {limits.file_mb} MiB"
    if not limits.isolate:
        return Isolation(False, f"NO SANDBOX (evaluation.isolate = false): process limits only ({bounds})")
    problem = _bubblewrap_problem()
    if problem is not None:
        return Isolation(False, f"NO SANDBOX ({problem}): process limits only ({bounds})")
    return Isolation(
        True,
        "bubblewrap: user namespace without capabilities, no network, own PID namespace, only system"
        f" folders, the Python installation and the workspace visible ({bounds})",
    )


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


# --- running a command ---------------------------------------------------------------------------


class _Tail:
    """Keeps the last `limit` bytes of a stream read on a thread (or, with `head`, the first),
    and a digest of all of it; the rest is read and dropped, so a flood costs gi no memory."""

    def __init__(self, stream: int, limit: int, *, head: bool = False) -> None:
        self.limit = limit
        self.head = head
        self.data = bytearray()
        self.total = 0
        self.digest = hashlib.sha256()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: int) -> None:
        with os.fdopen(stream, "rb", buffering=0) as source:
            while chunk := source.read(65536):
                self.total += len(chunk)
                self.digest.update(chunk)
                if self.head:
                    self.data += chunk[: max(0, self.limit - len(self.data))]
                    continue
                self.data += chunk
                if len(self.data) > 2 * self.limit:
                    del self.data[: len(self.data) - self.limit]

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def kept(self) -> bytes:
        return bytes(self.data[: self.limit] if self.head else self.data[-self.limit :])

    def text(self) -> str:
        return self.kept().decode("utf-8", "replace")

    @property
    def truncated(self) -> bool:
        return self.total > self.limit


def _python_paths() -> list[Path]:
    """The Python installation the commands run: prefixes of the interpreter and the venv."""
    found: list[Path] = []
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        path = Path(prefix).resolve()
        if not any(path == other or path.is_relative_to(other) for other in map(Path, _SYSTEM)):
            found.append(path)
    return sorted(set(found))


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
#: Seconds between two looks at a running command's refused forks (here and in gi.warm).
WATCH_INTERVAL = 0.05


def stops_fork_bombs() -> bool:
    """Whether gi can tell a fork bomb here: it reads refused forks from a pids cgroup of its
    own, which it makes as root."""
    return "pids" in _Cgroups.parents()


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
        """Controller -> (the folder to make cgroups in, the limit file), for those that work."""
        usable: dict[str, tuple[Path, str]] = {}
        if os.geteuid() != 0:
            return usable
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


class Sandbox:
    """Runs commands in one `Workspace` under `Limits` (a `CommandRunner`)."""

    def __init__(self, limits: Limits, space: Workspace) -> None:
        self.limits = limits
        self.space = space
        self.isolated = isolation(limits).sandboxed

    @property
    def workdir(self) -> Path:
        return self.space.program

    @property
    def tools(self) -> Path:
        return self.space.tools

    @property
    def outputs(self) -> Path:
        return self.space.outputs

    def install_tool(self, name: str, text: str) -> Path:
        """Put one of gi's files into tools/ (read-only to the command) and return its path."""
        path = self.space.tools / name
        write_new(path, text.encode("utf-8"))
        return path

    def read_output(self, name: str, max_bytes: int = 64 * 1024 * 1024) -> bytes | None:
        """A file the command left in outputs/: a regular file only, never through a link."""
        return read_regular(self.space.outputs / name, max_bytes)

    def clear_output(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.space.outputs / name).unlink()

    def _limited(self, argv: Sequence[str], cgroups: _Cgroups) -> list[str]:
        memory = self.limits.memory_mb * 1024 * 1024
        size = self.limits.file_mb * 1024 * 1024
        # Without a user namespace, RLIMIT_NPROC counts every process of the user, not just ours.
        processes = self.limits.processes + (0 if self.isolated else _processes_of_this_user())
        limits = [f"--as={memory}:{memory}", f"--fsize={size}:{size}", f"--nproc={processes}"]
        join = cgroups.join()
        if shutil.which("prlimit"):
            command = ["prlimit", *limits, "--", *argv]
        else:  # only the address space then: `ulimit` differs between shells for the rest
            command = ["/bin/sh", "-c", f'ulimit -v {memory // 1024} && exec "$@"', "gi-limit", *argv]
        return ["/bin/sh", "-c", f'{join}exec "$@"', "gi-sandbox", *command]

    def _wrap(self, argv: Sequence[str], cwd: Path) -> list[str]:
        if not self.isolated:
            return [sys.executable, "-I", "-S", "-c", _REAPER, str(os.getpid()), *argv]
        # The kernel lets uid 0 write sysctls whatever its capabilities, and uid 0 in the sandbox
        # is root outside: /proc/sys (and the other files of /proc that change the host) stay
        # read-only. /tmp is RAM: its size is capped like a file.
        mounts: list[str] = ["--dev", "/dev", "--proc", "/proc"]
        for host in ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"):
            if os.path.exists(host):
                mounts += ["--ro-bind", host, host]
        mounts += ["--size", str(self.limits.file_mb * 1024 * 1024), "--tmpfs", "/tmp"]
        for folder in _SYSTEM:
            path = Path(folder)
            if path.is_symlink():
                mounts += ["--symlink", os.readlink(path), folder]
            elif path.exists():
                mounts += ["--ro-bind", folder, folder]
        for file in _ETC:
            if os.path.exists(file):
                mounts += ["--ro-bind", file, file]
        passwd = self.install_tool("passwd", f"gi:x:{os.getuid()}:{os.getgid()}:gi:{self.space.temporary}:/bin/sh\n")
        group = self.install_tool("group", f"gi:x:{os.getgid()}:\n")
        mounts += ["--ro-bind", str(passwd), "/etc/passwd", "--ro-bind", str(group), "/etc/group"]
        for path in (*_python_paths(), *self.limits.read_only):
            mounts += ["--ro-bind", str(path), str(path)]
        space = self.space
        mounts += ["--ro-bind", str(space.program), str(space.program), "--ro-bind", str(space.tools), str(space.tools)]
        mounts += ["--bind", str(space.outputs), str(space.outputs)]
        # HOME and TMPDIR: RAM of a capped size that dies with the command, so neither the
        # disk nor the next command sees what this one left there.
        mounts += ["--size", str(self.limits.file_mb * 1024 * 1024), "--tmpfs", str(space.temporary)]
        return ["bwrap", *_NAMESPACES, *mounts, "--chdir", str(cwd), "--", *argv]

    def environment(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        """The command's whole environment: a few locale variables and ours, nothing else."""
        env = {name: os.environ[name] for name in _PASSED_ENV if name in os.environ}
        temporary = str(self.space.temporary)
        env.update(
            PATH=os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
            HOME=temporary,
            TMPDIR=temporary,
            USER="gi",
            LOGNAME="gi",
            PYTHONDONTWRITEBYTECODE="1",
            PYTHONHASHSEED="0",
            PYTHONNOUSERSITE="1",
        )
        env.update(extra or {})
        return env

    def __call__(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        stdin: bytes = b"",
        channel: bool = False,
    ) -> ProcessOutcome:
        """Run `argv` in the workspace's program copy (or `cwd`) within the limits.

        `stdin` is written to the command's standard input before it starts (it must fit a pipe
        buffer). With `channel`, the command gets one more pipe, whose descriptor number is in
        GI_CHANNEL_FD; what it writes there comes back as `ProcessOutcome.channel`.
        """
        cwd = cwd or self.space.program
        # Nothing a command left in temporary/ reaches the next one: no result cached across
        # the test run, the behaviour check and the timing workers.
        _empty_folder(self.space.temporary)
        run_env = self.environment(env)
        limit = self.limits.output_kb * 1024
        cap = _Cgroups(self.limits)
        read_in, write_in = os.pipe()
        os.write(write_in, stdin)
        os.close(write_in)
        read_out, write_out = os.pipe()
        read_err, write_err = os.pipe()
        read_channel, write_channel = os.pipe() if channel else (-1, -1)
        if channel:
            run_env["GI_CHANNEL_FD"] = str(write_channel)
        started = time.perf_counter()
        try:
            process = subprocess.Popen(
                self._limited(self._wrap(argv, cwd), cap),
                cwd=cwd,
                env=run_env,
                stdin=read_in,
                stdout=write_out,
                stderr=write_err,
                pass_fds=(write_channel,) if channel else (),
                start_new_session=True,
            )
        finally:
            for descriptor in (read_in, write_out, write_err, write_channel):
                if descriptor >= 0:
                    os.close(descriptor)
        out, err = _Tail(read_out, limit), _Tail(read_err, limit)
        report = _Tail(read_channel, CHANNEL_BYTES, head=True) if channel else None
        timed_out, bomb = False, ""
        try:
            timed_out, bomb = _watch(process, timeout, cap)
        finally:
            self._stop(process)
            for tail in (out, err, report):
                if tail is not None:
                    tail.join(timeout=5)
            cap.close()
        return ProcessOutcome(
            returncode=process.returncode if process.returncode is not None else -9,
            stdout=out.text(),
            stderr=err.text() + (f"\n{bomb}\n" if bomb else ""),
            seconds=time.perf_counter() - started,
            timed_out=timed_out,
            channel=report.kept() if report is not None else b"",
            channel_overflow=report is not None and report.truncated,
            stdout_digest=f"{out.digest.hexdigest()}:{out.total}" if out.truncated else "",
        )

    def start(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None) -> LiveCommand:
        """Start a long-lived command (a warm worker) within the limits; it talks to gi over two
        pipes, whose descriptor numbers it finds in GI_REQUEST_FD and GI_RESPONSE_FD. Its own
        stdout and stderr are drained and dropped but for their tails."""
        run_env = self.environment(env)
        cap = _Cgroups(self.limits)
        request_read, request_write = os.pipe()
        response_read, response_write = os.pipe()
        read_out, write_out = os.pipe()
        read_err, write_err = os.pipe()
        run_env.update(GI_REQUEST_FD=str(request_read), GI_RESPONSE_FD=str(response_write))
        try:
            process = subprocess.Popen(
                self._limited(self._wrap(argv, self.space.program), cap),
                cwd=self.space.program,
                env=run_env,
                stdin=subprocess.DEVNULL,
                stdout=write_out,
                stderr=write_err,
                pass_fds=(request_read, response_write),
                start_new_session=True,
            )
        except BaseException:
            for descriptor in (request_write, response_read, read_out, read_err):
                os.close(descriptor)
            cap.close()
            raise
        finally:
            for descriptor in (request_read, response_write, write_out, write_err):
                os.close(descriptor)
        limit = self.limits.output_kb * 1024
        return LiveCommand(
            self, process, cap, request_write, response_read, _Tail(read_out, limit), _Tail(read_err, limit)
        )

    def _stop(self, process: subprocess.Popen[bytes]) -> None:
        """Kill everything the command started, and reap it.

        In the sandbox, killing the process group takes bubblewrap and with it the PID
        namespace. Without it, the reaper first kills what left the group (daemons), then the
        group goes.
        """
        if not self.isolated and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _watch(process: subprocess.Popen[bytes], timeout: float, cap: _Cgroups) -> tuple[bool, str]:
    """Wait for the command to end within `timeout` seconds, looking at its refused forks as
    it runs: (whether it ran out of time, why it was a fork bomb or ""). Either way it is still
    running, for the caller to stop."""
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        try:
            process.wait(timeout=max(0.0, min(remaining, WATCH_INTERVAL)))
            return False, ""
        except subprocess.TimeoutExpired:
            bomb = cap.fork_bomb()
            if bomb:
                return False, bomb
            if remaining <= 0:
                return True, ""


@dataclass
class LiveCommand:
    """A long-lived command started by `Sandbox.start`: its pipes, and how to stop it."""

    sandbox: Sandbox
    process: subprocess.Popen[bytes]
    cgroups: _Cgroups
    requests: int
    responses: int
    stdout: _Tail
    stderr: _Tail

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        """Kill the command and everything it started; close the pipes."""
        for descriptor in (self.requests, self.responses):
            with contextlib.suppress(OSError):
                os.close(descriptor)
        self.sandbox._stop(self.process)
        for tail in (self.stdout, self.stderr):
            tail.join(timeout=5)
        self.cgroups.close()


# --- without bubblewrap: no process may outlive its command ----------------------------------------

#: Runs a command as its child and, when it ends, when gi sends SIGTERM or when gi (the process
#: whose id comes first in its arguments) dies, kills every process the command left behind:
#: as a child subreaper, it inherits the orphans, daemons included (Linux). gi's death is seen
#: by its parent changing, not by PR_SET_PDEATHSIG, which fires when the *thread* that
#: started it ends.
_REAPER = """
import ctypes, os, signal, sys, threading, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)
owner = int(sys.argv[1])
child = os.fork()
if child == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
def descendants():
    found = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as stream:
                found.update(int(pid) for pid in stream.read().split())
        except OSError:
            pass
    return found
def finish(*_):
    for _ in range(100):
        left = descendants()
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in left:
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass
    os._exit(status)
def orphaned():
    while os.getppid() == owner:
        time.sleep(0.25)
    finish()
status = 137
signal.signal(signal.SIGTERM, finish)
threading.Thread(target=orphaned, daemon=True).start()
_, code = os.waitpid(child, 0)
status = os.waitstatus_to_exitcode(code)
status = 128 - status if status < 0 else status
finish()
"""

_PR_SET_DUMPABLE = 4


def hide_environment() -> None:
    """Make gi's /proc entries (its environment, with the API key) unreadable to other processes
    of the same user, for runs without a sandbox (root can still read them; Linux only)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
