"""What gi's warm test worker (warm_worker.py) does between two children so that the next
variant finds nothing of the last: kill and reap every process the child left (`reap_everything`),
empty every folder a variant may write (`empty`), and remove the System V objects of the
sandbox's IPC namespace (`remove_ipc`) and the keys of its keyrings (`clear_keyrings`); and what
it watches of a child's end and of its folders meanwhile (`ended`, `files_in`). Installed
beside the worker as gi_warm_cleaning.py; only the standard library.

A variant is free to make this hard: processes that fork anew as each is killed, folders nested
deeper than Python's recursion limit and than the longest path the kernel takes, folders it made
unreadable. Each of these is handled here without recursion and without a path longer than one
name.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import re
import resource
import select
import signal
import stat
import sys
import time

#: How a folder is opened to be emptied: never through a link.
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


#: Seconds `reap_everything` may take before the worker gives up settling a run (and ends, for
#: gi to start another).
REAP_SECONDS = 10.0


def descendants() -> set[int]:
    """The processes whose parent is this one (the worker is their subreaper: every process a
    child left behind becomes its own)."""
    found: set[int] = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as stream:
                found.update(int(pid) for pid in stream.read().split())
        except OSError:
            pass
    return found


def reap_everything(own_pid_namespace: bool, seconds: float = REAP_SECONDS, spare: int | None = None) -> bool:
    """Kill and reap every process the child left, and the child itself if it has not been
    reaped, but the worker's `spare` child (warm_spare.py); whether all were gone within
    `seconds`.

    In a PID namespace of the worker's own (the sandbox's, where the worker's parent is the
    namespace's init and nothing else of gi's runs), one signal reaches every process but the
    init and the worker at once: a chain that forks a new process as each of its own is killed
    cannot outrun it, as it outran the rounds of killing the children found one by one. With a
    spare, that signal stops them all, and every process of the namespace but those three is
    killed while the spare too is stopped (none can fork meanwhile); then the spare goes on. No
    wait blocks on one
    process: a child held by a tracer among its own processes ends only once the tracer is killed
    too, and the worker inherits the tracer only as the child ends."""
    if own_pid_namespace and os.getppid() == 1:
        with contextlib.suppress(OSError):
            os.kill(-1, signal.SIGKILL if spare is None else signal.SIGSTOP)
        if spare is not None:  # every process but the spare killed while it too is stopped
            kept = {1, os.getpid(), spare}
            for name in _names("/proc"):
                if name.isdigit() and int(name) not in kept:
                    with contextlib.suppress(OSError):
                        os.kill(int(name), signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.kill(spare, signal.SIGCONT)
    deadline = time.monotonic() + seconds
    while left := descendants() - {spare}:
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in left:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        _wait_for_one(left, min(remaining, ROUND_SECONDS))
    return True


#: The limits a process runs with (`resources`).
_LIMITS = [getattr(resource, name) for name in sorted(dir(resource)) if name.startswith("RLIMIT_")]
#: ioprio_get(2) by machine, and whose priority it reads.
_IOPRIO_GET = {"x86_64": 252, "aarch64": 31, "riscv64": 31}.get(platform.machine()) if sys.maxsize > 2**32 else None
IOPRIO_WHO_PROCESS = 1


def resources(pid: int = 0) -> tuple[object, ...]:
    """What a process may run with that another process of the same user can lower for it: its
    nice value, scheduling policy, I/O priority (on the machines whose ioprio_get(2) gi knows),
    the CPUs it may use and its limits. A variant's process could lower them for the worker or
    its spare, and so for the variants after it."""
    found: list[object] = []
    with contextlib.suppress(OSError, AttributeError):
        if _IOPRIO_GET is not None:
            found.append(_syscall(_IOPRIO_GET, IOPRIO_WHO_PROCESS, pid))
        found.append(os.getpriority(os.PRIO_PROCESS, pid))
        found.append((os.sched_getscheduler(pid), os.sched_getparam(pid).sched_priority))
        found.append(sorted(os.sched_getaffinity(pid)))
        found.extend(resource.prlimit(pid, limit) for limit in _LIMITS)
    return tuple(found)


def ended(pid: int, seconds: float) -> int | None:
    """The exit code of the child `pid` once it has ended, within `seconds`; None if it has not
    (or was reaped already)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            done, code = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return os.waitstatus_to_exitcode(code)
        if time.monotonic() > deadline:
            return None
        time.sleep(0.0005)


#: Seconds the worker waits for a child it killed, or whose pipes all closed, to end before it
#: kills every process of the variant's (one may hold the child's end).
END_SECONDS = 2.0


#: The longest wait for one of the processes killed before they are looked for again (a chain
#: outside a PID namespace of the worker's own forks anew as each is killed).
ROUND_SECONDS = 0.05


def _wait_for_one(pids: set[int], seconds: float) -> None:
    """Wait until one of `pids` has ended, for at most `seconds`: on their pidfds, so the wait
    ends as the kernel has freed one; not at all where one is gone already (reaped since it was
    found), and a short sleep where there are no pidfds (an older Python or kernel)."""
    opened: list[int] = []
    try:
        for pid in pids:
            opened.append(os.pidfd_open(pid))
    except ProcessLookupError:
        return
    except (AttributeError, OSError):
        time.sleep(min(seconds, 0.0005))
        return
    else:
        select.select(opened, [], [], seconds)
    finally:
        for descriptor in opened:
            os.close(descriptor)


