"""The behaviour oracle on simplifications that pass every training and held-out test: is_prime's
quick check shrunk to its last operand, a leap-year rule without its century cases (both change
behaviour on inputs no test tries), and a redundant check deleted (which changes nothing)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gi.cli.main import main
from gi.config import load_config
from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.engine.held_out import HeldOut
from gi.engine.oracle import SPENT, Oracle, unchecked_because
from gi.engine.project import pytest_setup
from gi.engine.recorded import Measurements
from gi.engine.store import RunStore
from gi.fitness.oracle import CHANGED, NOT_CHECKED, SAME
from gi.fitness.outcomes import overfits
from gi.fitness.selection import Coverage
from gi.model.edits import DeleteStatement, KeepOperand, ReplaceOperator, WriteStatement
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.model.sites import Location
from gi.run.experiment import run_experiment

ARITH = '''"""Small arithmetic."""


def is_prime(n):
    """Whether n is prime."""
    if n < 17:
        return n in {2, 3, 5, 7, 11, 13}
    if not (n & 1 and n % 3 and n % 5 and n % 7 and n % 11 and n % 13):
        return False
    return _probable(n)


def _probable(n):
    assert n & 1
    return all(n % d for d in range(3, int(n**0.5) + 1, 2))


def is_leap(year):
    """Whether the year is a leap year."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def clamp(x, low, high):
    """x within [low, high]."""
    if x < low:
        return low
    if x > high:
        return high
    if low <= x <= high:
        return x
    return x
