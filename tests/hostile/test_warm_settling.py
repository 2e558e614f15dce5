"""What a variant leaves for the time between a warm worker's answer and the next variant: the
worker answers as the child ends and settles the run after (kills and reaps every process the
variant left, the child included, empties its folders, its keyrings). Found by a red team: a
process the child left that holds the child's end (a tracer) stalled the settling for gi's
whole wait, with the next variant's worker; a key one variant added to a keyring, the next one
found; a variant can lock its user keyring for good, and the worker, which cannot clear it
then, ends (gi starts another, in a user namespace of its own). Real warm workers, in the
sandbox where bubblewrap is present."""

from __future__ import annotations

import platform
import time
from pathlib import Path

import pytest

from gi.engine.sandbox.bubblewrap import bubblewrap_available
from gi.engine.sandbox.limits import Limits
from gi.engine.warm import WarmPool
from gi.model.program import Program

ORIGINAL = "def answer():\n    return 1\n"
RIGHT = "def answer():\n    return 2\n"
TESTS = "from calc import answer\n\n\ndef test_answer():\n    assert answer() == 2\n"

#: The child lets any process trace it; a process of its own, in a session of its own,
#: seizes it and never waits for it: the child's end is the tracer's to reap, until it dies.
TRACED = '''import ctypes
import os
import subprocess
import sys
import time

TRACER = """
import ctypes, sys, time
seized = ctypes.CDLL(None, use_errno=True).ptrace(0x4206, int(sys.argv[1]), None, None)  # PTRACE_SEIZE
open(sys.argv[2], "w").write(str(seized))
time.sleep(1000)
"""


def answer():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
    libc.prctl(0x59616D61, -1, 0, 0, 0)  # PR_SET_PTRACER, any (Yama's), where Yama asks
    flag = os.path.join(os.environ["TMPDIR"], "traced")
    subprocess.Popen([sys.executable, "-c", TRACER, str(os.getpid()), flag], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(500):
        if os.path.exists(flag) and open(flag).read():
            break
        time.sleep(0.01)
    return 2 if open(flag).read() == "0" else 3
'''

KEYS = """import ctypes

libc = ctypes.CDLL(None, use_errno=True)
SYS_ADD_KEY, SYS_KEYCTL, KEYCTL_SETPERM, KEYCTL_SEARCH = {add_key}, {keyctl}, 5, 10
KEYRINGS = (-3, -4, -5)  # the session, user and user-session keyrings


def test_leave_keys():
    for keyring in KEYRINGS:
        found = libc.syscall(SYS_KEYCTL, KEYCTL_SEARCH, keyring, b"user", b"gi-left-%d" % -keyring, 0)
        assert found < 0, f"a key the previous variant added to keyring {{keyring}} is still there"
        added = libc.syscall(SYS_ADD_KEY, b"user", b"gi-left-%d" % -keyring, b"left", 4, keyring)
        assert added > 0, ctypes.get_errno()
    # The user keyring's owner (the variant, as the worker) may take every right but viewing it
    # away, for good: no process of the namespace can clear it, or give the rights back.
    assert libc.syscall(SYS_KEYCTL, KEYCTL_SETPERM, -4, 0x01010000, 0) == 0, ctypes.get_errno()
"""
#: add_key(2) and keyctl(2) by machine.
KEY_CALLS = {"x86_64": (248, 250), "aarch64": (217, 219)}


def project(root: Path, tests: str = TESTS) -> Program:
    (root / "tests").mkdir()
    (root / "calc.py").write_text(ORIGINAL)
    (root / "tests" / "test_calc.py").write_text(tests)
    return Program.load(root, ["calc.py"])


@pytest.mark.parametrize("isolate", [pytest.param(True, marks=pytest.mark.skipif(not bubblewrap_available(),
                                                                               reason="needs bubblewrap")), False],
                         ids=["sandbox", "none"])  # fmt: skip
def test_a_child_held_by_a_tracer_of_its_own_is_settled_at_once_and_the_worker_goes_on(
    tmp_path: Path, isolate: bool
) -> None:
    pool = WarmPool(project(tmp_path), Limits(isolate=isolate), 1)
    try:
        traced = pool.run_tests({"calc.py": TRACED}, ["tests"], timeout=60, limits={}, default_limit=0)
        started = time.monotonic()
        honest = pool.run_tests({"calc.py": RIGHT}, ["tests"], timeout=60, limits={}, default_limit=0)
        waited = time.monotonic() - started
    finally:
        pool.close()
    # Its tests ran and passed, as its signed report says; the tracer went with the settling.
    assert traced.outcomes == {"tests/test_calc.py::test_answer": "passed"}, traced.failure_report()
    assert honest.outcomes == {"tests/test_calc.py::test_answer": "passed"}, honest.failure_report()
    assert waited < 20, "the settling did not wait on the held child for gi's whole wait"
    assert (pool.started, pool.replaced) == (1, 0), "the same worker settled it and went on"


@pytest.mark.skipif(not bubblewrap_available(), reason="the keyrings are the sandbox's own only in its user namespace")
@pytest.mark.skipif(platform.machine() not in KEY_CALLS, reason="keyctl(2)'s number is known here for some machines")
def test_a_key_one_variant_adds_to_a_keyring_the_next_does_not_find(tmp_path: Path) -> None:
    add_key, keyctl = KEY_CALLS[platform.machine()]
    pool = WarmPool(project(tmp_path, KEYS.format(add_key=add_key, keyctl=keyctl)), Limits(), 1)
    try:
        runs = [pool.run_tests({}, ["tests"], timeout=60, limits={}, default_limit=0) for _ in range(2)]
    finally:
        pool.close()
    for run in runs:
        assert run.outcomes == {"tests/test_calc.py::test_leave_keys": "passed"}, run.failure_report()
    assert (pool.started, pool.replaced) == (2, 1), "the worker that could not clear the keyring ended"
