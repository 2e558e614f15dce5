"""The finisher: how what a sandboxed command leaves in outputs/ reaches gi without touching the disk.

In bubblewrap, every folder a command may write is RAM of a capped size (`Limits.disk_mb`),
outputs/ included, so a variant can fill none of them past the cap and the host's disk not at
all. The finisher runs the command as its child inside the sandbox and, when it ends, kills
every other process of the sandbox's PID namespace and copies the regular files the command
left in outputs/ (no link, no folder, at most `disk_mb` in all) into the host's outputs/
folder, through a descriptor gi opened on it: the folder itself is not in the sandbox, the
descriptor is not inherited by the command, and the finisher makes itself non-dumpable first,
so no process of the command can reach it through /proc. A command that kills the finisher
loses its outputs, which is its own failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

#: Installed in the workspace's tools folder and run with `python -I -S` (nothing of gi's, no
#: site): `finisher.py <outputs> <descriptor> <bytes> -- argv...`; exits as the command did
#: (128 + the signal that killed it).
FINISHER = """
import ctypes, os, signal, stat, subprocess, sys
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: /proc/<pid>/fd is ours alone
outputs, target, budget = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.set_inheritable(target, False)
child = subprocess.Popen(sys.argv[5:], close_fds=False)
status = child.wait()
try:
    os.kill(-1, signal.SIGKILL)  # everything else in the PID namespace: nothing writes on
except OSError:
    pass
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
for name in sorted(os.listdir(outputs)):
    try:
        source = os.open(os.path.join(outputs, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        continue
    size = os.fstat(source).st_size
    if stat.S_ISREG(os.fstat(source).st_mode) and size <= budget:
        budget -= size
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
    python: str, script: Path, outputs: Path, descriptor: int, budget: int, argv: Sequence[str]
) -> list[str]:
    """`argv` run by the finisher `script` (see the module doc), which copies up to `budget`
    bytes of what it leaves in `outputs` to the folder open on `descriptor`."""
    return [python, "-I", "-S", str(script), str(outputs), str(descriptor), str(budget), "--", *argv]
