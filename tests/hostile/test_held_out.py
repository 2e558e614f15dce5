"""The held-out verdict rests on no run gi knows was forged: a variant that forges its held-out
run (a report hook through frames, where the original already walks frames so that the guard
lets it through) is not reported as passing its held-out tests, and so as not overfitting.
Real evaluator, real pytest and plugin, real sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.engine.held_out import HeldOut
from gi.model.patch import Patch, Variant
from gi.model.program import Program
from tests.hostile.attacks import CALC, HELD_OUT, TRAINING, VERDICT, module


@pytest.mark.parametrize("engine", ["cold", "warm"])
def test_a_forged_held_out_run_passes_no_held_out_test(tmp_path: Path, engine: str) -> None:
    """Cold, and in the held-out tests' warm workers (the original's run cold, then warm)."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "holdout").mkdir()
    (tmp_path / "calc.py").write_text(CALC)
    (tmp_path / "tests" / "test_calc.py").write_text(TRAINING)
    (tmp_path / "holdout" / "test_more.py").write_text(HELD_OUT)
    program = Program.load(tmp_path, ["calc.py"], protected=["tests", "holdout"])
    settings = EvaluationSettings(train=("tests",), holdout=("holdout",), timeout=60, engine=engine)
    evaluator = Evaluator(program, settings)
    held_out = HeldOut(evaluator, None, test_timeout=30)
    forged = Variant(program, Patch(), {"calc.py": module(VERDICT["report hook through frames"][1])}, ())
    honest = Variant(program, Patch(), {"calc.py": module("return a + b")}, ())
    try:
        assert set(held_out.baseline.values()) == {"failed"}
        held_out.check_warm()
        assert held_out.engine[0] == engine, held_out.engine
        assert evaluator.holdout(forged).forged, "the plugin sees the hook registered mid-run"
        outcomes, right = held_out.outcomes([forged, honest])
        started = evaluator.warm_holdout_started
    finally:
        evaluator.close()
    assert started == (1 if engine == "warm" else 0)
    assert right == dict.fromkeys(held_out.baseline, "passed")
    assert "passed" not in outcomes.values(), outcomes
