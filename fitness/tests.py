"""The tests measure: pytest in a subprocess on the variant's copy, with per-test outcomes.

Training tests are run on every variant and drive selection; held-out tests are run only
on front members, never for selection, to see which patches overfit the tests used in search.

Outcomes come from gi's plugin over a signed channel (see fitness/sandboxed/pytest_plugin.py), and a
report counts only when independent signals agree with it: every record carries a valid
signature in sequence; the plugin saw pytest's machinery unchanged from the start of the
session; the canary tests (clones of real tests that must fail, `Checks`) failed; the
process's real exit status is pytest's own; pytest's exit status and its summary line on
stdout do not contradict the outcomes. A run that fails these checks is `TestRun.forged`, and
the engine scores the variant as tampered.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import hmac
import io
import json
import os
import re
import secrets
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fitness.sandboxed import FOLDER as SANDBOXED
from gi.model.results import CommandRunner, ProcessOutcome

#: Outcomes a test can have. "timed_out": it was running when the time limit struck;
#: "not_run": collected but never reached; "missing": known from the baseline, not collected.
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "timed_out", "not_run", "missing")
#: Outcomes that are not a failure: the test passed, or did not run by its own design.
NOT_FAILING = ("passed", "skipped", "xfailed")

PLUGIN_MODULE = "gi_pytest_report"
#: pytest's exit status when tests ran and some failed.
TESTS_FAILED = 1
#: A test's limit in a variant's run is this many times its time in the original's, plus the
#: margin (seconds), so that one test that hangs fails alone and the others still count.
TEST_TIME_FACTOR = 10.0
TEST_TIME_MARGIN = 0.5
#: Characters of failing-test output an evaluation keeps (for reports and repair prompts).
FAILURE_DETAIL_CHARS = 4000
#: Characters of a crashed run's last output kept beside its failing tests.
CRASH_TAIL_CHARS = 500

_SUMMARY = re.compile(r"^=*\s*(?P<counts>(?:\d+ [a-z]+(?: [a-z]+)?(?:, )?)+) in [\d.]+s\b.*$|^=*\s*no tests ran\b.*$")
_COUNT = re.compile(r"(\d+) ([a-z]+)")


@dataclass(frozen=True)
class PytestSetup:
    """How a project's tests run, beyond the paths: the interpreter (the project's own
    environment, or gi's), what gi adds to the project's pytest settings, the folders of the
    copy its modules import from (ahead of anything installed) and the module name of each
    editable file (so a run can say where it imported them from). See gi.engine.project."""

    __test__ = False

    python: str = sys.executable
    options: tuple[str, ...] = ()
    #: Folders relative to the copy's root ("src", "."), put on PYTHONPATH in this order.
    import_roots: tuple[str, ...] = ()
    #: (module name, editable file relative to the root) pairs.
    modules: tuple[tuple[str, str], ...] = ()
    #: Whether the interpreter lacks coverage.py, so that gi lends it its own for coverage runs.
    lend_coverage: bool = False
    #: Folders put last on PYTHONPATH (what gi lends the interpreter).
    lent: tuple[str, ...] = ()

    def pythonpath(self, tools: Path, workdir: Path) -> str:
        """PYTHONPATH of a run: gi's tools (its plugin), the copy's import roots, what gi lends."""
        roots = [str(workdir if folder == "." else workdir / folder) for folder in self.import_roots]
        return os.pathsep.join([str(tools), *roots, *self.lent])

    def module_files(self, workdir: Path) -> dict[str, str]:
        """Each editable module's file in the copy at `workdir` (absolute)."""
        return {name: str(workdir / file) for name, file in self.modules}


DEFAULT_SETUP = PytestSetup()


