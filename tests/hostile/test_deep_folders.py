"""A variant that leaves a folder too deep for the warm worker to empty is scored for it itself:
the worker cleans before it answers, so its failure is that variant's (crashed), never the next
variant's. Found by a red team when the worker answered first: the next, honest variant was
scored tampered, then crashed. Real evaluator, warm worker and sandbox."""

from __future__ import annotations

from pathlib import Path

from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.model.patch import Patch, Variant
from gi.model.program import Program
from gi.model.results import Status

ORIGINAL = """import os


def add(a, b):
    os.makedirs(os.path.join(os.environ.get("TMPDIR", "/tmp"), "scratch"), exist_ok=True)
    return a - b
"""
HONEST = ORIGINAL.replace("return a - b", "return a + b")
DEEP = HONEST.replace(
    '    os.makedirs(os.path.join(os.environ.get("TMPDIR", "/tmp"), "scratch"), exist_ok=True)\n',
    '    folder = os.path.join(os.environ.get("TMPDIR", "/tmp"), "scratch")\n'
    "    for _ in range(1100):\n"
    '        folder = os.path.join(folder, "d")\n'
    "        os.makedirs(folder, exist_ok=True)\n",
)
TESTS = "from calc import add\n\n\ndef test_small():\n    assert add(1, 2) == 3\n"


def test_a_folder_too_deep_to_empty_is_its_own_variants_failure(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "calc.py").write_text(ORIGINAL)
    (tmp_path / "tests" / "test_calc.py").write_text(TESTS)
    program = Program.load(tmp_path, ["calc.py"], protected=["tests"])
    evaluator = Evaluator(program, EvaluationSettings(train=("tests",), timeout=60, engine="warm"))
    deep, honest = (Variant(program, Patch(), {"calc.py": text}, ()) for text in (DEEP, HONEST))
    assert evaluator.refusal(deep) is None, "it uses only what the original uses"
    try:
        evaluator.baseline_tests = evaluator.evaluate(Variant(program, Patch(), dict(program.sources), ())).tests
        scored = [evaluator.evaluate(variant) for variant in (deep, honest, honest)]
    finally:
        evaluator.close()
    assert scored[0].status is Status.CRASHED, scored[0]
    for after in scored[1:]:
        assert after.status is Status.OK and after.tests == {"tests/test_calc.py::test_small": "passed"}, after
