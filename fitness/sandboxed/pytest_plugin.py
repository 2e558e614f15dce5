"""gi's pytest plugin, loaded into every test run gi starts (`-p gi_pytest_report`).

gi copies this file into the workspace's read-only tools folder, so the plugin needs nothing
but the standard library and pytest. It reports every event as one line on a pipe that gi
reads while the tests run (GI_CHANNEL_FD names it), so the outcomes of the tests that
finished survive a run killed at its time limit; no report file exists that a variant could
append to.

Each line is `<mac> <json>`: an HMAC-SHA256 over the line's sequence number and its JSON,
keyed by a secret gi writes to the process's standard input, which the plugin reads as
pytest loads it (before any project code is imported) and then replaces with /dev/null.
A line the plugin did not write, or a line left out, breaks the chain and gi scores the run
as forged. The key lives in the plugin's memory, where code in the same process could still
dig for it: gi also checks the report against pytest's own exit status and summary line,
the plugin checks that no phase that raised is reported as passed and that pytest's reporting
functions are the ones it loaded with, and gi refuses variants whose code reaches for the test
machinery (see gi.model.guard). The hooks are closures, so rebinding this module's names does
nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import signal
from collections.abc import Callable, Iterator
from typing import Any

import pytest

KEY_BYTES = 64
#: Characters of one failing test's report that are kept (its end: the assertion and where).
FAILURE_CHARS = 2000


def _channel() -> Callable[[dict[str, Any]], None]:
    """The writer of signed records, or a writer that drops them when gi did not start us."""
    descriptor = int(os.environ.pop("GI_CHANNEL_FD", "-1"))
    if descriptor < 0:
        return lambda record: None
    key = b""
    while len(key) < KEY_BYTES:
        chunk = os.read(0, KEY_BYTES - len(key))
        if not chunk:
            break
        key += chunk
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    sequence = [0]

    def write(record: dict[str, Any]) -> None:
        text = json.dumps(record, separators=(",", ":"))
        mac = hmac.new(key, f"{sequence[0]}:{text}".encode(), hashlib.sha256).hexdigest()
        sequence[0] += 1
        data = f"{mac} {text}\n".encode()
        while data:
            data = data[os.write(descriptor, data) :]

    return write


class TestTimeout(BaseException):
    """Raised in a test that runs past its own time limit (a BaseException, so that a test's
    `except Exception` does not swallow it)."""


def _limits() -> tuple[dict[str, float], float]:
    """Per-test time limits from the JSON file GI_TEST_LIMITS names: {"tests": {...}, "default": s}."""
    path = os.environ.pop("GI_TEST_LIMITS", "")
    if not path:
        return {}, 0.0
    with open(path, encoding="utf-8") as stream:
        data = json.load(stream)
    return {str(k): float(v) for k, v in data.get("tests", {}).items()}, float(data.get("default", 0.0))


def _order() -> list[str]:
    """The node ids to run first, in order, from the JSON list GI_TEST_ORDER names (the tests
    that failed most recently first, when gi stops at the first failure)."""
    path = os.environ.pop("GI_TEST_ORDER", "")
    if not path:
        return []
    with open(path, encoding="utf-8") as stream:
        return [str(nodeid) for nodeid in json.load(stream)]


def _project_modules() -> dict[str, str]:
    """The editable files by the module name the tests import them as (from the JSON file
    GI_PROJECT_MODULES names), as absolute paths in this copy of the project."""
    path = os.environ.pop("GI_PROJECT_MODULES", "")
    if not path:
        return {}
    with open(path, encoding="utf-8") as stream:
        return {str(name): os.path.realpath(str(file)) for name, file in json.load(stream).items()}


def _foreign_imports(expected: dict[str, str]) -> dict[str, str]:
    """The editable modules the run imported from outside this copy of the project (an
    installed copy of the original, say): the tests there never saw the variant. A module may
    stand for another of the project's (toolz's `tlz` is toolz): only where it lies counts."""
    import sys

    copy = os.path.realpath(os.getcwd()) + os.sep
    found = {}
    for name in expected:
        module = sys.modules.get(name)
        file = getattr(module, "__file__", None) if module is not None else None
        if isinstance(file, str) and not os.path.realpath(file).startswith(copy):
            found[name] = file
    return found


def _machinery() -> dict[str, object]:
    """The pytest functions that turn a test's run into its report, as loaded: code under test
    that replaces one to turn failures into passes is caught at the end of the session."""
    from _pytest import reports, runner

    functions = {
        "CallInfo.from_call": runner.CallInfo.from_call,
        "TestReport.from_item_and_call": reports.TestReport.from_item_and_call,
        "call_and_report": runner.call_and_report,
        "runtestprotocol": runner.runtestprotocol,
        "runner.pytest_runtest_makereport": runner.pytest_runtest_makereport,
    }
    # A classmethod gives a new bound method at every look-up: compare what it wraps.
    return {name: getattr(function, "__func__", function) for name, function in functions.items()}


def _switch_coverage_context(nodeid: str) -> None:
    """Under `coverage run`, record the lines each test executes under the test's node id."""
    import coverage

    current = coverage.Coverage.current()
    if current is not None:
        current.switch_context(nodeid)


