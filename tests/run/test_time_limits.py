"""Time limits that cannot trap the original: a training test that loops forever on the
original counts as failing, and the repair goes on (issue 28)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gi.config import load_config
from gi.fitness.outcomes import TEST_SHARE, one_test_limit
from gi.run.experiment import run_experiment

SOURCE = '''\
"""Sums of ranges."""


def countdown_sum(n):
    """n + (n - 1) + ... + 1."""
    total = 0
    while n > 0:
        total += n
        n += 1
    return total


def even_sum(n):
    """2 + 4 + ... up to n."""
    return sum(range(2, n + 1, 2))
'''
TESTS = """\
from sums import countdown_sum, even_sum


def test_zero():
    assert countdown_sum(0) == 0


def test_three():
    assert countdown_sum(3) == 6


def test_two():
    assert countdown_sum(2) == 3


def test_even():
    assert even_sum(6) == 12
"""
HOLDOUT = """\
from sums import countdown_sum


def test_four():
    assert countdown_sum(4) == 10
"""
CONFIG = """\
[experiment]
name = "hang"
seed = 1
output = "runs"

[program]
root = "program"
files = ["sums.py"]

[tests]
train = ["tests"]
holdout = ["holdout"]
timeout = 5
{test_timeout}
[objectives]
minimize = ["failed_tests", "size"]
constraint = "none"

[search]
algorithm = "neighbourhood"
population = 4
generations = 2

[mutators]
operators = ["binary_operator", "constant"]
"""


def project(folder: Path, test_timeout: str = "") -> Path:
    (folder / "program" / "tests").mkdir(parents=True)
    (folder / "program" / "holdout").mkdir()
    (folder / "program" / "sums.py").write_text(SOURCE)
    (folder / "program" / "tests" / "test_sums.py").write_text(TESTS)
    (folder / "program" / "holdout" / "test_sums_holdout.py").write_text(HOLDOUT)
    config = folder / "hang.toml"
    config.write_text(CONFIG.format(test_timeout=test_timeout))
    return config


def test_a_test_never_takes_more_than_its_share_of_the_whole_run() -> None:
    assert one_test_limit(10, 5) == TEST_SHARE * 5
    assert one_test_limit(1, 60) == 1


# Exhaustive: tests/engine/test_honest_figures.py repairs an original that loops forever in one test.
@pytest.mark.slow
@pytest.mark.exhaustive
def test_an_original_that_loops_forever_in_two_tests_is_repaired(tmp_path: Path) -> None:
    """Two training tests loop forever: with `timeout = 5` and the default per-test limit (10 s,
    cut to 2.5 s) the whole run is cut off in the second; the original is run again with those
    tests limited, they count as failing, and the repair `n -= 1` is found."""
    summary = run_experiment(load_config(project(tmp_path))).summary
    assert summary["baseline"]["training"]["failed"] == 2
    assert any("they count as failing" in warning for warning in summary["warnings"])
    assert not any("warm path gave the original other outcomes" in warning for warning in summary["warnings"])
    repairs = [member for member in summary["front"] if member["training"]["failed"] == 0]
    assert repairs and repairs[0]["holdout"]["failed"] == 0
    assert len(repairs[0]["edits"]) == 1


def test_limits_that_contradict_are_one_line(tmp_path: Path) -> None:
    """A per-test limit longer than its share of the whole run's is said once, with what gi uses."""
    config = load_config(project(tmp_path, "test_timeout = 10\n"))
    from gi.run.experiment import Experiment
    from gi.run.original import limits_warning

    experiment = Experiment(config)
    try:
        limits_warning(experiment.config, experiment.evaluator, experiment.progress)
        (line,) = experiment.progress.warnings
        assert "tests.test_timeout = 10 is more than 50% of tests.timeout = 5" in line
        assert "at most 2.5 s" in line
    finally:
        experiment.close()
