"""Held-out folders in warm workers of their own, with the cold path's verdicts."""

from __future__ import annotations

from pathlib import Path

from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program

TRAINING = """\
from calc import double


def test_one():
    assert double(1) == 2
"""

HELD_OUT = """\
from calc import double


def test_two():
    assert double(2) == 4


def test_negative():
    assert double(-3) == -6
"""


def test_a_held_out_folder_runs_in_its_own_warm_workers_with_the_cold_verdicts(tmp_path: Path) -> None:
    """Told to (`warm=True`), held-out runs take warm workers whose copies hold the held-out
    folder, and say what the cold runs say on the original and on a variant; by default
    (before the run's check) they stay cold, and the training workers never start for them."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "holdout").mkdir()
    (tmp_path / "calc.py").write_text("def double(x):\n    return 2 * x\n")
    (tmp_path / "tests" / "test_calc.py").write_text(TRAINING)
    (tmp_path / "holdout" / "test_held.py").write_text(HELD_OUT)
    program = Program.load(tmp_path, ["calc.py"], protected=["tests", "holdout"])
    original = apply(program, Patch())
    variant = Variant(program, Patch(), {"calc.py": "def double(x):\n    return abs(2 * x)\n"}, ())
    settings = EvaluationSettings(train=("tests",), holdout=("holdout",), engine="warm")
    evaluator = Evaluator(program, settings)
    try:
        cold = [evaluator.holdout(original), evaluator.holdout(variant)]
        cold_started = evaluator._held_out_warm is not None
        warm = [evaluator.holdout(original, warm=True), evaluator.holdout(variant, warm=True)]
        pool = evaluator._held_out_warm
        warm_started = pool.started if pool is not None else 0
        training_started = evaluator.warm_started
    finally:
        evaluator.close()
    assert not cold_started and warm_started == 1 and training_started == 0
    assert [run.outcomes for run in warm] == [run.outcomes for run in cold]
    assert not any(run.forged for run in warm)
    held = ("holdout/test_held.py::test_two", "holdout/test_held.py::test_negative")
    assert warm[0].outcomes == dict.fromkeys(held, "passed")
    assert warm[1].outcomes == {held[0]: "passed", held[1]: "failed"}
