"""The tests measure, run for real: pytest subprocesses in scratch copies, under limits."""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, cast

import _pytest
import pytest

from gi.engine.sandbox.bubblewrap import bubblewrap_available
from gi.engine.sandbox.limits import Limits
from gi.engine.sandbox.runner import Sandbox
from gi.engine.sandbox.workspace import workspace
from gi.fitness.outcomes import count_failed, overfits, per_test_limits
from gi.fitness.sandboxed import pytest_limits, pytest_plugin
from gi.fitness.tests import TestRun, run_tests

PROGRAM = """\
def add(a, b):
    return a + b
"""

TESTS = """\
import os
import subprocess
import sys
import time

import pytest

from calc import add


def test_passes():
    assert add(1, 2) == 3


def test_fails():
    assert add(1, 2) == 4


@pytest.fixture
def broken():
    raise RuntimeError("setup breaks")


def test_errors(broken):
    pass


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


@pytest.mark.xfail(reason="known bug")
def test_expected_failure():
    assert False


def test_loops_forever():
    if os.environ.get("GI_LOOP") == "1":
        # A child that would outlive the run if only the direct child were killed.
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)  # gi-orphan-marker"])
        while True:
            time.sleep(0.01)


def test_after_the_loop():
    assert add(2, 2) == 4
"""


def checksums(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / "tests").mkdir(parents=True)
    (folder / "calc.py").write_text(PROGRAM)
    (folder / "tests" / "test_calc.py").write_text(TESTS)
    return folder


