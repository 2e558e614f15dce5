"""The finisher: how what a sandboxed command leaves in outputs/ reaches gi without touching the disk.

In bubblewrap, every folder a command may write is RAM of a capped size (`Limits.disk_mb`),
outputs/ included, so a variant can fill none of them past the cap and the host's disk not at
all. The finisher runs the command as its child inside the sandbox. While it runs, the finisher
counts the files and folders of each of those RAM folders (their file systems' inodes in use):
past `Limits.disk_files` more than they held at the start, it kills every process of the
sandbox's PID namespace, says why on stderr and exits with OVER_QUOTA_EXIT (a file system of
empty files costs RAM the byte cap does not count). When the command ends, it kills every
other process of the namespace and copies back what gi reads of outputs/: the regular files
(no link, no folder) named as gi's tools name them (`READ_BACK`), at most READ_BACK_FILES of
them and `disk_mb` in all, looking at no more than READ_BACK_SCANNED entries and for no more
than READ_BACK_SECONDS, into the host's outputs/ folder, through a descriptor gi opened on it:
the folder itself is not in the sandbox, the descriptor is not inherited by the command, and
the finisher makes itself non-dumpable first, so no process of the command can reach it
through /proc. A command that kills the finisher loses its outputs, which is its own failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

#: How the names of what gi reads back from outputs/ begin (timing.json, gi-output.txt,
#: gi-timed-*, gi-values-*, gi_differential_cases.json, .gi-coverage).
READ_BACK = ("timing.json", "gi-", "gi_", ".gi-coverage")
READ_BACK_FILES = 256
READ_BACK_SCANNED = 10_000
READ_BACK_SECONDS = 10.0
#: The finisher's exit status for a command it stopped over its quota of files.
OVER_QUOTA_EXIT = 113
#: Seconds between two counts of the folders' files while the command runs.
COUNT_INTERVAL = 0.1

#: Installed in the workspace's tools folder and run with `python -I -S` (nothing of gi's, no
#: site): `finisher.py <outputs> <descriptor> <bytes> <files> <folders> -- argv...` (folders
#: joined by ":"); exits as the command did (128 + the signal that killed it).
FINISHER = f"""
import ctypes, os, signal, stat, subprocess, sys, time
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: /proc/<pid>/fd is ours alone
outputs, target, budget, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
folders = [folder for folder in sys.argv[5].split(":") if folder]
os.set_inheritable(target, False)


def used(folder):
    try:
        found = os.statvfs(folder)
    except OSError:
        return 0
    return found.f_files - found.f_ffree


def kill_the_rest():
    try:
        os.kill(-1, signal.SIGKILL)  # everything else in the PID namespace: nothing writes on
    except OSError:
        pass
    while True:
        try:
            os.wait()
        except ChildProcessError:
            break


start = {{folder: used(folder) for folder in folders}}
child = subprocess.Popen(sys.argv[7:], close_fds=False)
while True:
    try:
        status = child.wait(timeout={COUNT_INTERVAL})
        break
    except subprocess.TimeoutExpired:
        pass
    over = [folder for folder in folders if used(folder) - start[folder] > files]
    if over:
        kill_the_rest()
        sys.stderr.write(f"\\nover its disk quota: {{over[0]}} held more than {{files}} files and folders more\\n")
        sys.stderr.flush()
        os._exit({OVER_QUOTA_EXIT})
kill_the_rest()
deadline = time.monotonic() + {READ_BACK_SECONDS}
copied = 0
with os.scandir(outputs) as entries:
    for scanned, entry in enumerate(entries):
        if scanned >= {READ_BACK_SCANNED} or copied >= {READ_BACK_FILES} or time.monotonic() > deadline:
            break
        name = entry.name
        if not name.startswith({READ_BACK!r}):
            continue
        try:
            source = os.open(os.path.join(outputs, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        size = os.fstat(source).st_size
        if stat.S_ISREG(os.fstat(source).st_mode) and size <= budget:
            budget -= size
            copied += 1
            try:
                try:
                    os.unlink(name, dir_fd=target)
                except FileNotFoundError:
                    pass
                copy = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=target)
                while chunk := os.read(source, 1 << 20):
                    os.write(copy, chunk)
                os.close(copy)
            except OSError:
                pass
        os.close(source)
sys.exit(128 - status if status < 0 else status)
"""

FINISHER_NAME = "gi_finisher.py"


def finisher_command(
    python: str,
    script: Path,
    outputs: Path,
    descriptor: int,
    budget: int,
    files: int,
    folders: Sequence[str],
    argv: Sequence[str],
) -> list[str]:
    """`argv` run by the finisher `script` (see the module doc), which holds `folders` to `files`
    more files each and copies up to `budget` bytes of what gi reads of `outputs` to the folder
    open on `descriptor`."""
    return [python, "-I", "-S", str(script), str(outputs), str(descriptor), str(budget), str(files),
            ":".join(folders), "--", *argv]  # fmt: skip


def over_quota(returncode: int, stderr: str) -> str:
    """Why the finisher stopped the command over its quota of files (its last line on stderr),
    or "" when it did not."""
    if returncode != OVER_QUOTA_EXIT:
        return ""
    last = stderr.strip().rpartition("\n")[2]
    return last if last.startswith("over its disk quota") else ""