def _hooks(write: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """The plugin's hooks, as closures over the writer and their state: rebinding a name of this
    module after pytest registered them changes nothing."""
    test_limits, default_limit = _limits()
    first = {nodeid: position for position, nodeid in enumerate(_order())}
    loaded = _machinery()
    project_modules = _project_modules()
    timed_out: set[str] = set()
    outcomes: dict[str, str] = {}
    durations: dict[str, float] = {}
    failures: dict[str, str] = {}
    tampering: list[str] = []

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
        """The tests GI_TEST_ORDER names first, in its order; the others after, as collected."""
        if first:
            items[:] = sorted(items, key=lambda item: first.get(item.nodeid, len(first)))

    def pytest_collection_finish(session: pytest.Session) -> None:
        write({"collected": [item.nodeid for item in session.items]})

    def pytest_collectreport(report: pytest.CollectReport) -> None:
        if report.failed:
            write({"collect_error": report.nodeid, "message": str(report.longrepr)[-FAILURE_CHARS:]})

    def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
        write({"start": nodeid})
        if os.environ.get("GI_COVERAGE_CONTEXT") == "1":
            _switch_coverage_context(nodeid)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
        """Run one test under its own time limit, so a test that hangs fails alone as `timed_out`
        and the rest of the run still counts (gi's limit on the whole run stays as a backstop)."""
        limit = test_limits.get(item.nodeid, default_limit)
        if limit <= 0:
            yield
            return

        def expire(signum: int, frame: object) -> None:
            timed_out.add(item.nodeid)
            raise TestTimeout(f"{item.nodeid} ran past its time limit of {limit:.3g} s")

        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
        """A phase that raised cannot have passed: a report that says so was forged."""
        result: Any = yield
        report = result.get_result()
        if call.excinfo is not None and report.passed:
            tampering.append(f"{item.nodeid}: its {call.when} raised, yet its report says passed")

    def pytest_runtest_logreport(report: pytest.TestReport) -> None:
        nodeid = report.nodeid
        durations[nodeid] = durations.get(nodeid, 0.0) + report.duration
        if report.when == "call":
            expected_to_fail = hasattr(report, "wasxfail")
            outcomes[nodeid] = ("xfailed" if report.skipped else "passed") if expected_to_fail else report.outcome
        elif report.failed:
            outcomes[nodeid] = "error"
        elif report.skipped and nodeid not in outcomes:
            outcomes[nodeid] = "skipped"
        if report.failed:
            failures[nodeid] = report.longreprtext[-FAILURE_CHARS:]

    def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
        record: dict[str, Any] = {
            "finish": nodeid,
            "outcome": "timed_out" if nodeid in timed_out else outcomes.get(nodeid, "error"),
            "duration": durations.get(nodeid, 0.0),
        }
        if nodeid in failures:
            record["failure"] = failures[nodeid]
        write(record)

    def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
        replaced = [name for name, function in _machinery().items() if function is not loaded[name]]
        if replaced:
            tampering.append(f"pytest's {', '.join(replaced)} was replaced during the run")
        if tampering:
            write({"tampered": "; ".join(tampering)[:FAILURE_CHARS]})
        if foreign := _foreign_imports(project_modules):
            write({"foreign_imports": foreign})
        write({"exitstatus": int(exitstatus)})

    return {name: value for name, value in locals().items() if name.startswith("pytest_")}


globals().update(_hooks(_channel()))
