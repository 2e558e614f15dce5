"""The runtime measure with real pyperf worker processes, and the statistics on top."""

from __future__ import annotations

import math
from pathlib import Path

import pyperf
import pytest

from gi.engine.sandbox.limits import Limits
from gi.engine.sandbox.runner import Sandbox
from gi.engine.sandbox.workspace import workspace
from gi.fitness.objectives import Constraint, violation
from gi.fitness.runtime import (
    Timing,
    TimingSettings,
    Workload,
    WorkloadError,
    clock_loops,
    compare,
    loops_for,
    measure,
    output_of,
    profile,
    timing_cpu,
    unseen_speed,
)

PROGRAM = """\
def helper(n):
    return sum(i * i for i in range(n))


def slow():
    return [helper(2000) for _ in range(20)]


def broken():
    raise RuntimeError("the workload breaks")
"""

QUICK = TimingSettings(processes=2, values=2, warmups=1, min_time=0.01)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "work.py").write_text(PROGRAM)
    return folder


def test_compare_tells_equal_from_different() -> None:
    same = Timing((1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99), 1)
    half = Timing((0.5, 0.51, 0.49, 0.5, 0.52, 0.48, 0.5, 0.51), 1)
    equal = compare(same, same)
    assert equal.value == pytest.approx(1.0) and not equal.significant
    faster = compare(same, half)
    assert faster.significant and faster.low > 1.8 and faster.high < 2.2 and faster.value == pytest.approx(2.0, 0.02)
    slower = compare(half, same)
    assert slower.significant and slower.high < 1
    assert compare(same, half, seed=3) == compare(same, half, seed=3)


def test_too_few_processes_are_never_significant() -> None:
    assert not compare(Timing((1.0,), 1), Timing((0.1,), 1)).significant


def test_measure_runs_pyperf_workers(project: Path) -> None:
    with workspace(project, {}) as space:
        runner = Sandbox(Limits(), space)
        timing = measure(Workload(call="work:slow"), QUICK, runner=runner, timeout=120)
        assert len(timing.process_means) == 2 and timing.loops >= 1
        assert 0 < timing.median < 1
        fixed = measure(Workload(call="work:slow"), QUICK, runner=runner, timeout=120, loops=3)
        assert fixed.loops == 3
        # The workers ran pinned to one CPU, so none moved between cores mid-value.
        recorded = pyperf.Benchmark.load(str(space.outputs / "timing.json")).get_metadata()
        cpu = timing_cpu()
        assert recorded.get("cpu_affinity") == (str(cpu) if cpu is not None else None)


def test_loops_make_a_value_last_the_minimum_time() -> None:
    rigorous = TimingSettings(processes=30, min_time=0.1)
    assert loops_for(Timing((0.0012, 0.001, 0.0011), 8), rigorous) == 100  # from the fastest process
    assert loops_for(Timing((0.0003,), 300), rigorous) * 0.0003 >= 0.1
    assert loops_for(Timing((2.0,), 1), rigorous) == 1


def test_output_and_profile_of_a_call(project: Path) -> None:
    with workspace(project, {}) as space:
        runner = Sandbox(Limits(), space)
        assert output_of(Workload(call="work:slow"), runner=runner, timeout=60).startswith("[2664667000, ")
        spent = profile(Workload(call="work:slow"), ["work.py"], runner=runner, timeout=60)
        # Functions by their first line; comprehensions show up as code objects of their own.
        assert {("work.py", 1), ("work.py", 5)} <= set(spent) <= {("work.py", line) for line in (1, 2, 5, 6)}
        assert spent[("work.py", 5)] >= spent[("work.py", 1)] > 0  # cumulative: slow() includes helper()


def test_a_command_workload(project: Path) -> None:
    command = Workload(command=("python3", "-c", "import work; print(len(work.slow()))"))
    with workspace(project, {}) as space:
        runner = Sandbox(Limits(), space)
        assert output_of(command, runner=runner, timeout=60) == "20\n"
        assert measure(command, QUICK, runner=runner, timeout=120).median > 0


