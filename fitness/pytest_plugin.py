"""A pytest plugin loaded into every test run gi starts (`-p fitness.pytest_plugin`).

It appends one JSON line per event to the file named by GI_TEST_REPORT, flushing each, so
that the outcomes of the tests that finished survive a run killed at its time limit.
"""

from __future__ import annotations

import json
import os
from typing import Any, TextIO

import pytest

_stream: TextIO | None = None
_outcomes: dict[str, str] = {}
_durations: dict[str, float] = {}


def _write(record: dict[str, Any]) -> None:
    global _stream
    path = os.environ.get("GI_TEST_REPORT")
    if not path:
        return
    if _stream is None:
        _stream = open(path, "a", encoding="utf-8")  # noqa: SIM115 (open for the session)
    _stream.write(json.dumps(record) + "\n")
    _stream.flush()


def pytest_collection_finish(session: pytest.Session) -> None:
    _write({"collected": [item.nodeid for item in session.items]})


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _write({"collect_error": report.nodeid, "message": str(report.longrepr)[-2000:]})


def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    _write({"start": nodeid})
    if os.environ.get("GI_COVERAGE_CONTEXT") == "1":
        _switch_coverage_context(nodeid)


def _switch_coverage_context(nodeid: str) -> None:
    """Under `coverage run`, record the lines each test executes under the test's node id."""
    import coverage

    current = coverage.Coverage.current()
    if current is not None:
        current.switch_context(nodeid)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    nodeid = report.nodeid
    _durations[nodeid] = _durations.get(nodeid, 0.0) + report.duration
    if report.when == "call":
        expected_to_fail = hasattr(report, "wasxfail")
        _outcomes[nodeid] = ("xfailed" if report.skipped else "passed") if expected_to_fail else report.outcome
    elif report.failed:
        _outcomes[nodeid] = "error"
    elif report.skipped and nodeid not in _outcomes:
        _outcomes[nodeid] = "skipped"


def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    _write({"finish": nodeid, "outcome": _outcomes.get(nodeid, "error"), "duration": _durations.get(nodeid, 0.0)})


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _write({"exitstatus": int(exitstatus)})
