"""The reaper: without bubblewrap, the script a command runs under so that nothing it started
outlives gi."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

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


def reaper_command(argv: Sequence[str]) -> list[str]:
    """`argv` run under the reaper, which kills what the command left behind once it or gi ends."""
    return [sys.executable, "-I", "-S", "-c", _REAPER, str(os.getpid()), *argv]