@dataclass(frozen=True)
class Checks:
    """What gi's plugin checks in one run beyond the report itself (see fitness/sandboxed/pytest_plugin.py).

    Canaries: a canary is the clone of a real test whose editable functions return a value that
    equals nothing. On the original it failed, so on any variant it must fail, whatever the
    variant does (its functions still run; their values are skewed on the way back). `canaries`
    names the tests to clone, placed at random by `seed`; with `learn` (the original's run),
    every test is cloned and the run reports how each clone fared, which says which tests can
    be canaries.

    Audit: with `audit`, the run notes the type of every value the editable code returns to the
    tests, with the method of its own (`__eq__`, `__bool__`, ...) that decides a check, if any.
    """

    canaries: tuple[str, ...] = ()
    #: The editable files (relative paths): whose functions a clone skews, whose returns the
    #: audit notes.
    editable: tuple[str, ...] = ()
    learn: bool = False
    seed: int = 0
    audit: bool = False

    def plan(self) -> bytes:
        """What the plugin reads after the key on its standard input."""
        if not self.canaries and not self.learn and not self.audit:
            return b""
        plan = {"canaries": list(self.canaries), "editable": list(self.editable), "learn": self.learn,
                "seed": self.seed, "audit": self.audit}  # fmt: skip
        return json.dumps(plan).encode()


#: A run with no checks beyond the report's own.
NO_CHECKS = Checks()


@functools.cache
def plugin_source() -> str:
    """The plugin's source, copied into each workspace's tools folder."""
    return (SANDBOXED / "pytest_plugin.py").read_text(encoding="utf-8")


@dataclass(frozen=True)
class TestRun:
    """What one pytest run on one variant gave."""

    __test__ = False  # not a test class, whatever pytest thinks of its name

    #: By node id, in the order the tests ran; then those cut off, then those never reached.
    outcomes: dict[str, str]
    durations: dict[str, float] = field(default_factory=dict)
    timed_out: bool = False
    #: pytest's exit status; 0 all passed, 1 some failed, 2 interrupted, 3 internal error,
    #: 4 usage error, 5 no tests collected; -1 when killed or it never finished.
    exit_status: int = -1
    collect_errors: dict[str, str] = field(default_factory=dict)
    #: The end of each failing test's report (its assertion output), by node id.
    failures: dict[str, str] = field(default_factory=dict)
    #: The end of stderr, for runs that crashed before reporting anything.
    output_tail: str = ""
    seconds: float = 0.0
    #: Why the report cannot be trusted ("" when it can).
    forged: str = ""
    #: Editable modules the run imported from outside the copy (module -> file): it did not
    #: test the variant (an installed copy of the original came first on the path).
    foreign_imports: dict[str, str] = field(default_factory=dict)
    #: How the canaries fared, by the node id of the test each cloned.
    canaries: dict[str, str] = field(default_factory=dict)
    #: Why the run was stopped for using too much of a resource (its disk quota), or "".
    resource: str = ""
    #: With an audit: the types of the values the editable code returned to the tests
    #: ("module.Type"), each with the method of its own that decides a check ("" for none).
    returned: dict[str, str] = field(default_factory=dict)

    @property
    def passed(self) -> int:
        return sum(outcome == "passed" for outcome in self.outcomes.values())

    def failing(self) -> list[str]:
        """The tests that failed: every outcome but passed, skipped and xfailed."""
        return sorted(test for test, outcome in self.outcomes.items() if outcome not in NOT_FAILING)

    def failure_report(self, only: str | None = None) -> str:
        """The failing tests' own output, trimmed: what reports and repair prompts show (only
        that of the test `only`, when given)."""
        if only is not None:
            text = self.failures.get(only, "")
            return f"{only} {self.outcomes[only]}" + (f"\n{text}" if text else "")
        parts = [f"{test}: {message}" for test, message in sorted(self.collect_errors.items())]
        failing = self.failing()
        for test in failing:
            if self.outcomes[test] == "not_run":
                continue
            text = self.failures.get(test, "")
            parts.append(f"{test} {self.outcomes[test]}" + (f"\n{text}" if text else ""))
        if not_run := sum(self.outcomes[test] == "not_run" for test in failing):
            parts.append(f"{not_run} test(s) not run")
        if not parts and self.exit_status not in (0, TESTS_FAILED):
            parts.append(self.output_tail)
        elif self.exit_status == -1 and not self.timed_out and self.output_tail.strip():
            # The process died mid-run: its last words (a signal, gi stopping a fork bomb) say why.
            parts.append(self.output_tail.strip()[-CRASH_TAIL_CHARS:])
        return "\n\n".join(parts)[-FAILURE_DETAIL_CHARS:]