def run(project: Path, *, timeout: float = 60, loop: bool = False, sources: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    with workspace(project, sources or {}) as space:
        runner = Sandbox(Limits(), space)
        return run_tests(["tests"], timeout=timeout, runner=runner, env={"GI_LOOP": "1" if loop else "0"})


def test_per_test_outcomes(project: Path) -> None:
    before = checksums(project)
    result = run(project)
    assert result.outcomes == {
        "tests/test_calc.py::test_passes": "passed",
        "tests/test_calc.py::test_fails": "failed",
        "tests/test_calc.py::test_errors": "error",
        "tests/test_calc.py::test_skipped": "skipped",
        "tests/test_calc.py::test_expected_failure": "xfailed",
        "tests/test_calc.py::test_loops_forever": "passed",
        "tests/test_calc.py::test_after_the_loop": "passed",
    }
    assert result.exit_status == 1 and not result.timed_out
    assert set(result.durations) == set(result.outcomes)
    assert count_failed(result) == 2  # the failure and the error
    assert checksums(project) == before, "the user's folder must not change"


def orphans() -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if b"gi-orphan-marker" in (entry / "cmdline").read_bytes():
                    found.append(entry.name)
            except OSError:
                continue
    return found


def test_timeout_kills_everything_within_the_limit(project: Path) -> None:
    before = checksums(project)
    started = time.perf_counter()
    result = run(project, timeout=3, loop=True)
    elapsed = time.perf_counter() - started
    assert result.timed_out
    assert elapsed < 3 + 5, f"the limit was 3 s, the run took {elapsed:.1f} s"
    assert result.outcomes["tests/test_calc.py::test_loops_forever"] == "timed_out"
    assert result.outcomes["tests/test_calc.py::test_after_the_loop"] == "not_run"
    assert result.outcomes["tests/test_calc.py::test_passes"] == "passed"
    time.sleep(0.2)
    assert orphans() == [], "a process started by the tests outlived the time limit"
    assert checksums(project) == before


def test_a_variant_that_breaks_imports_fails_every_baseline_test(project: Path) -> None:
    baseline = run(project).outcomes
    broken = run(project, sources={"calc.py": "def add(a, b):\n    return a +\n"})
    assert broken.collect_errors and not broken.outcomes
    assert count_failed(broken, baseline) == len(baseline) - 2  # skipped and xfailed do not count
    assert not broken.forged and broken.exit_status == 1, "the collection error is the run's failure"


def test_after_a_collection_error_no_test_runs_and_the_session_ends_as_failed(project: Path) -> None:
    """pytest runs no test after a collection error; gi's plugin ends the loop there itself, so
    pytest makes no report of an interruption (exit status 1, not 2)."""
    (project / "tests" / "test_alone.py").write_text("def test_alone():\n    assert True\n")
    broken = run(project, sources={"calc.py": "raise RuntimeError('calc does not import')\n"})
    assert list(broken.collect_errors) == ["tests/test_calc.py"]
    assert "calc does not import" in broken.collect_errors["tests/test_calc.py"]
    assert broken.outcomes == {"tests/test_alone.py::test_alone": "not_run"}
    assert not broken.forged and broken.exit_status == 1 and not broken.timed_out


@pytest.mark.skipif(not bubblewrap_available(), reason="bubblewrap is not usable on this machine")
def test_sandboxed_tests_have_no_network(tmp_path: Path) -> None:
    folder = tmp_path / "net"
    (folder / "tests").mkdir(parents=True)
    # In its own network namespace the test sees only a loopback device, none of the host's.
    (folder / "tests" / "test_net.py").write_text(
        "import socket\n\n\ndef test_only_loopback():\n"
        "    assert [name for _, name in socket.if_nameindex()] == ['lo']\n"
    )
    with workspace(folder, {}) as space:
        result = run_tests(["tests"], timeout=60, runner=Sandbox(Limits(), space))
    assert result.outcomes == {"tests/test_net.py::test_only_loopback": "passed"}, result.failure_report()


@pytest.mark.skipif(not bubblewrap_available(), reason="bubblewrap is not usable on this machine")
def test_sandboxed_tests_write_only_their_scratch_copy(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    folder = tmp_path / "writer"
    (folder / "tests").mkdir(parents=True)
    (folder / "tests" / "test_write.py").write_text(
        "import pathlib\nimport tempfile\n\nimport pytest\n\n\ndef test_write():\n"
        f"    with pytest.raises(OSError):\n        pathlib.Path({str(outside)!r}).write_text('x')\n"
        "    with tempfile.NamedTemporaryFile() as scratch:\n        scratch.write(b'fine')\n"
    )
    with workspace(folder, {}) as space:
        result = run_tests(["tests"], timeout=60, runner=Sandbox(Limits(), space))
    assert result.outcomes == {"tests/test_write.py::test_write": "passed"}, result.failure_report()
    assert not outside.exists()


def test_memory_limit_applies(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    (folder / "tests").mkdir(parents=True)
    (folder / "tests" / "test_memory.py").write_text(
        "import pytest\n\n\ndef test_allocates_too_much():\n"
        "    with pytest.raises(MemoryError):\n        bytearray(1024 * 1024 * 1024)\n"
    )
    with workspace(folder, {}) as space:
        result = run_tests(["tests"], timeout=60, runner=Sandbox(Limits(memory_mb=512), space))
    assert result.outcomes == {"tests/test_memory.py::test_allocates_too_much": "passed"}, result.failure_report()


def test_workspace_leaves_nothing_behind(project: Path) -> None:
    with workspace(project, {"calc.py": "x = 1\n"}) as space:
        assert (space.program / "calc.py").read_text() == "x = 1\n"
        assert (project / "calc.py").read_text() == PROGRAM
        parent = space.base
    assert not parent.exists()
    assert os.path.exists(project / "calc.py")


HANGS = """\
import time


def test_quick():
    assert True


def test_hangs_and_swallows_exceptions():
    while True:
        try:
            time.sleep(0.01)
        except Exception:
            pass


def test_after():
    assert True
"""


def _run_with_a_second_per_test(folder: Path, name: str, text: str) -> TestRun:
    """The tests of a project holding tests/`name` (`text`), each limited to 1 s."""
    (folder / "tests").mkdir(parents=True, exist_ok=True)
    (folder / "tests" / name).write_text(text)
    with workspace(folder, {}) as space:
        return run_tests(["tests"], timeout=60, runner=Sandbox(Limits(), space), default_limit=1.0)


def test_a_test_that_hangs_fails_alone(tmp_path: Path) -> None:
    started = time.perf_counter()
    run = _run_with_a_second_per_test(tmp_path / "hangs", "test_hangs.py", HANGS)
    assert time.perf_counter() - started < 30
    assert not run.timed_out and not run.forged
    assert run.outcomes == {
        "tests/test_hangs.py::test_quick": "passed",
        "tests/test_hangs.py::test_hangs_and_swallows_exceptions": "timed_out",
        "tests/test_hangs.py::test_after": "passed",
    }
    assert "time limit of 1 s" in run.failure_report()


def test_a_time_limit_runs_out_in_the_tests_code_not_in_pytests() -> None:
    """The classifier the per-test alarm asks, on real frames: code compiled as pytest's own, as
    the standard library's (which runs for its caller), as gi's plugin's, as a doctest's example
    and as a test's, called from the phase's runner (pytest's CallInfo.from_call; here this
    test's own call phase, or a stand-in compiled as pytest's)."""
    places = pytest_limits.machinery_places(pytest_plugin.__file__)
    stdlib = os.path.join(sysconfig.get_paths()["stdlib"], "codecs.py")
    capture = os.path.join(os.path.dirname(_pytest.__file__), "capture.py")

    def compiled(file: str) -> Callable[[Callable[[], FrameType | None]], FrameType | None]:
        namespace: dict[str, Any] = {}
        exec(compile("def call(inner):\n    return inner()\n", file, "exec"), namespace)
        return cast(Callable[[Callable[[], FrameType | None]], FrameType | None], namespace["call"])

    in_pytest, in_stdlib, in_plugin = compiled(capture), compiled(stdlib), compiled(pytest_plugin.__file__)
    in_doctest = compiled("<doctest calc.add[0]>")
    frame = sys._getframe
    # In this test's call phase: its own code, and what it calls of pytest's and the standard library's.
    assert pytest_limits.in_tests_code(frame(), places)
    assert pytest_limits.in_tests_code(in_pytest(frame), places), "pytest.approx, say, called by the test"
    assert pytest_limits.in_tests_code(in_pytest(functools.partial(in_stdlib, frame)), places)
    assert not pytest_limits.in_tests_code(in_plugin(frame), places), "never in gi's plugin (a record cut in half)"
    # Around the test: pytest's machinery (reading what it captured) between the runner and the test.
    runner = compiled(capture)
    around = places._replace(runner=runner.__code__)
    assert not pytest_limits.in_tests_code(runner(functools.partial(in_pytest, functools.partial(in_stdlib, frame))),
                                           around)  # fmt: skip
    assert pytest_limits.in_tests_code(runner(functools.partial(in_pytest, functools.partial(in_doctest, frame))),
                                       around), "a doctest's example is the test's code"  # fmt: skip


SPINS_IN_PYTEST = """\
import pytest


def test_spins_in_pytests_code():
    while True:
        pytest.approx([1.0] * 1000) == [1.0] * 1000


def test_after():
    assert True
"""


def test_a_test_that_spends_its_time_in_pytests_code_still_times_out(tmp_path: Path) -> None:
    run = _run_with_a_second_per_test(tmp_path / "spins", "test_spins.py", SPINS_IN_PYTEST)
    assert not run.timed_out and not run.forged
    assert run.outcomes == {
        "tests/test_spins.py::test_spins_in_pytests_code": "timed_out",
        "tests/test_spins.py::test_after": "passed",
    }


OUT_OF_THE_ALARMS_REACH = """\
import time

import pytest


def test_swallows_its_timeout():
    try:
        time.sleep(3)
    except BaseException:
        pass


class SlowToFinalise:
    def __del__(self):
        time.sleep(3)


def test_times_out_in_a_finaliser():
    SlowToFinalise()  # its __del__ runs here, where Python prints what it raises and goes on


@pytest.mark.xfail(reason="expected to fail, and slow")
def test_expected_to_fail_runs_out_of_time():
    time.sleep(3)
    assert False


def test_quick_but_reported_slowly():
    assert True


def test_after():
    assert True
"""

SLOW_REPORTING = """\
import time


def pytest_runtest_logreport(report):
    if report.when == "call" and report.nodeid.endswith("reported_slowly"):
        time.sleep(1.5)
"""


def test_a_test_past_its_limit_is_a_timeout_and_pytest_counts_it_failed(tmp_path: Path) -> None:
    """A test that swallowed its timeout, one that timed out in a finaliser (whose exceptions
    Python prints and drops), one expected to fail that ran out of time: timeouts, counted
    failed by pytest too, so the report agrees with pytest (never tampered: a hostile run under
    load was, once); a test whose report a hook of the project's makes slowly is not timed out
    in the hook's code."""
    (tmp_path / "limits" / "tests").mkdir(parents=True)
    (tmp_path / "limits" / "tests" / "conftest.py").write_text(SLOW_REPORTING)
    run = _run_with_a_second_per_test(tmp_path / "limits", "test_limits.py", OUT_OF_THE_ALARMS_REACH)
    assert not run.forged and not run.timed_out
    assert run.outcomes == {
        "tests/test_limits.py::test_swallows_its_timeout": "timed_out",
        "tests/test_limits.py::test_times_out_in_a_finaliser": "timed_out",
        "tests/test_limits.py::test_expected_to_fail_runs_out_of_time": "timed_out",
        "tests/test_limits.py::test_quick_but_reported_slowly": "passed",
        "tests/test_limits.py::test_after": "passed",
    }
    assert run.exit_status == 1, "pytest counts them failed"


IN_C_CODE = """\
def test_in_c_code():
    sum(range(10**12))


def test_after():
    assert True
"""


def test_a_test_the_alarm_cannot_interrupt_is_stopped_at_its_hard_deadline(tmp_path: Path) -> None:
    """C code never returns to Python for the alarm to raise: the watchdog stops the run at the
    test's hard deadline, long before the whole run's limit, and says so."""
    run = _run_with_a_second_per_test(tmp_path / "c", "test_c.py", IN_C_CODE)
    assert not run.forged
    assert run.outcomes == {"tests/test_c.py::test_in_c_code": "timed_out", "tests/test_c.py::test_after": "not_run"}
    assert run.timed_out and "test_in_c_code ran past its time limit of 1 s" in run.stopped, run.stopped
    assert "could not interrupt" in run.failure_report()


def test_per_test_limits_come_from_the_originals_times() -> None:
    limits = per_test_limits({"a": 0.01, "b": 5.0}, cap=10.0)
    assert limits == {"a": pytest.approx(0.6), "b": 10.0}


PASS, FAIL, SKIP = "passed", "failed", "skipped"


def test_one_definition_of_overfitting() -> None:
    training = {"t1": PASS, "t2": PASS, "t3": SKIP}
    holdout = {"h1": PASS, "h2": FAIL}  # the original fails h2 already
    assert not overfits(training, training, holdout, holdout), "the original never overfits"
    # A skipped training test does not hide a member that loses a held-out test the original passes.
    assert overfits(training, training, {"h1": FAIL, "h2": FAIL}, holdout)
    # Failing a held-out test the original fails too is no overfitting.
    assert not overfits(training, training, {"h1": PASS, "h2": FAIL}, holdout)
    # Losing a training test is no overfitting either: the member is simply worse.
    assert not overfits({"t1": FAIL, "t2": PASS, "t3": SKIP}, training, {"h1": FAIL, "h2": FAIL}, holdout)
    # A repair (the original fails training tests): a member passing them all that fails any
    # held-out test overfits; the original does not.
    broken = {"t1": PASS, "t2": FAIL}
    assert not overfits(broken, broken, holdout, holdout)
    assert overfits({"t1": PASS, "t2": PASS}, broken, holdout, holdout)
    assert not overfits({"t1": PASS, "t2": PASS}, broken, {"h1": PASS, "h2": PASS}, holdout)


OWN_ALARM = """\
import signal
import time


def test_sets_and_cancels_its_own_alarm_then_hangs():
    signal.signal(signal.SIGALRM, lambda signum, frame: None)
    signal.alarm(100)
    signal.alarm(0)
    while True:
        time.sleep(0.01)


def test_after():
    assert True
"""


def test_a_test_that_cancels_an_alarm_of_its_own_still_times_out(tmp_path: Path) -> None:
    run = _run_with_a_second_per_test(tmp_path / "alarm", "test_alarm.py", OWN_ALARM)
    assert not run.timed_out and not run.forged
    assert run.outcomes == {
        "tests/test_alarm.py::test_sets_and_cancels_its_own_alarm_then_hangs": "timed_out",
        "tests/test_alarm.py::test_after": "passed",
    }


def test_pytest_timeout_in_signal_mode_leaves_gis_limit_alone(tmp_path: Path) -> None:
    """pytest-timeout (installed beside pytest here) times each test with SIGALRM in signal mode:
    gi's per-test limit of 1 s still ends the hanging test, long before pytest-timeout's 50 s."""
    folder = tmp_path / "timeout"
    folder.mkdir()
    (folder / "pytest.ini").write_text("[pytest]\ntimeout = 50\ntimeout_method = signal\n")
    run = _run_with_a_second_per_test(folder, "test_hangs.py", HANGS)
    assert not run.timed_out and not run.forged
    assert run.outcomes["tests/test_hangs.py::test_hangs_and_swallows_exceptions"] == "timed_out"
    assert run.outcomes["tests/test_hangs.py::test_after"] == "passed"
