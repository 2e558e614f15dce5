"""The behaviour oracle in a repair, on the function the failing tests reach: a repair must keep
the original's answers on calls like the passing tests' (the same lines run on the original),
and is free to change them on calls like the failing tests'."""

from __future__ import annotations

import sys
from pathlib import Path

from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.engine.oracle import LIKE_PASSING, Oracle
from gi.engine.project import pytest_setup
from gi.fitness.oracle import CHANGED, SAME
from gi.model.edits import WriteStatement
from gi.model.patch import Patch, apply
from gi.model.program import Program
from gi.model.sites import Location
from tests.engine.test_oracle import evaluator_for, passes

GRADES = '''"""Letter grades."""


def grade(score):
    """The letter grade of a score from 0 to 100."""
    if score < 0 or score > 100:
        raise ValueError(score)
    if score >= 90:
        return "A"
    if score >= 80:
        return "C"
    return "F"
'''

# Every answer but the B band's is checked on one score; grade(85) fails on the bug.
TRAINING = """\
import pytest

from grades import grade


def test_a():
    assert grade(95) == "A"


def test_b():
    assert grade(85) == "B"


def test_f():
    assert grade(10) == "F"


def test_out_of_range():
    with pytest.raises(ValueError):
        grade(101)
"""

HELD_OUT = """\
from grades import grade


def test_b_band():
    assert grade(80) == "B" and grade(89) == "B"
"""

FUNCTION = "body[1].body.body"
FIXED = WriteStatement(Location("grades.py", f"{FUNCTION}[3].body.body[0]"), 'return "B"')
# The A band narrowed to 95 and up: grade(90) to grade(94) become "B", which no test tries.
NARROWED = WriteStatement(Location("grades.py", f"{FUNCTION}[2]"), 'if score >= 95:\n    return "A"')


def write_grades(folder: Path) -> Program:
    (folder / "tests").mkdir(parents=True)
    (folder / "holdout").mkdir()
    (folder / "grades.py").write_text(GRADES)
    (folder / "tests" / "test_grades.py").write_text(TRAINING)
    (folder / "holdout" / "test_grades_holdout.py").write_text(HELD_OUT)
    return Program.load(folder, ["grades.py"], protected=["tests", "holdout"])


def test_a_repair_keeps_the_original_s_answers_on_drawn_calls_like_its_passing_tests(tmp_path: Path) -> None:
    """Both repairs pass every training and held-out test. The one that also narrows the A band
    answers otherwise on grade(90), a call that runs the lines grade(95) (a passing test's call)
    runs on the original: flagged, with grade(90) as its counterexample. The plain fix changes
    only calls like grade(85), the failing test's, where the original is no reference: "same"."""
    program = write_grades(tmp_path / "grades")
    correct = apply(program, Patch((FIXED,)))
    overfitting = apply(program, Patch((FIXED, NARROWED)))
    evaluator = evaluator_for(program)
    setup, _ = pytest_setup(program, sys.executable)
    held_out = Evaluator(program, EvaluationSettings(("holdout",), timeout=60, test_timeout=10, pytest=setup))
    try:
        assert evaluator.evaluate(apply(program, Patch())).measures["failed_tests"] == 1
        for variant in (correct, overfitting):
            assert evaluator.evaluate(variant).measures["failed_tests"] == 0, variant.diff()
            assert held_out.evaluate(variant).measures["failed_tests"] == 0, variant.diff()
        verdicts = Oracle(evaluator, None, seconds=120, repairing=True, seed=5).check([correct, overfitting])
    finally:
        evaluator.close()
        held_out.close()
    same = verdicts[correct.tree_hash]
    assert same.verdict == SAME and same.inputs_tried > 3, same  # more calls than the passing tests made
    flagged = verdicts[overfitting.tree_hash]
    assert flagged.verdict == CHANGED and flagged.confirmed, flagged
    assert flagged.why.startswith(f"{LIKE_PASSING}: grade(90) returns 'A' on the original"), flagged.why
    assert flagged.counterexample is not None and "grade(90) == 'A'" in flagged.counterexample
    assert passes(tmp_path / "original", program, apply(program, Patch()), flagged.counterexample)
    assert not passes(tmp_path / "overfitting", program, overfitting, flagged.counterexample)