def pytest_arguments(paths: Sequence[str], *, first_failure: bool = False, options: Sequence[str] = ()) -> list[str]:
    """pytest's arguments for one test run: gi's plugin, no cache, the quiet output gi reads,
    `options` (PytestSetup.options); with `first_failure`, pytest stops at the first test that
    fails (`-x`)."""
    stop = ["-x"] if first_failure else []
    return ["-p", PLUGIN_MODULE, "-p", "no:cacheprovider", "-q", "--no-header", "-rN", "--color=no", *options, *stop,
            *paths]  # fmt: skip


def plugin_files(
    install: Callable[[str, str], Path],
    limits: Mapping[str, float],
    default_limit: float,
    order: Sequence[str],
    modules: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment that hands gi's plugin its per-test limits, the order to run the tests
    in and the editable modules' files (module -> absolute path), each as a file `install`
    writes into the run's read-only tools folder."""
    env: dict[str, str] = {}
    if modules:
        env["GI_PROJECT_MODULES"] = str(install("gi_project_modules.json", json.dumps(dict(modules))))
    if limits or default_limit > 0:
        table = json.dumps({"tests": dict(limits), "default": default_limit})
        env["GI_TEST_LIMITS"] = str(install("gi_test_limits.json", table))
    if order:
        env["GI_TEST_ORDER"] = str(install("gi_test_order.json", json.dumps(list(order))))
    return env


def first_failing(outcomes: Mapping[str, str]) -> str | None:
    """The first test that failed, in the order the tests ran (a run's outcomes are in that
    order: those that finished, then those cut off, then those never reached), or None."""
    return next((test for test, outcome in outcomes.items() if outcome not in (*NOT_FAILING, "not_run")), None)


class FailureOrder:
    """The training tests, those that failed most recently first: the order a run that stops at
    the first failure (tests.fail_fast) gives pytest, so a failing variant is found out early.

    It is fed every new evaluation in the order the run stores them, so a resumed run that
    replays its stored evaluations into a new `FailureOrder` has the same order. Only the time
    an evaluation takes depends on it: with fail_fast, a failing variant scores the same
    whichever test failed first.
    """

    def __init__(self) -> None:
        self._recent: dict[str, None] = {}  # most recent last

    def note(self, outcomes: Mapping[str, str]) -> None:
        """Move the test that failed first in one evaluation to the front: the one test a run
        that stops at the first failure knows of, and so the same whether it stopped or not."""
        test = first_failing(outcomes)
        if test is not None:
            self._recent.pop(test, None)
            self._recent[test] = None

    def order(self, tests: Sequence[str]) -> tuple[str, ...]:
        """`tests`, those that failed most recently first, the rest in their own order."""
        known = set(tests)
        first = [test for test in reversed(self._recent) if test in known]
        chosen = set(first)
        return (*first, *(test for test in tests if test not in chosen))


def pytest_command(
    paths: Sequence[str],
    prefix: Sequence[str] = ("-m", "pytest"),
    *,
    first_failure: bool = False,
    setup: PytestSetup = DEFAULT_SETUP,
) -> list[str]:
    """The command line for one test run, in the setup's interpreter; `python -m pytest` puts
    the project root on sys.path.

    `prefix` replaces `-m pytest`, e.g. to run pytest under `coverage run`.
    """
    return [setup.python, *prefix, *pytest_arguments(paths, first_failure=first_failure, options=setup.options)]


#: The most of the whole run's time limit (tests.timeout) one test may take, so that a test
#: that hangs is cut off alone, as failing, and the run goes on to the others.
TEST_SHARE = 0.5


def one_test_limit(test_timeout: float, timeout: float) -> float:
    """The limit of one test: `test_timeout`, but never more than TEST_SHARE of the whole run's."""
    return min(test_timeout, TEST_SHARE * timeout)


def hung_tests(outcomes: Mapping[str, str]) -> set[str]:
    """The tests that ran out of time in a run (their own limit, or the whole run's)."""
    return {test for test, outcome in outcomes.items() if outcome == "timed_out"}


def hung_limits(hung: Collection[str], timeout: float) -> dict[str, float]:
    """The limit of each test that hung in the original's run: together they take at most
    TEST_SHARE of the whole run's limit, so they cannot stop a run of the others."""
    return {test: TEST_SHARE * timeout / len(hung) for test in hung}


def per_test_limits(durations: Mapping[str, float], cap: float) -> dict[str, float]:
    """Each test's time limit in a variant's run: TEST_TIME_FACTOR times what it took in the
    original's, plus TEST_TIME_MARGIN, at most `cap`."""
    return {test: min(cap, TEST_TIME_FACTOR * seconds + TEST_TIME_MARGIN) for test, seconds in durations.items()}


def run_tests(
    paths: Sequence[str],
    *,
    timeout: float,
    runner: CommandRunner,
    env: Mapping[str, str] | None = None,
    prefix: Sequence[str] = ("-m", "pytest"),
    limits: Mapping[str, float] | None = None,
    default_limit: float = 0.0,
    order: Sequence[str] = (),
    first_failure: bool = False,
    setup: PytestSetup = DEFAULT_SETUP,
    checks: Checks = NO_CHECKS,
) -> TestRun:
    """Run pytest on `paths` in the runner's copy of the variant and read the per-test outcomes.

    `timeout` bounds the whole run; `limits` (by node id) and `default_limit` (for the other
    tests; 0 for none) bound each test, which then fails alone as `timed_out`. The tests `order`
    names run first, in that order; with `first_failure` the run stops at the first test that
    fails, and the tests it did not reach are `not_run`. The plugin makes the `checks`.
    """
    runner.install_tool(f"{PLUGIN_MODULE}.py", plugin_source())
    key = secrets.token_hex(32).encode()
    files = plugin_files(runner.install_tool, limits or {}, default_limit, order, setup.module_files(runner.workdir))
    run_env = {**(env or {}), "PYTHONPATH": setup.pythonpath(runner.tools, runner.workdir), **files}
    command = pytest_command(paths, prefix, first_failure=first_failure, setup=setup)
    process = runner(command, timeout=timeout, env=run_env, stdin=key + checks.plan(), channel=True)
    return read_report(process, key, checks)


def read_report(process: ProcessOutcome, key: bytes, checks: Checks = NO_CHECKS) -> TestRun:
    """The outcomes in a run's signed report, checked against what pytest itself said and by
    the canaries of `checks`."""
    collected: list[str] = []
    started: list[str] = []
    outcomes: dict[str, str] = {}
    durations: dict[str, float] = {}
    failures: dict[str, str] = {}
    collect_errors: dict[str, str] = {}
    foreign: dict[str, str] = {}
    exit_status: int | None = None
    clones: dict[str, str] = {}
    returned: dict[str, str] = {}
    forged = "the test report overflowed" if process.channel_overflow else ""
    # Line by line, never all at once: a flood of empty lines must cost no memory.
    complete = (raw for raw in io.BytesIO(b"" if forged else process.channel) if raw.endswith(b"\n"))
    for sequence, raw in enumerate(complete):  # a last line without its newline was cut by the kill
        mac, _, text = raw.decode("utf-8", "replace").rstrip("\n").partition(" ")
        expected = hmac.new(key, f"{sequence}:{text}".encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(mac, expected):
            forged = f"record {sequence} of the test report was not written by gi's plugin"
            break
        record = json.loads(text)
        if "collected" in record:
            collected = list(record["collected"])
        elif "start" in record:
            started.append(record["start"])
        elif "finish" in record:
            outcomes[record["finish"]] = record["outcome"]
            durations[record["finish"]] = float(record["duration"])
            if "failure" in record:
                failures[record["finish"]] = record["failure"]
        elif "collect_error" in record:
            collect_errors[record["collect_error"]] = record["message"]
        elif "exitstatus" in record:
            exit_status = int(record["exitstatus"])
        elif "foreign_imports" in record:
            foreign = {str(name): str(file) for name, file in record["foreign_imports"].items()}
        elif "canary" in record:
            clones[record["canary"]] = record["outcome"]
        elif "returned" in record:
            returned = dict(record["returned"])
        elif "tampered" in record:
            forged = f"the test run was tampered with: {record['tampered']}"
    for test in started:
        outcomes.setdefault(test, "timed_out" if process.timed_out else "error")
    for test in collected:
        outcomes.setdefault(test, "not_run")
    if not forged and not process.timed_out:
        forged = _contradiction(process, exit_status, outcomes)
    if not forged and not checks.learn:
        forged = _canaries_betrayed(checks, clones, collected, outcomes, exit_status == process.returncode)
    finished = exit_status is not None and exit_status == process.returncode and not process.timed_out
    return TestRun(
        outcomes=outcomes,
        durations=durations,
        timed_out=process.timed_out,
        exit_status=exit_status if finished and exit_status is not None else -1,
        collect_errors=collect_errors,
        failures=failures,
        output_tail=process.stderr[-FAILURE_DETAIL_CHARS:],
        seconds=process.seconds,
        forged=forged,
        foreign_imports=foreign,
        canaries=clones,
        returned=returned,
        resource=process.resource,
    )


def _canaries_betrayed(
    checks: Checks, clones: Mapping[str, str], collected: Sequence[str], outcomes: Mapping[str, str], ended: bool
) -> str:
    """Why the canaries say the run was tampered with, or "": one that passed (something turned
    its failure into a pass), or one missing from a run that ended by itself without stopping at
    a failure (something ended the run early, or told the canaries apart)."""
    passed = sorted(test for test, outcome in clones.items() if outcome not in ("failed", "error"))
    if passed:
        test = passed[0]
        return f"a canary (a clone of {test} that must fail) {clones[test]}: something turns failures into passes"
    stopped = any(outcome not in NOT_FAILING for outcome in outcomes.values())
    missing = sorted(set(checks.canaries) & set(collected) - set(clones))
    if missing and ended and not stopped:
        return f"the canary cloning {missing[0]} never reported, in a run that ended by itself"
    return ""


def _contradiction(process: ProcessOutcome, exit_status: int | None, outcomes: Mapping[str, str]) -> str:
    """Why the report of a run that ended by itself contradicts pytest, or ""."""
    if exit_status is None:
        if process.returncode == 0:
            return "the test process exited with status 0 before pytest finished"
        return ""  # a crash: the unfinished tests count as failed
    if process.returncode != exit_status:
        if process.returncode == 0:
            return f"the test process exited with status 0, but pytest's exit status was {exit_status}"
        return ""  # it crashed after pytest finished; the exit status is not trusted
    failing = [test for test, outcome in outcomes.items() if outcome not in NOT_FAILING]
    if exit_status == TESTS_FAILED and not failing:
        return "pytest counted failed tests that the report does not show"
    if exit_status == 0 and failing:
        return "the report shows failed tests that pytest did not count"
    summary = _summary(process.stdout)
    if summary is None:
        return "pytest's summary line is not the one and last line of its kind in the test output"
    reported = sum(outcome == "passed" for outcome in outcomes.values())
    if reported > summary.get("passed", 0) + summary.get("xpassed", 0):
        return f"the report shows {reported} passed tests, pytest's summary {summary.get('passed', 0)}"
    return ""


def _summary(stdout: str) -> dict[str, int] | None:
    """pytest's summary line ("2 failed, 3 passed in 0.12s") as counts, if it is the one line
    of that shape and the last of the output (a second one, printed after pytest's, is forged)."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    found = [match for line in lines if (match := _SUMMARY.match(line))]
    if len(found) != 1 or not lines or found[0].string != lines[-1]:
        return None
    return {word: int(number) for number, word in _COUNT.findall(found[0].group("counts") or "")}


def failed_tests(outcomes: Mapping[str, str], baseline: Mapping[str, str] | None = None) -> int:
    """Tests that fail: every outcome but NOT_FAILING, and the tests the baseline knows that are
    missing here. A test the baseline skips (or expects to fail) does not count while it still
    does not run."""
    known = dict.fromkeys(baseline or {}, "missing")
    known.update(outcomes)
    failed = 0
    for test, outcome in known.items():
        if outcome == "passed":
            continue
        expected_not_to_pass = baseline is None or baseline.get(test) in ("skipped", "xfailed")
        if outcome in ("skipped", "xfailed", "missing") and expected_not_to_pass:
            continue
        failed += 1
    return failed


def count_failed(run: TestRun, baseline: Mapping[str, str] | None = None) -> int:
    """`failed_tests` of a run; when nothing was collected at all, at least one failure counts."""
    if not run.outcomes and not baseline:
        return max(1, len(run.collect_errors))  # nothing ran at all: never a perfect score
    return failed_tests(run.outcomes, baseline)


def regressions(outcomes: Mapping[str, str], baseline: Mapping[str, str]) -> list[str]:
    """The tests the baseline passes that do not pass here (missing ones included)."""
    return sorted(test for test, outcome in baseline.items() if outcome == "passed" and outcomes.get(test) != "passed")


def overfits(
    training: Mapping[str, str],
    training_baseline: Mapping[str, str],
    holdout: Mapping[str, str],
    holdout_baseline: Mapping[str, str],
) -> bool:
    """The one definition of overfitting gi uses.

    A member overfits when it keeps every training test the original passes and fails a
    held-out test the original passes. When the original fails training tests (a repair), a
    member overfits when it passes every training test and fails any held-out test. The
    original itself never overfits.
    """
    if failed_tests(training_baseline) > 0:  # a repair
        return failed_tests(training, training_baseline) == 0 and failed_tests(holdout, holdout_baseline) > 0
    return not regressions(training, training_baseline) and bool(regressions(holdout, holdout_baseline))


def test_counts(outcomes: Mapping[str, str]) -> dict[str, int]:
    """Passed, failed (every outcome but NOT_FAILING) and skipped (skipped or xfailed) tests."""
    passed = sum(outcome == "passed" for outcome in outcomes.values())
    failed = sum(outcome not in NOT_FAILING for outcome in outcomes.values())
    return {"passed": passed, "failed": failed, "skipped": len(outcomes) - passed - failed}


def merge_retry(first: TestRun, retry: TestRun) -> TestRun:
    """`first`, with each test that timed out there taking its outcome from `retry`: a timeout
    counts only when it happens twice."""
    outcomes = dict(first.outcomes)
    for test, outcome in first.outcomes.items():
        if outcome == "timed_out" and test in retry.outcomes:
            outcomes[test] = retry.outcomes[test]
    return dataclasses.replace(first, outcomes=outcomes)


#: The options pytest plugins add, by the distribution that gives them (a prefix matches an
#: option's start): to name the plugin a project's pytest settings ask for when it is missing.
PLUGIN_OPTIONS = (
    ("--cov", "pytest-cov"), ("--no-cov", "pytest-cov"), ("-n", "pytest-xdist"), ("--numprocesses", "pytest-xdist"),
    ("--dist", "pytest-xdist"), ("--timeout", "pytest-timeout"), ("--benchmark", "pytest-benchmark"),
    ("--reruns", "pytest-rerunfailures"), ("--randomly", "pytest-randomly"), ("-p randomly", "pytest-randomly"),
    ("--hypothesis", "hypothesis"), ("--asyncio-mode", "pytest-asyncio"), ("--doctest-plus", "pytest-doctestplus"),
    ("--mypy", "pytest-mypy"), ("--flake8", "pytest-flake8"), ("--html", "pytest-html"), ("--ds", "pytest-django"),
    ("--mpl", "pytest-mpl"), ("--snapshot-update", "syrupy"), ("--black", "pytest-black"),
    ("--isort", "pytest-isort"), ("--cache-clear", "pytest"),
)  # fmt: skip
_UNRECOGNISED = re.compile(r"error: unrecognized arguments: (?P<options>.+)$", re.MULTILINE)
_CONFIG_FILE = re.compile(r"^\s*(?:inifile|configfile): (?P<file>\S+)", re.MULTILINE)
READ_ONLY = re.compile(r"Read-only file system|\[Errno 30\]")


def missing_plugins(output: str) -> tuple[list[str], list[str], str]:
    """From pytest's usage error: the options it did not know, the plugins that give them, and
    the settings file that asked for them ("" when none is named)."""
    found = _UNRECOGNISED.search(output)
    if found is None:
        return [], [], ""
    options = found.group("options").split()
    plugins = sorted({plugin for option in options for prefix, plugin in PLUGIN_OPTIONS
                      if option == prefix or option.startswith((prefix + "=", prefix + "-"))})  # fmt: skip
    config = _CONFIG_FILE.search(output)
    return options, plugins, Path(config.group("file")).name if config else ""


def cannot_run(run: TestRun, paths: Sequence[str], python: str, limit: float) -> str | None:
    """Why the tests (pytest `paths`) of the original did not run at all, one line naming the
    cause and where gi knows it the fix, or None when they ran: `gi init` and `gi run` say the
    same."""
    if run.forged:
        return f"gi cannot trust the training tests' report: {run.forged}"
    if run.timed_out:
        return f"the training tests did not finish in {limit:g} s (timed out)"
    if run.collect_errors:
        where, message = sorted(run.collect_errors.items())[0]
        more = len(run.collect_errors) - 1
        also = f" (and {more} more test file{'s' if more > 1 else ''})" if more else ""
        return f"{where} cannot be collected{also}: {last_error_line(message)}"
    if run.exit_status in (-1, 3, 4):
        return why_not_run(run, python)
    if not run.outcomes:
        return f"pytest collects no test in {', '.join(paths)}"
    if run.foreign_imports:
        name, file = sorted(run.foreign_imports.items())[0]
        return (
            f"the tests import {name} from {file}, not from the project folder, so they would never see gi's edits;"
            " uninstall that copy from the environment the tests run in, or install the project there in"
            " editable mode (pip install -e .)"
        )
    return None


def why_not_run(run: TestRun, python: str) -> str:
    """One line saying why pytest could not run the tests at all (usage or internal error),
    naming the cause and its fix where gi knows them: a plugin the project's pytest settings
    ask for that the interpreter lacks, a settings error, a folder the tests write into."""
    output = run.output_tail
    options, plugins, config = missing_plugins(output)
    if options:
        where = f"{config}'s addopts" if config else "the command line"
        shown = ", ".join(options[:4]) + (", ..." if len(options) > 4 else "")
        if plugins and plugins != ["pytest"]:
            names = " ".join(plugins)
            return (
                f"{where} (the project's pytest settings) use {shown}, options of {', '.join(plugins)}, which the"
                f" interpreter the tests run in ({python}) lacks: install it there ({python} -m pip install {names}),"
                " or name the project's environment that has it (program.python)"
            )
        return f"{where} (the project's pytest settings) use {shown}, which pytest there ({python}) does not know"
    if READ_ONLY.search(output):
        return f"the tests write where gi's copy of the project is read-only: {last_error_line(output)}"
    return f"pytest could not run the training tests (exit status {run.exit_status}): {last_error_line(output)}"


def last_error_line(text: str) -> str:
    """The line of pytest's output that says what went wrong: the last `E   ...` line, else the
    last `ERROR:`/`error:` line, else the last line that is not empty."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line.removeprefix("E").strip() for line in lines if line.startswith("E ")]
    usage = [line for line in lines if line.startswith(("ERROR:", "INTERNALERROR>")) or "error:" in line]
    return (errors or usage or lines or ["no output"])[-1]
