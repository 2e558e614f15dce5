"""Figures a run reports are true: no speed-up from editing the benchmark itself, behaviour
checked by default, and a program whose bug is an endless loop in one test can be repaired."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gi.cli.main import main
from gi.engine.sandbox.limits import Limits
from gi.engine.sandbox.runner import Sandbox
from gi.engine.sandbox.workspace import workspace
from gi.engine.timing import workload_functions
from gi.fitness.runtime import BehaviourCheck, Workload, output_of
from gi.model.program import Program

BENCH = """\
def slow_sum(values):
    total = 0
    for value in values:
        total = total + value
    return total


def make_data():
    return list(range(6000))


def workload():
    data = make_data()
    for _ in range(20):
        slow_sum(data)
"""

BENCH_TESTS = """\
from bench import slow_sum


def test_sum():
    assert slow_sum([1, 2, 3]) == 6


def test_empty():
    assert slow_sum([]) == 0
"""


def test_the_workload_and_what_only_it_calls_are_protected(tmp_path: Path) -> None:
    (tmp_path / "bench.py").write_text(BENCH)
    program = Program.load(tmp_path, ["bench.py"])
    assert workload_functions(program, "bench:workload", BENCH_TESTS) == {"workload", "make_data"}
    assert workload_functions(program, "other:workload", BENCH_TESTS) == frozenset()  # not an editable file
    assert workload_functions(program, None, "") == frozenset()


def test_the_behaviour_check_sees_what_the_code_returns_to_a_silent_workload(tmp_path: Path) -> None:
    """`workload` returns None whatever slow_sum computes: the check compares the values
    slow_sum returns to it, so a variant that breaks slow_sum only on big inputs is caught."""
    (tmp_path / "bench.py").write_text(BENCH)
    broken = BENCH.replace("    return total\n", "    return total if len(values) < 100 else 0\n", 1)
    outputs = []
    for source in (BENCH, BENCH, broken):
        with workspace(tmp_path, {"bench.py": source}) as space:
            runner = Sandbox(Limits(), space)
            check = BehaviourCheck(files=("bench.py",), inside=("workload", "make_data"))
            outputs.append(output_of(Workload(call="bench:workload"), runner=runner, timeout=60, check=check))
    assert outputs[0] == outputs[1], "the check must be stable from run to run"
    assert outputs[0] != outputs[2]
    assert outputs[0].startswith("None\nreturns to the workload: 20,")


@pytest.mark.slow
def test_a_workload_in_the_editable_file_gives_no_speed_up_from_editing_it(tmp_path: Path) -> None:
    """The workload returns nothing, so only the values slow_sum returns to it can catch a
    variant that breaks slow_sum; and no edit may touch `workload` or `make_data` themselves
    (turning range(6000) into range(0) there would be a 'speed-up' of thousands)."""
    project = tmp_path / "bench"
    (project / "tests").mkdir(parents=True)
    (project / "bench.py").write_text(BENCH)
    (project / "tests" / "test_bench.py").write_text(BENCH_TESTS)
    config = tmp_path / "bench.toml"
    config.write_text("""\
[experiment]
name = "bench"
seed = 1
output = "runs"

[program]
root = "bench"
files = ["bench.py"]

[tests]
train = ["tests"]

[objectives]
minimize = ["failed_tests", "runtime"]

[search]
population = 8
generations = 2

[mutators]
operators = ["constant", "statement_delete", "binary_operator"]

[workload]
call = "bench:workload"
screening_processes = 1
rigorous_processes = 4
""")
    assert main(["run", str(config), "--quiet"]) == 0
    summary = json.loads((tmp_path / "runs" / "bench-seed1" / "summary.json").read_text())
    assert summary["protected_functions"] == ["make_data", "workload"]
    assert any("lives in an editable file" in warning for warning in summary["warnings"])
    for member in summary["front"]:
        for edit in member["edits"]:
            line = edit["target"]["path"]
            assert not line.startswith(("body[1]", "body[2]")), f"{member['id']} edits the benchmark: {edit}"
        speedup = member.get("speedup") or {}
        assert not speedup.get("value", 1) > 3, f"{member['id']} claims {speedup}"


LOOPS = """\
def total(values):
    result = 0
    i = 0
    while i < len(values):
        result += values[i]
        if values[i] < 0:
            i += 0
        else:
            i += 1
    return result
"""

LOOPS_TESTS = """\
from loops import total


def test_positive():
    assert total([1, 2, 3]) == 6


def test_empty():
    assert total([]) == 0


def test_negative():
    assert total([1, -2, 3]) == 2
"""


@pytest.mark.slow
def test_a_program_that_loops_forever_on_one_test_is_repaired(tmp_path: Path) -> None:
    project = tmp_path / "loops"
    (project / "tests").mkdir(parents=True)
    (project / "loops.py").write_text(LOOPS)
    (project / "tests" / "test_loops.py").write_text(LOOPS_TESTS)
    config = tmp_path / "loops.toml"
    config.write_text("""\
[experiment]
name = "loops"
seed = 1
output = "runs"

[program]
root = "loops"
files = ["loops.py"]

[tests]
train = ["tests"]
timeout = 30
test_timeout = 0.5   # the tests take microseconds; each variant that loops waits this long
# The original loops on the negative inputs the behaviour oracle draws, each call waiting out
# its limit, so the oracle spends all the seconds it has: a minute by default.
oracle_seconds = 10

[objectives]
minimize = ["failed_tests", "size"]
constraint = "none"

[search]
population = 8
generations = 3

[mutators]
operators = ["constant", "statement_replace"]
""")
    assert main(["run", str(config), "--quiet"]) == 0
    summary = json.loads((tmp_path / "runs" / "loops-seed1" / "summary.json").read_text())
    assert summary["baseline"]["objectives"]["failed_tests"] == 1  # the endless test, cut off alone
    repaired = [m for m in summary["front"] if m["objectives"]["failed_tests"] == 0]
    assert repaired, summary["front"]
    assert summary["timed_out_share"] > 0.1  # the endless test times out in most variants, and the run says so
    assert any("ran into a time limit" in warning for warning in summary["warnings"])