def test_a_failing_workload_is_a_clear_error(project: Path) -> None:
    with workspace(project, {}) as space:
        runner = Sandbox(Limits(), space)
        with pytest.raises(WorkloadError, match="the workload breaks"):
            output_of(Workload(call="work:broken"), runner=runner, timeout=60)
        with pytest.raises(WorkloadError, match="timing the workload failed"):
            measure(Workload(call="work:broken"), QUICK, runner=runner, timeout=60)


def test_a_workload_is_a_call_or_a_command() -> None:
    with pytest.raises(ValueError, match="either a call or a command"):
        Workload()
    with pytest.raises(ValueError, match="either a call or a command"):
        Workload(call="a:b", command=("x",))


def test_changed_output_makes_a_variant_infeasible() -> None:
    measures = {"failed_tests": 0.0, "output_differs": 1.0}
    assert violation(Constraint.TRAIN_PASS, measures, ok=True, test_count=4) == 1.0
    assert violation(Constraint.NONE, measures, ok=True, test_count=4) == 1.0
    assert violation(Constraint.TRAIN_PASS, {"failed_tests": 0.0}, ok=True, test_count=4) == 0.0


PAIR = TimingSettings(processes=2, values=3, warmups=1)


def session(claimed: float, *seconds: float) -> Timing:
    """A member's session: four processes' values of `claimed` s a call, commands of 1,000 loops."""
    return Timing((claimed,) * 4, 1000, tuple((1000, each) for each in seconds))


def test_the_clocks_commands_run_as_many_more_calls_as_the_values_say_take_two_seconds() -> None:
    """8 calls a loop (2 processes x 4 values); at 0.1 ms a call, 2 s is 2,500 more loops."""
    assert clock_loops(session(1e-4, 1.0, 1.1), PAIR) == 1000 + 2500
    assert clock_loops(session(1e-4 / 3, 1.0, 1.1), PAIR) == 1000 + 7500, "a forgery pays its claims in real time"
    assert clock_loops(session(0.0, 1.0, 1.1), PAIR) == 1000 + 1000 * 1000, "bounded"


def test_gis_clock_on_longer_commands_holds_the_values_to_what_calls_cost() -> None:
    """20,000 extra calls (8 a loop x 2,500 more loops) take gi's clock 2 s beyond the session's
    commands: values of 0.1 ms a call agree; values of a third of that are a speed-up the clock
    does not see; a clock command that ran out of time sees one too."""
    short = (1.30, 1.36, 1.33, 1.31)
    assert unseen_speed(session(1e-4, *short), [(3500, 3.32), (3500, 3.40)], PAIR) == ""
    forged = unseen_speed(session(1e-4 / 3, *short), [(3500, 3.32), (3500, 3.40)], PAIR)
    assert "20000 extra timed calls took gi's clock 2 s" in forged, forged
    timed_out = unseen_speed(session(1e-4, *short), [(3500, math.inf)], PAIR)
    assert "took gi's clock more than its time limit" in timed_out, timed_out


def test_a_difference_the_sessions_noise_could_make_refutes_nothing() -> None:
    """The same 2 s, beside session commands whose times spread by a second: no verdict; and a
    fast variant's few milliseconds of extra calls refute nothing either."""
    noisy = (0.5, 1.5, 2.3, 1.0)
    assert unseen_speed(session(1e-4 / 3, *noisy), [(3500, 3.2), (3500, 3.3)], PAIR) == ""
    assert unseen_speed(session(1e-7, 1.30, 1.40, 1.35), [(11000, 1.42)], PAIR) == ""


def test_without_two_session_commands_and_a_clock_command_nothing_is_held() -> None:
    assert unseen_speed(session(1e-5, 1.3), [(3500, 9.0)], PAIR) == ""
    assert unseen_speed(session(1e-5, 1.3, 1.4), [], PAIR) == ""