def files_in(folder: str) -> int:
    """The files and folders of the file system at `folder` (its inodes in use)."""
    try:
        found = os.statvfs(folder)
    except OSError:
        return 0
    return found.f_files - found.f_ffree


def _names(folder: int | str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def empty(folder: str) -> None:
    """Remove everything in `folder`, folders a variant made unwritable or unreadable included,
    but nothing of another file system mounted inside it: in the sandbox, /tmp is RAM and holds
    the read-only mounts of the variant's copy, gi's tools and a Python installation that lives
    under /tmp (a venv there: thousands of files, each tried and refused between every two
    variants, made a warm evaluation three times as slow), and the writable ones of outputs/,
    TMPDIR and HOME, which are GI_WRITABLE folders emptied on their own. A variant cannot mount
    anything (no capabilities), so nothing it writes escapes this.

    Depth first with a stack of its own, each folder opened from its parent's descriptor and
    left through "..": one descriptor open at a time, whatever the depth."""
    try:
        current = os.open(folder, _FOLDER)
    except OSError:
        return
    device = os.fstat(current).st_dev
    left = [_names(current)]  # the names still to remove, a list for each folder entered
    entered: list[str] = []  # the folders entered, by name, from `folder` down
    try:
        while left:
            if not left[-1]:
                left.pop()
                if entered:  # back to the parent, and the folder just emptied goes
                    parent = os.open("..", _FOLDER, dir_fd=current)
                    os.close(current)
                    current = parent
                    with contextlib.suppress(OSError):
                        os.rmdir(entered.pop(), dir_fd=current)
                continue
            name = left[-1].pop()
            try:
                status = os.stat(name, dir_fd=current, follow_symlinks=False)
            except OSError:
                continue
            if status.st_dev != device:
                continue  # another file system mounted here
            if not stat.S_ISDIR(status.st_mode):
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=current)
                continue
            with contextlib.suppress(OSError):
                os.chmod(name, 0o700, dir_fd=current)  # a folder, not a link (no process is left)
            try:
                inner = os.open(name, _FOLDER, dir_fd=current)
            except OSError:
                continue
            os.close(current)
            current = inner
            entered.append(name)
            left.append(_names(current))
    except OSError:
        pass  # ".." could not be opened: what is left stays, and the file count says so
    finally:
        os.close(current)


IPC_RMID = 0
#: System V objects a variant can leave in the worker's IPC namespace: /proc's list, and the
#: libc call that removes one (shmctl, msgctl, semctl with IPC_RMID).
SYSTEM_V = (("shm", "shmctl"), ("msg", "msgctl"), ("sem", "semctl"))


def remove_ipc() -> None:
    """Remove every System V shared memory segment, message queue and semaphore set of this
    IPC namespace (the sandbox's own: nothing of the host's is in it)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for kind, control in SYSTEM_V:
        try:
            with open(f"/proc/sysvipc/{kind}") as stream:
                rows = stream.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 1:
                if kind == "sem":
                    getattr(libc, control)(int(fields[1]), 0, IPC_RMID)
                else:
                    getattr(libc, control)(int(fields[1]), IPC_RMID, None)


#: keyctl(2)'s system call number by machine, for a 64-bit interpreter (the C library has no
#: wrapper for it).
_KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "ppc64le": 271, "s390x": 280}
KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_SETPERM, KEYCTL_CLEAR, KEYCTL_GET_PERSISTENT = 1, 5, 7, 22
KEY_SPEC_PROCESS_KEYRING = -2
#: Every permission for the keyring's possessor and its owner (a variant may take some away).
KEYRING_PERMISSIONS = 0x3F3F0000
#: The user and user-session keyrings of the calling process.
USER_KEYRINGS = (-4, -5)
#: Whether this kernel's user keyrings belong to a user namespace (from Linux 5.3; before, they
#: were the host user's own, whatever the namespace: never cleared there).
USER_KEYRINGS_OWN = tuple(int(part) for part in re.findall(r"\d+", os.uname().release)[:2]) >= (5, 3)
#: keyctl(2)'s number here, or None (another machine, or a 32-bit interpreter).
_KEYCTL_NUMBER = _KEYCTL.get(platform.machine()) if sys.maxsize > 2**32 else None
_syscall = ctypes.CDLL(None, use_errno=True).syscall


def _keyctl(*arguments: int | None) -> int | None:
    """keyctl(2), or None where its number is not known here."""
    return None if _KEYCTL_NUMBER is None else int(_syscall(_KEYCTL_NUMBER, *arguments))


def own_session_keyring() -> None:
    """In a child: a session keyring of its own, new and empty (the one it inherits is gi's), which
    ends with it."""
    _keyctl(KEYCTL_JOIN_SESSION_KEYRING, None)


def clear_keyrings() -> bool:
    """Remove every key a variant added to the user, user-session or persistent keyring of the
    sandbox's user namespace, where the kernel keeps them apart from the host's; whether none
    was left (a variant may have taken away the permission to clear one)."""
    if not USER_KEYRINGS_OWN:
        return True
    persistent = _keyctl(KEYCTL_GET_PERSISTENT, -1, KEY_SPEC_PROCESS_KEYRING)
    for keyring in (*USER_KEYRINGS, *([persistent] if persistent is not None and persistent > 0 else [])):
        _keyctl(KEYCTL_SETPERM, keyring, KEYRING_PERMISSIONS)  # (rights a variant took away, where it can)
        cleared = _keyctl(KEYCTL_CLEAR, keyring)
        if cleared is not None and cleared < 0:
            return False
    return True
