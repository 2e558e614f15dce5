"""What a variant can do to the spare child a warm worker forks for the next variant while the
variant's tests run (fitness/sandboxed/warm_spare.py): the spare is the child's sibling, of the
same user, so the variant can kill it, stop it, lower its limits and priority or change its
scheduling policy. None of it may reach the next variant: a killed spare is replaced by a child
forked then, a stopped one is let go on, and one whose limits or scheduling changed is dropped.
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
ATTACK = """import os
import resource
import signal


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
}

#: The next variant: right, and running with the worker's limits and priority.
HONEST = """import os
import resource


def answer():
    same_files = resource.getrlimit(resource.RLIMIT_NOFILE) == resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE)
    same_priority = os.getpriority(os.PRIO_PROCESS, 0) == os.getpriority(os.PRIO_PROCESS, os.getppid())
    same_policy = os.sched_getscheduler(0) == os.sched_getscheduler(os.getppid())
    return 2 if same_files and same_priority and same_policy else 4
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
    pool = WarmPool(project(tmp_path), Limits(isolate=isolate), 1)
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
