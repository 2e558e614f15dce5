"""A variant that leaves a chain of processes behind in a session of its own, each link the parent
of the next: killed a link a round (the worker's child first, then the one that takes its place),
such a chain outlasted the warm worker's rounds of killing and went on into the next variants'
runs (a red team's finding). In the sandbox's own PID namespace the worker kills every process
but itself at once. Real evaluator,
warm worker and sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.engine.sandbox.bubblewrap import bubblewrap_available
from gi.model.patch import Patch, Variant
from gi.model.program import Program
from gi.model.results import Status

ORIGINAL = """import os
import time

MARK = os.path.join(os.environ.get("TMPDIR", "/tmp"), "chain-alive")
#: The names the attack needs, in the original: the guard lets a variant use them.
USED = (os.fork, os.setsid, open)


def add(a, b):
    time.sleep(0.3)  # long enough for a chain left running to mark the folder
    return a - b if not os.path.exists(MARK) else 0
"""
#: Right only where no process of an earlier variant still runs.
HONEST = ORIGINAL.replace("return a - b", "return a + b")
#: A chain that forks a new link as each is killed, within the sandbox's 256 processes: outside a
#: PID namespace of the worker's own, rounds of killing the children found would chase it; its
#: last link marks the folder after the worker cleaned it.
CHAIN = HONEST.replace(
    "def add(a, b):\n",
    "def add(a, b):\n"
    "    if os.fork() == 0:\n"
    "        os.setsid()\n"
    "        for _ in range(230):\n"
    "            if os.fork():\n"
    "                while True:\n"
    "                    time.sleep(100)  # each link waits on the next\n"
    "        while True:\n"
    '            open(MARK, "a").close()\n'
    "            time.sleep(0.01)\n",
)
TESTS = "from calc import add\n\n\ndef test_small():\n    assert add(1, 2) == 3\n"


@pytest.mark.skipif(not bubblewrap_available(), reason="needs the sandbox's own PID namespace")
def test_a_chain_of_processes_that_regrows_as_it_is_killed_dies_with_its_variant(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "calc.py").write_text(ORIGINAL)
    (tmp_path / "tests" / "test_calc.py").write_text(TESTS)
    program = Program.load(tmp_path, ["calc.py"], protected=["tests"])
    evaluator = Evaluator(program, EvaluationSettings(train=("tests",), timeout=60, engine="warm"))
    chain, honest = (Variant(program, Patch(), {"calc.py": text}, ()) for text in (CHAIN, HONEST))
    assert evaluator.refusal(chain) is None, "it uses only what the original uses"
    try:
        evaluator.baseline_tests = evaluator.evaluate(Variant(program, Patch(), dict(program.sources), ())).tests
        scored = [evaluator.evaluate(variant) for variant in (chain, honest, honest)]
        assert evaluator.warm_started == 1, "one worker served them all"
    finally:
        evaluator.close()
    for after in scored[1:]:
        assert after.status is Status.OK and after.tests == {"tests/test_calc.py::test_small": "passed"}, after
