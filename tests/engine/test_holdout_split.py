"""Held-out tests by a seeded split of the training tests' ids (tests.holdout_fraction)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gi.config import load_config
from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.engine.held_out import defined_tests, held_out_split, training_copies, without_tests
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.run.experiment import Experiment

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"

IDS = [f"tests/test_m.py::test_{n}" for n in range(10)]


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """A project whose one test file defines the ten tests of IDS."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_m.py").write_text("".join(f"def test_{n}():\n    pass\n\n\n" for n in range(10)))
    return tmp_path


def test_a_seed_gives_one_split_of_every_id(suite: Path) -> None:
    split = held_out_split(IDS, 0.3, 4, suite)
    train, held = split["train"], split["holdout"]
    assert len(held) == 3 and sorted([*train, *held]) == sorted(IDS) and split["by"] == "tests"
    assert held_out_split(reversed(IDS), 0.3, 4, suite) == split, "the order ids come in does not matter"
    others = {tuple(held_out_split(IDS, 0.3, seed, suite)["holdout"]) for seed in range(10)}
    assert others != {tuple(held)}, "the seed decides"


def test_a_split_keeps_one_test_on_each_side(suite: Path) -> None:
    assert [len(held_out_split(IDS[:2], 0.01, 0, suite)[part]) for part in ("train", "holdout")] == [1, 1]
    assert [len(held_out_split(IDS[:2], 0.99, 0, suite)[part]) for part in ("train", "holdout")] == [1, 1]


def test_the_split_tests_run_only_as_held_out(tmp_path: Path) -> None:
    text = (EXPERIMENTS / "grading.toml").read_text()
    text = text.replace('root = "programs/grading"', f'root = "{EXPERIMENTS / "programs" / "grading"}"')
    text = text.replace('output = "runs"', f'output = "{tmp_path}"')
    text = text.replace("timeout = 10 ", "timeout = 60 ")  # (the split's collection is one whole run, under any load)
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


#: A `double` that reads the test file beside it and goes wrong where it finds a held-out test.
READER = """\
import os


def double(x):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests", "test_calc.py")
    with open(path) as stream:
        text = stream.read()
    return 2 * x + ("test_negative" in text)
"""


@pytest.mark.parametrize(("engine", "holdout_engine"), [("cold", "cold"), ("warm", "cold"), ("warm", "warm")])
def test_tests_split_off_within_a_file_are_in_no_training_copy(
    tmp_path: Path, engine: str, holdout_engine: str
) -> None:
    """The training copies, cold and warm, hold the test file without the held-out tests (a
    variant that reads it finds none of them); the held-out run has the whole file, cold or in
    a warm worker of its own."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "calc.py").write_text("def double(x):\n    return 2 * x\n")
    (tmp_path / "tests" / "test_calc.py").write_text(SPLIT_TESTS)
    program = Program.load(tmp_path, ["calc.py"], protected=["tests"])
    split = held_out_split([f"tests/test_calc.py::test_{name}" for name in ("one", "two", "negative")], 0.3, 3,
                           tmp_path)  # fmt: skip
    assert split["by"] == "tests" and len(split["holdout"]) == 1
    held = ("tests/test_calc.py::test_negative",)
    train = ("tests/test_calc.py::test_one", "tests/test_calc.py::test_two")
    copies = training_copies(tmp_path, held)
    settings = EvaluationSettings(train=train, holdout_ids=held, training_files=copies, engine=engine,
                                  holdout_engine=holdout_engine)  # fmt: skip
    evaluator = Evaluator(program, settings)
    evaluator.judged = True  # the guard would refuse `open` as a model's: the copies are what is tested
    reader = Variant(program, Patch(), {"calc.py": READER}, ())
    try:
        trained = evaluator.evaluate(reader)
        original, judged = evaluator.holdout(apply(program, Patch())), evaluator.holdout(reader)
        started, held_started = evaluator.warm_started, evaluator.warm_holdout_started
    finally:
        evaluator.close()
    assert trained.measures["failed_tests"] == 0, "a training copy held the held-out test"
    assert started == (1 if engine == "warm" else 0)
    assert held_started == (1 if holdout_engine == "warm" else 0), "the held-out tests have workers of their own"
    assert original.outcomes == dict.fromkeys(held, "passed")
    assert judged.outcomes == dict.fromkeys(held, "failed"), "the held-out copy holds the whole file"


def test_a_suite_of_enough_files_is_split_by_whole_files(tmp_path: Path) -> None:
    ids = [f"tests/test_{file}.py::test_{n}" for file in "abcdef" for n in range(3)]
    split = held_out_split(ids, 0.2, 7, tmp_path)
    files = {test.partition("::")[0] for test in split["holdout"]}
    assert split["by"] == "files" and 1 <= len(files) < 6
    assert not files & {test.partition("::")[0] for test in split["train"]}


def test_a_file_without_the_held_out_tests_keeps_its_lines_and_the_rest() -> None:
    text = "import pytest\n\n\n@pytest.mark.parametrize('v', [1, 2])\ndef test_a(v):\n    assert v\n\n\n" \
        "class TestB:\n    def test_c(self):\n        assert 1\n\n\ndef test_d():\n    assert 2\n"  # fmt: skip
    assert defined_tests(text) == {"test_a", "TestB::test_c", "test_d"}
    kept = without_tests(text, {"test_a", "TestB::test_c"})
    assert len(kept.splitlines()) == len(text.splitlines()) and "test_a" not in kept and "test_c" not in kept
    assert defined_tests(kept) == {"test_d"} and "class TestB:\n    pass" in kept
