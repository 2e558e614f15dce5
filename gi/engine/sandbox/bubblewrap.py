"""Isolation by bubblewrap: whether it works here, and the arguments that give a command a
user namespace without capabilities, no network, its own PID namespace and a file system of
only the system folders, the Python installation and the workspace."""

from __future__ import annotations

import functools
import importlib.util
import marshal
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gi.engine.sandbox.finisher import FINISHER, FINISHER_NAME, finisher_command
from gi.engine.sandbox.limits import Limits, memory_held_together
from gi.engine.sandbox.workspace import Workspace, install_tool
from gi.model.program import compiler_warnings_ignored

#: System folders mounted read-only inside the sandbox (those that exist on the host).
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: The few files of /etc the interpreter and its libraries read; the rest of /etc stays out.
_ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/alternatives")


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
    memory = "in all" if memory_held_together() else "a process"
    bounds = (f"{limits.memory_mb} MiB {memory}, {limits.processes} processes, files up to {limits.file_mb} MiB,"
              f" {limits.disk_mb} MiB and {limits.disk_files} files in each folder it may write")  # fmt: skip
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


def _python_paths() -> list[Path]:
    """The Python installation the commands run: prefixes of the interpreter and the venv."""
    found: list[Path] = []
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        path = Path(prefix).resolve()
        if not any(path == other or path.is_relative_to(other) for other in map(Path, _SYSTEM)):
            found.append(path)
    return sorted(set(found))


