"""Differential held-out checks (tests.differential) on a speed example: the training tests
only check properties of the results, so a "speed-up" that deletes the work passes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from gi.config import load_config
from gi.fitness.outcomes import overfits, regressions
from gi.model.edits import DeleteStatement
from gi.model.patch import Patch, apply
from gi.model.sites import Location
from gi.run.experiment import Experiment

STATS = '''\
"""Summary statistics."""


def mean(values):
    """The arithmetic mean; 0.0 for no values."""
    total = 0.0
    for value in values:
        total += value
    if not values:
        return 0.0
    return total / len(values)


def spread(values):
    """The largest value minus the smallest; 0 for no values."""
    if not values:
        return 0
    return max(values) - min(values)
'''

WORKLOAD = """\
from stats import mean

VALUES = [float(i % 97) for i in range(20000)]


def run():
    mean(VALUES)
"""

TESTS = """\
from stats import mean, spread


def test_mean_is_a_float():
    assert isinstance(mean([1, 2, 3]), float)


def test_mean_of_nothing():
    assert mean([]) == 0.0


def test_spread_is_never_negative():
    assert spread([5, 1, 3]) >= 0
"""

CONFIG = """\
[experiment]
name = "stats-speed"
output = "{output}"

[program]
root = "{root}"
files = ["stats.py"]

[tests]
train = ["tests"]
differential = true
differential_inputs = {{ "stats:spread" = [[[2, 9, 4]]] }}
timeout = 10

[objectives]
minimize = ["failed_tests", "runtime", "size"]

[workload]
call = "workload:run"
check_output = false   # the workload's result is not compared: the differential checks are
"""

NO_LOOP = DeleteStatement(Location("stats.py", "body[1].body.body[2]"))  # mean's summing loop
NO_DOCSTRING = DeleteStatement(Location("stats.py", "body[2].body.body[0]"))


# Not `timing`: the deleted loop is the whole workload (a 2500x speed-up, with two busy
# processes beside it), and the test asserts only that it is faster at all.
@pytest.mark.slow
def test_differential_checks_flag_a_speed_up_that_changes_results(tmp_path: Path) -> None:
    root = tmp_path / "stats"
    (root / "tests").mkdir(parents=True)
    for name, text in (("stats.py", STATS), ("workload.py", WORKLOAD), ("tests/test_stats.py", TESTS)):
        (root / name).write_text(text)
    config = tmp_path / "stats.toml"
    config.write_text(CONFIG.format(output=tmp_path / "runs", root=root))
    experiment = Experiment(load_config(config))
    try:
        baseline = experiment.reopen()
        cases = experiment.measurements.found("differential_cases")
        assert ["stats", "mean", "([1, 2, 3],)", "returns 2.0"] in cases, "an input a training test gives"
        assert ["stats", "spread", "([2, 9, 4],)", "returns 7"] in cases, "the input the config lists"
        assert experiment.held_out is not None
        original = experiment.held_out.baseline
        assert len(original) == len(cases) and set(original.values()) == {"passed"}

        variants = [apply(experiment.program, Patch((edit,))) for edit in (NO_LOOP, NO_DOCSTRING)]
        faster, harmless = experiment.measure(variants, "test")
        assert faster.measures["failed_tests"] == 0, "every training test passes without the loop"
        assert faster.measures["runtime"] < 1, "and the workload runs faster"
        held = experiment.held_out.outcomes(variants)
    finally:
        experiment.close()
    assert [test.rpartition("[")[2] for test in regressions(held[0], original)] == ["mean-0]"]
    assert overfits(faster.tests, baseline.tests, held[0], original)
    assert not overfits(harmless.tests, baseline.tests, held[1], original)
