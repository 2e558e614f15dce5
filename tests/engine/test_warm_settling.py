"""A warm worker answers a run as its child ends, and settles the run after (the child's end, what
it left, the folders it wrote) before it takes the next variant. Real warm workers, in the
sandbox where bubblewrap is present."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from gi.engine.sandbox.limits import Limits
from gi.engine.warm import WarmPool
from gi.model.program import Program

ORIGINAL = "def answer():\n    return 1\n"
RIGHT = "def answer():\n    return 2\n"
TESTS = "from calc import answer\n\n\ndef test_answer():\n    assert answer() == 2\n"

#: A variant whose test says the child's exit status on the worker's pipe for it, as the child
#: does as it ends, closes every pipe it holds, and lingers: as if its run were over and passed.
SAYS_IT_ENDED = """import os
import sys
import time


def answer():
    ending = sys.modules["__main__"].ENDING
    os.write(ending, b"0\\n")
    os.closerange(0, ending)
    os.closerange(ending + 1, 4096)
    time.sleep(30)
    return 2
"""


def project(root: Path) -> Program:
    (root / "tests").mkdir()
    (root / "calc.py").write_text(ORIGINAL)
    (root / "tests" / "test_calc.py").write_text(TESTS)
    return Program.load(root, ["calc.py"])


#: A variant that leaves many files for the worker to remove: its settling takes a while.
LEAVES_FILES = """import os


def answer():
    folder = os.environ["TMPDIR"]
    for number in range(30000):
        open(os.path.join(folder, str(number)), "w").close()
    return 1
"""


def test_a_worker_that_dies_after_its_answer_is_replaced_and_the_next_variant_is_not_charged(tmp_path: Path) -> None:
    pool = WarmPool(project(tmp_path), Limits(), 1)
    try:
        first = pool.run_tests({"calc.py": LEAVES_FILES}, ["tests"], timeout=60, limits={}, default_limit=0)
        assert first.outcomes == {"tests/test_calc.py::test_answer": "failed"}
        ((worker, _),) = pool._all
        assert worker.unsettled, "it answered before it settled"
        os.kill(worker.live.process.pid, signal.SIGKILL)  # while it removes the files
        worker.live.process.wait(timeout=30)
        second = pool.run_tests({"calc.py": RIGHT}, ["tests"], timeout=60, limits={}, default_limit=0)
    finally:
        pool.close()
    assert second.outcomes == {"tests/test_calc.py::test_answer": "passed"}, second
    assert (pool.started, pool.replaced) == (2, 1), "the worker that did not settle was replaced, once"


def test_a_child_that_says_it_ended_and_lingers_is_stopped_and_its_run_does_not_pass(tmp_path: Path) -> None:
    pool = WarmPool(project(tmp_path), Limits(), 1)
    try:
        started = time.monotonic()
        said = pool.run_tests({"calc.py": SAYS_IT_ENDED}, ["tests"], timeout=60, limits={}, default_limit=0)
        seconds = time.monotonic() - started
        honest = pool.run_tests({"calc.py": RIGHT}, ["tests"], timeout=60, limits={}, default_limit=0)
    finally:
        pool.close()
    assert seconds < 20, "the worker answered once the child said it ended, not at its 30 s sleep's end"
    assert said.outcomes.get("tests/test_calc.py::test_answer") != "passed", said
    assert said.exit_status != 0, "the status it said is not the run's: its report never ended"
    assert honest.outcomes == {"tests/test_calc.py::test_answer": "passed"}, honest
    assert (pool.started, pool.replaced) == (1, 0), "the same worker settled the lingering child and went on"
