"""A tiny real project and run for the tests of the commands around a run (apply, report)."""

from __future__ import annotations

from pathlib import Path

PROGRAM = """\
def classify(x):
    if x < 0:
        raise ValueError("negative")
    if x == 1:
        return "one"
    if x == 2:
        return "two"
    if x == 3:
        return "three"
    return "many"


def twice(x):
    total = 0
    for _ in range(2):
        total += x
    return total
"""

TESTS = """\
from chain import classify, twice


def test_many():
    assert classify(7) == "many"


def test_twice():
    assert twice(3) == 6
"""

HOLDOUT = """\
import pytest

from chain import classify


def test_negative():
    with pytest.raises(ValueError):
        classify(-1)


def test_one():
    assert classify(1) == "one"
"""


def write_project(folder: Path) -> Path:
    """The project: a chain of `if`s each of which can go without failing the training tests."""
    (folder / "tests").mkdir(parents=True)
    (folder / "holdout").mkdir()
    (folder / "chain.py").write_text(PROGRAM)
    (folder / "tests" / "test_chain.py").write_text(TESTS)
    (folder / "holdout" / "test_chain_holdout.py").write_text(HOLDOUT)
    return folder


def write_config(folder: Path, project: Path, output: Path, *, population: int = 4, generations: int = 2) -> Path:
    config = folder / "chain.toml"
    config.write_text(
        f"""\
[experiment]
name = "chain"
seed = 1
output = "{output}"

[program]
root = "{project}"
files = ["chain.py"]

[tests]
train = ["tests"]
holdout = ["holdout"]

[objectives]
minimize = ["failed_tests", "complexity", "size"]

[search]
population = {population}
generations = {generations}

[mutators]
operators = ["statement_delete"]
fault_localisation = false
"""
    )
    return config