'''

TRAINING = """\
from arith import clamp, is_leap, is_prime


def test_primes():
    assert is_prime(7) and is_prime(13) and is_prime(97) and is_prime(101)
    assert not is_prime(9) and not is_prime(15) and not is_prime(91) and not is_prime(1)


def test_leap():
    assert is_leap(2024) and is_leap(2000) and not is_leap(2023)


def test_clamp():
    assert clamp(5, 0, 10) == 5 and clamp(-1, 0, 10) == 0 and clamp(11, 0, 10) == 10
"""

HELD_OUT = """\
from arith import clamp, is_leap, is_prime


def test_more_primes():
    assert is_prime(2) and is_prime(103) and not is_prime(4) and not is_prime(121)


def test_more_leap_years():
    assert is_leap(1996) and not is_leap(2021)


def test_clamp_at_the_bounds():
    assert clamp(0, 0, 10) == 0 and clamp(10, 0, 10) == 10
"""

#: is_prime's quick check `n & 1 and ... and n % 13` shrunk to `n % 13`.
QUICK_CHECK = KeepOperand(Location("arith.py", "body[1].body.body[2].test.expression"), side="right")
#: is_leap's rule without its century cases: `year % 4 == 0`.
NO_CENTURIES = KeepOperand(Location("arith.py", "body[3].body.body[1].body[0].value"), side="left")
#: clamp's redundant `if low <= x <= high: return x` deleted.
REDUNDANT = DeleteStatement(Location("arith.py", "body[4].body.body[3]"))


def write_program(folder: Path, source: str = ARITH, training: str = TRAINING) -> Program:
    (folder / "tests").mkdir(parents=True)
    (folder / "holdout").mkdir()
    (folder / "arith.py").write_text(source)
    (folder / "tests" / "test_arith.py").write_text(training)
    (folder / "holdout" / "test_arith_holdout.py").write_text(HELD_OUT)
    return Program.load(folder, ["arith.py"], protected=["tests", "holdout"])


def evaluator_for(program: Program) -> Evaluator:
    setup, _ = pytest_setup(program, sys.executable)
    return Evaluator(program, EvaluationSettings(("tests",), holdout=("holdout",), timeout=60, test_timeout=10,
                                                 pytest=setup))  # fmt: skip


def passes(folder: Path, program: Program, variant: Variant, test: str) -> bool:
    """Whether pytest passes the counterexample on a copy of the program with the variant's sources."""
    shutil.copytree(program.root, folder)
    for name, text in variant.sources.items():
        (folder / name).write_text(text)
    (folder / "test_counterexample.py").write_text(test)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_counterexample.py"],
                         cwd=folder, capture_output=True, text=True, check=False)  # fmt: skip
    return run.returncode == 0


def test_simplifications_that_pass_every_test_are_told_apart_by_behaviour(tmp_path: Path) -> None:
    program = write_program(tmp_path / "arith")
    evaluator = evaluator_for(program)
    original = apply(program, Patch())
    variants = [apply(program, Patch((edit,))) for edit in (QUICK_CHECK, NO_CENTURIES, REDUNDANT)]
    try:
        baseline = evaluator.evaluate(original)
        held = HeldOut(evaluator, None, 10)
        for variant, outcomes in zip(variants, held.outcomes(variants), strict=True):
            evaluation = evaluator.evaluate(variant)
            assert evaluation.measures["failed_tests"] == 0, variant.diff()
            blind = not overfits(evaluation.tests, baseline.tests, outcomes, held.baseline)
            assert blind, "the held-out tests see nothing"
        oracle = Oracle(evaluator, None, seconds=240, repairing=False, seed=3)
        verdicts = oracle.check(variants)
    finally:
        evaluator.close()
    prime, leap, redundant = (verdicts[variant.tree_hash] for variant in variants)
    assert prime.verdict == CHANGED and prime.confirmed
    assert prime.counterexample == (
        "from arith import is_prime\n\n\ndef test_is_prime_18():\n    assert is_prime(18) is False\n"
    )
    assert "raises AssertionError on the variant" in prime.why
    assert leap.verdict == CHANGED and leap.confirmed
    assert leap.counterexample is not None and "assert is_leap(100) is False" in leap.counterexample
    assert redundant.verdict == SAME, redundant.why
    assert redundant.functions == ("arith:clamp",) and redundant.inputs_tried > 50
    for name, variant, behaviour in (("prime", variants[0], prime), ("leap", variants[1], leap)):
        assert behaviour.counterexample is not None
        assert passes(tmp_path / f"{name}-original", program, original, behaviour.counterexample)
        assert not passes(tmp_path / f"{name}-variant", program, variant, behaviour.counterexample)
    assert oracle.warnings == []


def test_a_repair_leaves_the_functions_its_failing_tests_reach_to_change(tmp_path: Path) -> None:
    buggy = ARITH.replace("(year % 100 != 0 or year % 400 == 0)", "year % 100 != 0")
    program = write_program(tmp_path / "arith", buggy)
    fix = apply(program, Patch((NO_CENTURIES,)))  # a "repair" of is_leap that the failing test reaches
    simplified = apply(program, Patch((QUICK_CHECK,)))
    evaluator = evaluator_for(program)
    try:
        assert evaluator.evaluate(apply(program, Patch())).measures["failed_tests"] == 1
        oracle = Oracle(evaluator, None, seconds=120, repairing=True, seed=3)
        verdicts = oracle.check([fix, simplified])
        assert "arith:is_leap" in oracle.recording().failing_reach
    finally:
        evaluator.close()
    fixed = verdicts[fix.tree_hash]
    assert fixed.verdict == SAME and fixed.functions == ("arith:is_leap",), fixed
    assert "no crash in" in fixed.why and "drawn calls of is_leap (the failing tests reach it" in fixed.why
    assert verdicts[simplified.tree_hash].verdict == CHANGED


LEAP_TRAINING = """\
from arith import is_leap


def test_a_century_divisible_by_400_is_a_leap_year():
    assert is_leap(2000)


def test_common_years():
    assert is_leap(2024) and not is_leap(2023)


def test_the_answer_is_a_bool():
    assert all(isinstance(is_leap(year), bool) for year in (1900, 2023))
"""


def test_a_repair_keeps_the_original_s_behaviour_on_the_calls_its_passing_tests_make(tmp_path: Path) -> None:
    """The functions a repair's failing tests reach are meant to change, but on the calls its
    passing tests make the original was right: a repair that passes every test yet changes one
    of those (is_leap(1900), which no test checks) is flagged; the repair that restores the rule
    is not."""
    buggy = ARITH.replace("(year % 100 != 0 or year % 400 == 0)", "year % 100 != 0")
    program = write_program(tmp_path / "arith", buggy, LEAP_TRAINING)
    rule = Location("arith.py", "body[3].body.body[1]")
    restored = WriteStatement(rule, "return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)")
    correct = apply(program, Patch((restored,)))
    overfitting = apply(program, Patch((NO_CENTURIES,)))  # year % 4 == 0: 1900 becomes a leap year
    evaluator = evaluator_for(program)
    try:
        assert evaluator.evaluate(apply(program, Patch())).measures["failed_tests"] == 1
        for variant in (correct, overfitting):
            assert evaluator.evaluate(variant).measures["failed_tests"] == 0, variant.diff()
        verdicts = Oracle(evaluator, None, seconds=120, repairing=True, seed=3).check([correct, overfitting])
    finally:
        evaluator.close()
    assert verdicts[correct.tree_hash].verdict == SAME, verdicts[correct.tree_hash]
    flagged = verdicts[overfitting.tree_hash]
    assert flagged.verdict == CHANGED and flagged.confirmed, flagged
    assert flagged.why.startswith("a call a passing training test makes: is_leap(1900) returns False on the original")
    assert flagged.counterexample is not None and "is_leap(1900) is False" in flagged.counterexample
    assert passes(tmp_path / "original", program, apply(program, Patch()), flagged.counterexample)
    assert not passes(tmp_path / "overfitting", program, overfitting, flagged.counterexample)


#: The benchmark's intervals bug: `not start and` keeps every interval but one starting at 0 apart.
INTERVALS = """\
def merge(intervals):
    merged = []
    for start, end in sorted(intervals):
        if not start and (merged and start <= merged[-1][1]):
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def first(intervals):
    return merge(intervals)[0]
"""
INTERVALS_TRAINING = """\
from intervals import first, merge


def test_merge():
    assert merge([(5, 8), (1, 3), (2, 4)]) == [[1, 4], [5, 8]]


def test_first():
    assert first([(1, 2)]) == [1, 2]
"""


def test_a_repair_that_crashes_where_the_original_does_not_is_flagged(tmp_path: Path) -> None:
    """Where a repair's failing tests reach a function and no passing test calls it, the original
    cannot say what is right; but a repair that raises an error of the language (IndexError) where
    the original does not is wrong whatever the right result is. `not start or (...)` passes the
    tests and fails on any list whose first interval starts at 0; the correct repair is left alone."""
    folder = tmp_path / "intervals"
    (folder / "tests").mkdir(parents=True)
    (folder / "intervals.py").write_text(INTERVALS)
    (folder / "tests" / "test_intervals.py").write_text(INTERVALS_TRAINING)
    program = Program.load(folder, ["intervals.py"], protected=["tests"])
    condition = Location("intervals.py", "body[0].body.body[1].body.body[0].test")
    correct = apply(program, Patch((KeepOperand(condition, side="right"),)))
    overfitting = apply(program, Patch((ReplaceOperator(condition, operator="Or"),)))
    setup, _ = pytest_setup(program, sys.executable)
    evaluator = Evaluator(program, EvaluationSettings(("tests",), timeout=60, test_timeout=10, pytest=setup))
    try:
        assert evaluator.evaluate(apply(program, Patch())).measures["failed_tests"] == 1
        for variant in (correct, overfitting):
            assert evaluator.evaluate(variant).measures["failed_tests"] == 0, variant.diff()
        oracle = Oracle(evaluator, None, seconds=120, repairing=True, seed=3)
        verdicts = oracle.check([correct, overfitting])
        assert "intervals:first" not in oracle.recording().failing_reach
    finally:
        evaluator.close()
    assert verdicts[correct.tree_hash].verdict == SAME, verdicts[correct.tree_hash]
    flagged = verdicts[overfitting.tree_hash]
    assert flagged.verdict == CHANGED and flagged.confirmed, flagged
    assert flagged.why.startswith("a crash where the original does not crash, in a function the failing tests reach: ")
    assert "raises IndexError on the variant" in flagged.why
    assert flagged.counterexample is not None and "_does_not_crash():" in flagged.counterexample
    assert "assert" not in flagged.counterexample, "what the buggy original returns is not the judge"
    assert passes(tmp_path / "original", program, apply(program, Patch()), flagged.counterexample)
    assert passes(tmp_path / "correct", program, correct, flagged.counterexample)
    assert not passes(tmp_path / "overfitting", program, overfitting, flagged.counterexample)


LOOKUP = """\
def item(values, index):
    return values[index] if index < len(values) else None
"""
LOOKUP_TRAINING = """\
import pytest

from lookup import item


def test_an_index_past_the_end_is_an_index_error():
    with pytest.raises(IndexError):
        item([1, 2], 5)
"""


def test_an_error_the_failing_tests_ask_for_is_no_crash(tmp_path: Path) -> None:
    """A repair that raises IndexError where the buggy original returned None, as the failing test
    asks, is not flagged for raising it on the other indices past the end."""
    folder = tmp_path / "lookup"
    (folder / "tests").mkdir(parents=True)
    (folder / "lookup.py").write_text(LOOKUP)
    (folder / "tests" / "test_lookup.py").write_text(LOOKUP_TRAINING)
    program = Program.load(folder, ["lookup.py"], protected=["tests"])
    fix = WriteStatement(Location("lookup.py", "body[0].body.body[0]"), "return values[index]")
    correct = apply(program, Patch((fix,)))
    setup, _ = pytest_setup(program, sys.executable)
    evaluator = Evaluator(program, EvaluationSettings(("tests",), timeout=60, test_timeout=10, pytest=setup))
    try:
        assert evaluator.evaluate(apply(program, Patch())).measures["failed_tests"] == 1
        assert evaluator.evaluate(correct).measures["failed_tests"] == 0
        verdict = Oracle(evaluator, None, seconds=60, repairing=True, seed=3).check([correct])[correct.tree_hash]
    finally:
        evaluator.close()
    assert verdict.verdict == SAME, verdict
    assert "no crash in" in verdict.why and verdict.inputs_tried > 10


CONFIG = """\
[experiment]
name = "arith"
seed = 1
output = "{output}"

[program]
root = "{root}"
files = ["arith.py"]

[tests]
train = ["tests"]
holdout = ["holdout"]
timeout = 60
oracle_feedback = true

[objectives]
minimize = ["failed_tests", "complexity", "size"]

[search]
population = 10
generations = 0
"""


@pytest.mark.slow
def test_a_run_reports_each_members_behaviour_and_its_counterexamples_join_the_held_out_tests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_program(tmp_path / "arith")
    config = tmp_path / "arith.toml"
    config.write_text(CONFIG.format(output=tmp_path / "runs", root=tmp_path / "arith"))
    result = run_experiment(load_config(config))
    summary = json.loads((result.folder / "summary.json").read_text())
    verdicts = [member["behaviour"]["verdict"] for member in summary["front"]]
    assert summary["oracle"]["changed"] == verdicts.count(CHANGED) >= 1
    assert summary["oracle"]["same"] == verdicts.count(SAME)
    original = next(member for member in summary["front"] if member["id"] == "original")
    assert original["behaviour"] == {**original["behaviour"], "verdict": NOT_CHECKED, "why": "the original program"}
    changed = next(member for member in summary["front"] if member["behaviour"]["verdict"] == CHANGED)
    assert changed["behaviour"]["confirmed"] is True
    # tests.oracle_feedback: the counterexample joined the held-out tests, which now fail it.
    assert changed["overfits"] is True
    assert [f"test_gi_oracle_1.py::{changed['behaviour']['counterexample'].split('def ')[1].split('(')[0]}"] == [
        test.rpartition("/")[2] for test in changed["holdout"]["regressions"]
    ]
    assert summary["held_out_tests"] == 3 + summary["oracle"]["changed"]
    assert main(["show", str(result.folder), changed["id"]]) == 0
    shown = capsys.readouterr().out
    assert changed["behaviour"]["counterexample"].splitlines()[-1].strip() in shown
    assert "behaviour changed:" in shown
    report = (result.folder / "report.md").read_text()
    assert "Behaviour on inputs no test tries (the oracle): changed" in report


def test_a_spent_budget_leaves_a_member_unchecked_and_unrecorded(tmp_path: Path) -> None:
    program = write_program(tmp_path / "arith")
    evaluator = evaluator_for(program)
    store = RunStore(tmp_path / "store.sqlite")
    measurements = Measurements(store)
    variant = apply(program, Patch((QUICK_CHECK,)))
    try:
        verdict = Oracle(evaluator, measurements, seconds=0.01, repairing=False).check([variant])[variant.tree_hash]
        assert measurements.found("oracle_calls") is None, "nothing was recorded for nothing"
        assert measurements.found(f"oracle:{variant.tree_hash}") is None, "a run with more time judges it"
    finally:
        evaluator.close()
        store.close()
    assert (verdict.verdict, verdict.why) == (NOT_CHECKED, SPENT)


def test_coverage_selects_what_the_oracle_waits_for_and_what_it_records(tmp_path: Path) -> None:
    """With tests.select, a variant's evaluation runs only the tests that reach its edits and takes
    the original's outcomes for the others: that is no proof it keeps them, so the oracle (which
    judges only what keeps every training test) waits for the confirmation by every test. And the
    original's coverage tells which tests call a changed function: only they are recorded."""
    program = write_program(tmp_path / "arith")
    setup, _ = pytest_setup(program, sys.executable)
    evaluator = Evaluator(program, EvaluationSettings(("tests",), timeout=60, select=True, pytest=setup))
    try:
        original = apply(program, Patch())
        baseline = evaluator.evaluate(original)
        evaluator.baseline_tests = baseline.tests
        run, lines = evaluator.line_coverage(original)
        evaluator.coverage = Coverage.of(lines, program.sources, run.outcomes)
        variant = apply(program, Patch((NO_CENTURIES,)))
        selected = evaluator.evaluate(variant)
        confirmed = evaluator.evaluate(variant, every_test=True)
        oracle = Oracle(evaluator, None, seconds=60, repairing=False)
        tests = oracle.tests_to_record([variant])
        recording = oracle.recording(tests)
    finally:
        evaluator.close()
    assert selected.partial and selected.measures["tests_run"] == 1 and selected.measures["failed_tests"] == 0
    assert "selected by coverage" in unchecked_because(selected, baseline)
    assert not confirmed.partial and unchecked_because(confirmed, baseline) == ""
    assert tests == ["tests/test_arith.py::test_leap"]
    assert (recording.passed, recording.failed) == (1, 0)
    assert [call["args"] for call in recording.functions["arith:is_leap"].calls] == [
        [["int", str(year)]] for year in (2024, 2000, 2023)
    ]
    assert recording.functions["arith:is_prime"].calls == (), "test_primes was not run"
