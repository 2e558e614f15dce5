"""The tests measure: pytest in a subprocess on a scratch copy, with per-test outcomes.

Training tests are run on every variant and drive selection; held-out tests are run only
on the final front, to see which patches overfit the tests used in search.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gi.results import CommandRunner

#: Outcomes a test can have. "timed_out": it was running when the time limit struck;
#: "not_run": collected but never reached; "missing": known from the baseline, not collected.
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "timed_out", "not_run", "missing")

REPORT_NAME = ".gi-test-report.jsonl"


@dataclass(frozen=True)
class TestRun:
    """What one pytest run on one variant gave."""

    outcomes: dict[str, str]
    durations: dict[str, float] = field(default_factory=dict)
    timed_out: bool = False
    #: pytest's exit status; 0 all passed, 1 some failed, 2 interrupted, 3 internal error,
    #: 4 usage error, 5 no tests collected; -1 when killed.
    exit_status: int = -1
    collect_errors: dict[str, str] = field(default_factory=dict)
    output_tail: str = ""
    seconds: float = 0.0

    @property
    def passed(self) -> int:
        return sum(outcome == "passed" for outcome in self.outcomes.values())

    def failing(self) -> list[str]:
        return sorted(
            test for test, outcome in self.outcomes.items() if outcome not in ("passed", "skipped", "xfailed")
        )


def pytest_command(paths: Sequence[str]) -> list[str]:
    """The command line for one test run; `python -m pytest` puts the project root on sys.path."""
    return [
        sys.executable, "-m", "pytest", "-p", "fitness.pytest_plugin", "-p", "no:cacheprovider",
        "-q", "--no-header", "-rN", "--color=no", *paths,
    ]  # fmt: skip


def run_tests(
    workdir: Path,
    paths: Sequence[str],
    *,
    timeout: float,
    runner: CommandRunner,
    env: Mapping[str, str] | None = None,
    command: Sequence[str] | None = None,
) -> TestRun:
    """Run pytest on `paths` inside `workdir` (a scratch copy) and read the per-test outcomes.

    `command` replaces the plain pytest command line (it must load our plugin), e.g. to run
    pytest under coverage.
    """
    report = workdir / REPORT_NAME
    report.unlink(missing_ok=True)
    run_env = {**(env or {}), "GI_TEST_REPORT": str(report)}
    process = runner(command or pytest_command(paths), cwd=workdir, timeout=timeout, env=run_env)
    collected: list[str] = []
    started: list[str] = []
    outcomes: dict[str, str] = {}
    durations: dict[str, float] = {}
    collect_errors: dict[str, str] = {}
    exit_status = -1
    if report.exists():
        for line in report.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by the kill
            if "collected" in record:
                collected = list(record["collected"])
            elif "start" in record:
                started.append(record["start"])
            elif "finish" in record:
                outcomes[record["finish"]] = record["outcome"]
                durations[record["finish"]] = float(record["duration"])
            elif "collect_error" in record:
                collect_errors[record["collect_error"]] = record["message"]
            elif "exitstatus" in record:
                exit_status = int(record["exitstatus"])
        report.unlink()
    for test in started:
        outcomes.setdefault(test, "timed_out" if process.timed_out else "error")
    for test in collected:
        outcomes.setdefault(test, "not_run")
    tail = (process.stdout + process.stderr)[-4000:]
    return TestRun(
        outcomes=outcomes,
        durations=durations,
        timed_out=process.timed_out,
        exit_status=exit_status if not process.timed_out else -1,
        collect_errors=collect_errors,
        output_tail=tail,
        seconds=process.seconds,
    )


def count_failed(run: TestRun, baseline: Mapping[str, str] | None = None) -> int:
    """Tests that did not pass: those of the run, and those the baseline knows that are missing.

    A test the baseline skips (or expects to fail) does not count while it still does not
    run in the variant; when nothing was collected at all, at least one failure counts.
    """
    known = dict.fromkeys(baseline or {}, "missing")
    known.update(run.outcomes)
    failed = 0
    for test, outcome in known.items():
        if outcome == "passed":
            continue
        expected_not_to_pass = baseline is None or baseline.get(test) in ("skipped", "xfailed")
        if outcome in ("skipped", "xfailed", "missing") and expected_not_to_pass:
            continue
        failed += 1
    if not known:
        failed = max(1, len(run.collect_errors))  # nothing ran at all: never a perfect score
    return failed