#: The files of a project a test run reads to decide what runs and how: never writable, even
#: where the tests may write beside themselves.
VERDICT_NAMES = frozenset({"conftest.py", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"})


def is_verdict_file(name: str) -> bool:
    """A test module, a conftest.py or a file that holds pytest's settings."""
    return name in VERDICT_NAMES or (name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")))


def verdict_files(folder: Path) -> list[Path]:
    """The regular files under `folder` a test run's verdict depends on (see `is_verdict_file`)."""
    found = []
    for parent, _, names in os.walk(folder):
        found += [
            Path(parent) / name for name in names if is_verdict_file(name) and not os.path.islink(Path(parent) / name)
        ]
    return found


#: Files a run may not add to a writable copy: what pytest or the interpreter would load
#: (a conftest.py, settings, compiled code, path and start-up hooks). An honest run writes no
#: cache (-p no:cacheprovider) and no bytecode (PYTHONDONTWRITEBYTECODE) but that of a Python
#: its tests start with an environment of their own (`bytecode_of_its_source`).
_PLANTABLE = (".pyc", ".pth")
_PLANTABLE_NAMES = VERDICT_NAMES | {"sitecustomize.py", "usercustomize.py", "__init__.py"}


def bytecode_of_its_source(folder: Path, file: str) -> bool:
    """Whether `file` (relative to `folder`) is byte for byte the bytecode cache this interpreter
    writes of the source beside it: what a Python the tests start with an environment of their
    own (no PYTHONDONTWRITEBYTECODE) leaves as it imports the project. Loading it runs that
    source's code, so it plants nothing. The copy is mounted where it lies on the host, so the
    file names compiled into the code are the same. (The file is compared, never unmarshalled:
    marshal is not safe against data a variant crafted.)"""
    cache = Path(folder, file)
    stem, _, tag = cache.name.partition(".")
    source = cache.parent.parent / f"{stem}.py"
    if cache.parent.name != "__pycache__" or tag != f"{sys.implementation.cache_tag}.pyc":
        return False
    try:
        if cache.is_symlink() or source.is_symlink():
            return False
        status = source.stat()
        with compiler_warnings_ignored():
            code = compile(source.read_bytes(), str(source), "exec", dont_inherit=True)
        written = cache.read_bytes()
    except (OSError, SyntaxError, ValueError):
        return False
    stamp = [int(status.st_mtime) & 0xFFFFFFFF, status.st_size & 0xFFFFFFFF]
    header = importlib.util.MAGIC_NUMBER + bytes(4) + b"".join(n.to_bytes(4, "little") for n in stamp)  # flags 0
    return written == header + marshal.dumps(code)


def loadable_files(folder: Path) -> set[str]:
    """The files under `folder` (relative) that pytest or the interpreter would load by name."""
    found = set()
    for parent, _, names in os.walk(folder):
        for name in names:
            if name in _PLANTABLE_NAMES or name.endswith(_PLANTABLE) or is_verdict_file(name):
                found.add((Path(parent) / name).relative_to(folder).as_posix())
    return found


def bubblewrap_command(
    argv: Sequence[str], cwd: Path, limits: Limits, space: Workspace, *, outputs: int | None = None
) -> list[str]:
    """`argv` run by bubblewrap in `space`, from `cwd`: the namespaces, and mounts of only the
    system folders, the Python installation, `limits.read_only` and the workspace.

    Every folder the command may write (outputs/, TMPDIR and HOME, /tmp, /dev/shm) is RAM of
    `limits.disk_mb` at most, and /dev is otherwise read-only: nothing reaches the disk, and
    nothing outlives the command. With `outputs` (a descriptor of the host's outputs/ folder),
    the finisher runs the command and copies what it left in outputs/ back (gi.engine.sandbox.
    finisher); without (a warm worker), outputs/ is the command's alone."""
    size = str(limits.disk_mb * 1024 * 1024)
    # The kernel lets uid 0 write sysctls whatever its capabilities, and uid 0 in the sandbox
    # is root outside: /proc/sys (and the other files of /proc that change the host) stay
    # read-only. A POSIX message queue lives in the IPC namespace: its own mount lets the warm
    # worker find and remove those a variant leaves.
    mounts: list[str] = ["--dev", "/dev", "--size", size, "--tmpfs", "/dev/shm", "--mqueue", "/dev/mqueue",
                         "--remount-ro", "/dev", "--proc", "/proc"]  # fmt: skip
    for host in ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"):
        if os.path.exists(host):
            mounts += ["--ro-bind", host, host]
    mounts += ["--size", size, "--tmpfs", "/tmp"]
    for folder in _SYSTEM:
        path = Path(folder)
        if path.is_symlink():
            mounts += ["--symlink", os.readlink(path), folder]
        elif path.exists():
            mounts += ["--ro-bind", folder, folder]
    for file in _ETC:
        if os.path.exists(file):
            mounts += ["--ro-bind", file, file]
    passwd = install_tool(space, "passwd", f"gi:x:{os.getuid()}:{os.getgid()}:gi:{space.temporary}:/bin/sh\n")
    group = install_tool(space, "group", f"gi:x:{os.getgid()}:\n")
    mounts += ["--ro-bind", str(passwd), "/etc/passwd", "--ro-bind", str(group), "/etc/group"]
    for path in (*_python_paths(), *limits.read_only):
        mounts += ["--ro-bind", str(path), str(path)]
    if limits.writable_program:
        # A cold copy serves one variant: its tests may write beside themselves, but never the
        # files the verdict reads. It is on disk, so the runner checks what it grows by
        # (`disk_mb`, as without bubblewrap).
        mounts += ["--bind", str(space.program), str(space.program)]
        for verdict in verdict_files(space.program):
            mounts += ["--ro-bind", str(verdict), str(verdict)]
    else:
        mounts += ["--ro-bind", str(space.program), str(space.program)]
    mounts += ["--ro-bind", str(space.tools), str(space.tools)]
    # outputs/, HOME and TMPDIR: RAM of a capped size that dies with the command, so neither
    # the disk nor the next command sees what this one left there.
    mounts += ["--size", size, "--tmpfs", str(space.outputs), "--size", size, "--tmpfs", str(space.temporary)]
    if outputs is not None:
        script = install_tool(space, FINISHER_NAME, FINISHER)
        counted = [str(space.outputs), str(space.temporary), "/tmp", "/dev/shm"]
        argv = finisher_command(sys.executable, script, space.outputs, outputs, int(size), limits.disk_files,
                                counted, argv)  # fmt: skip
    return ["bwrap", *_NAMESPACES, *mounts, "--chdir", str(cwd), "--", *argv]
