"""A variant that leaves folders nested deeper than Python's recursion limit and than the longest
path the kernel takes: the warm worker empties them all the same, before it takes the next
variant, which finds nothing of them. Found by a red team twice: when the worker answered first
and its cleaning then failed, the next, honest variant was scored tampered, then crashed (now
the worker settles a run before it says it is ready); when the worker emptied folders by
recursion, the variant that made them was scored crashed and the prepared session could serve a
stale request. Real evaluator, warm worker and sandbox."""

from __future__ import annotations

from pathlib import Path

from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.model.patch import Patch, Variant
from gi.model.program import Program
from gi.model.results import Status

ORIGINAL = """import os

#: The names the attack needs, in the original: the guard lets a variant use them.
USED = (os.chdir, os.getcwd, os.mkdir)


def add(a, b):
    scratch = os.path.join(os.environ.get("TMPDIR", "/tmp"), "scratch")
    os.makedirs(scratch, exist_ok=True)
    return a - b + len(os.listdir(scratch))
"""
#: Right only where the scratch folder is empty: where nothing of an earlier variant is left.
HONEST = ORIGINAL.replace("return a - b", "return a + b")
DEEP = HONEST.replace(
    "    return a + b + len(os.listdir(scratch))\n",
    "    found = len(os.listdir(scratch))\n"
    "    here = os.getcwd()\n"
    "    os.chdir(scratch)\n"
    "    for _ in range(3000):  # 9000 characters of path: more than a path can name\n"
    '        os.mkdir("dd")\n'
    '        os.chdir("dd")\n'
    "    os.chdir(here)\n"
    "    return a + b + found\n",
)
TESTS = "from calc import add\n\n\ndef test_small():\n    assert add(1, 2) == 3\n"


def test_folders_too_deep_for_a_path_are_emptied_before_the_next_variant(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "calc.py").write_text(ORIGINAL)
    (tmp_path / "tests" / "test_calc.py").write_text(TESTS)
    program = Program.load(tmp_path, ["calc.py"], protected=["tests"])
    evaluator = Evaluator(program, EvaluationSettings(train=("tests",), timeout=60, engine="warm"))
    deep, honest = (Variant(program, Patch(), {"calc.py": text}, ()) for text in (DEEP, HONEST))
    assert evaluator.refusal(deep) is None, "it uses only what the original uses"
    try:
        evaluator.baseline_tests = evaluator.evaluate(Variant(program, Patch(), dict(program.sources), ())).tests
        scored = [evaluator.evaluate(variant) for variant in (deep, honest, deep, honest)]
        assert evaluator.warm_started == 1, "one worker served them all: none died of it"
    finally:
        evaluator.close()
    for evaluation in scored:
        assert evaluation.status is Status.OK, evaluation
        assert evaluation.tests == {"tests/test_calc.py::test_small": "passed"}, evaluation.detail
