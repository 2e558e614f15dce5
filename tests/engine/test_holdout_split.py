"""Held-out tests by a seeded split of the training tests' ids (tests.holdout_fraction)."""

from __future__ import annotations

from pathlib import Path

from gi.config import load_config
from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.engine.held_out import split_tests
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.run.experiment import Experiment

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"

IDS = [f"tests/test_m.py::test_{n}" for n in range(10)]


def test_a_seed_gives_one_split_of_every_id() -> None:
    train, held = split_tests(IDS, 0.3, seed=4)
    assert len(held) == 3 and sorted(train + held) == sorted(IDS)
    assert split_tests(reversed(IDS), 0.3, seed=4) == (train, held), "the order ids come in does not matter"
    assert {tuple(split_tests(IDS, 0.3, seed)[1]) for seed in range(10)} != {tuple(held)}, "the seed decides"


def test_a_split_keeps_one_test_on_each_side() -> None:
    assert [len(part) for part in split_tests(IDS[:2], 0.01, seed=0)] == [1, 1]
    assert [len(part) for part in split_tests(IDS[:2], 0.99, seed=0)] == [1, 1]


def test_the_split_tests_run_only_as_held_out(tmp_path: Path) -> None:
    text = (EXPERIMENTS / "grading.toml").read_text()
    text = text.replace('root = "programs/grading"', f'root = "{EXPERIMENTS / "programs" / "grading"}"')
    text = text.replace('output = "runs"', f'output = "{tmp_path}"')
    text = text.replace('holdout = ["holdout"]', "holdout_fraction = 0.5")
    path = tmp_path / "split.toml"
    path.write_text(text)
    experiment = Experiment(load_config(path))
    try:
        baseline = experiment.reopen()
        assert experiment.held_out is not None
        held = experiment.held_out.baseline
        split = experiment.measurements.found("holdout_split")
    finally:
        experiment.close()
    assert set(baseline.tests) == set(split["train"]) and set(held) == set(split["holdout"])
    assert len(held) == 2 and not set(held) & set(baseline.tests)
    assert all(outcome == "passed" for outcome in held.values())


SPLIT_TESTS = """\
from calc import double


def test_one():
    assert double(1) == 2


def test_two():
    assert double(2) == 4


def test_negative():
    assert double(-3) == -6
"""


def test_split_off_tests_run_in_the_warm_workers_with_the_cold_verdicts(tmp_path: Path) -> None:
    """Held-out tests split off the training files lie in the warm workers' copies: they run
    there, and say what a cold run of them says, on the original and on a variant."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "calc.py").write_text("def double(x):\n    return 2 * x\n")
    (tmp_path / "tests" / "test_calc.py").write_text(SPLIT_TESTS)
    program = Program.load(tmp_path, ["calc.py"], protected=["tests"])
    variant = Variant(program, Patch(), {"calc.py": "def double(x):\n    return abs(2 * x)\n"}, ())
    held = ("tests/test_calc.py::test_two", "tests/test_calc.py::test_negative")
    runs = {}
    for engine in ("warm", "cold"):
        settings = EvaluationSettings(train=("tests/test_calc.py::test_one",), holdout_ids=held, engine=engine)
        evaluator = Evaluator(program, settings)
        try:
            runs[engine] = [evaluator.holdout(apply(program, Patch())), evaluator.holdout(variant)]
            started = evaluator.warm_started
        finally:
            evaluator.close()
        assert started == (1 if engine == "warm" else 0)
    assert [run.outcomes for run in runs["warm"]] == [run.outcomes for run in runs["cold"]]
    assert runs["warm"][0].outcomes == dict.fromkeys(held, "passed")
    assert runs["warm"][1].outcomes == {held[0]: "passed", held[1]: "failed"}
