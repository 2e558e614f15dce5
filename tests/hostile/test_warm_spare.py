"""What a variant can do to the spare child a warm worker forks for the next variant while the
variant's tests run (fitness/sandboxed/warm_spare.py): the spare is the child's sibling, of the
same user, so the variant can kill it, stop it, interrupt it, lower its limits and priorities or
change its scheduling policy. None of it may reach the next variant: a killed spare is replaced
by a child forked then, a stopped one is let go on, an interrupted one ends without running any
of the worker's code, and one whose limits or scheduling changed is dropped. Each child has a
session, and so a scheduling autogroup, of its own.
Real warm workers, in the sandbox where bubblewrap is present, and with process limits only."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gi.engine.sandbox.bubblewrap import bubblewrap_available
from gi.engine.sandbox.limits import Limits
from gi.engine.warm import WarmPool
from gi.model.program import Program

ORIGINAL = "def answer():\n    return 1\n"
TESTS = "from calc import answer\n\n\ndef test_answer():\n    assert answer() == 2\n"

#: The variant: do `attack` to every process whose parent is its own (the worker), itself aside,
#: and answer 2 only if it found one (the spare).
ATTACK = """import ctypes
import os
import platform
import resource
import signal
import time

libc = ctypes.CDLL(None, use_errno=True)
#: ioprio_set(2), ioprio_get(2) by machine.
SYSCALLS = {{"x86_64": (251, 252), "aarch64": (30, 31)}}.get(platform.machine())


def siblings():
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                with open(f"/proc/{{name}}/stat") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if parent == os.getppid():
                found.append(int(name))
    return found


def renice_autogroup():
    try:  # (where the kernel has autogroups and lets it)
        with open("/proc/self/autogroup", "w") as group:
            group.write("19")
    except OSError:
        pass


def answer():
    hit = 0
    for pid in siblings():
        try:
            {attack}
            hit += 1
        except OSError:
            pass
    return 2 if hit else 3
"""
ATTACKS = {
    "killed": "os.kill(pid, signal.SIGKILL)",
    "stopped": "os.kill(pid, signal.SIGSTOP)",
    "limited": "resource.prlimit(pid, resource.RLIMIT_NOFILE, (32, 32)); os.setpriority(os.PRIO_PROCESS, pid, 15)",
    "idled": "os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))",
    # Found by a red team: stopped, then interrupted, the spare took KeyboardInterrupt once the
    # settling let it go on, into a copy of the worker's own code that served on.
    "interrupted": "os.kill(pid, signal.SIGSTOP); time.sleep(0.05); os.kill(pid, signal.SIGINT)",
    # The idle I/O class (ioprio_set, IOPRIO_WHO_PROCESS), where its number is known here.
    "io-idled": "SYSCALLS and libc.syscall(SYSCALLS[0], 1, pid, 3 << 13) == 0 or None",
    # The scheduling autogroup's nice value: the worker's, and every later child's, were the
    # child in the worker's session.
    "autogrouped": "renice_autogroup()",
}

#: The next variant: right, and running with the worker's limits and priorities.
HONEST = """import ctypes
import os
import platform
import resource

libc = ctypes.CDLL(None, use_errno=True)
IOPRIO_GET = {"x86_64": 252, "aarch64": 31}.get(platform.machine())


def autogroup_nice():
    try:
        with open("/proc/self/autogroup") as group:
            return int(group.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return 0


def answer():
    same_files = resource.getrlimit(resource.RLIMIT_NOFILE) == resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE)
    same_priority = os.getpriority(os.PRIO_PROCESS, 0) == os.getpriority(os.PRIO_PROCESS, os.getppid())
    same_policy = os.sched_getscheduler(0) == os.sched_getscheduler(os.getppid())
    same_io = IOPRIO_GET is None or libc.syscall(IOPRIO_GET, 1, 0) == libc.syscall(IOPRIO_GET, 1, os.getppid())
    return 2 if same_files and same_priority and same_policy and same_io and autogroup_nice() == 0 else 4
"""


def project(root: Path) -> Program:
    (root / "tests").mkdir()
    (root / "calc.py").write_text(ORIGINAL)
    (root / "tests" / "test_calc.py").write_text(TESTS)
    return Program.load(root, ["calc.py"])


@pytest.mark.parametrize("attack", sorted(ATTACKS))
@pytest.mark.parametrize("isolate", [pytest.param(True, marks=pytest.mark.skipif(not bubblewrap_available(),
                                                                               reason="needs bubblewrap")), False],
                         ids=["sandbox", "none"])  # fmt: skip
def test_what_a_variant_does_to_the_spare_does_not_reach_the_next_variant(
    tmp_path: Path, isolate: bool, attack: str
) -> None:
    pool = WarmPool(project(tmp_path), Limits(isolate=isolate), 1, spare_pages=True)
    try:
        pool.run_tests({}, ["tests"], timeout=60, limits={}, default_limit=0)  # (the spare is forked)
        hostile = pool.run_tests({"calc.py": ATTACK.format(attack=ATTACKS[attack])}, ["tests"], timeout=60,
                                 limits={}, default_limit=0)  # fmt: skip
        started = time.monotonic()
        honest = pool.run_tests({"calc.py": HONEST}, ["tests"], timeout=30, limits={}, default_limit=0)
        waited = time.monotonic() - started
    finally:
        pool.close()
    assert hostile.outcomes == {"tests/test_calc.py::test_answer": "passed"}, "it found the spare and " + attack
    assert honest.outcomes == {"tests/test_calc.py::test_answer": "passed"}, honest.failure_report()
    assert waited < 20, "the next variant did not wait on a spare it could not use"
    assert (pool.started, pool.replaced) == (1, 0), "the same worker went on"
