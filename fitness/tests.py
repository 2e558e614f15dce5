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

from gi.fitness.sandboxed import FOLDER as SANDBOXED
from gi.model.results import CommandRunner, ProcessOutcome

#: Outcomes a test can have. "timed_out": it was running when the time limit struck;
#: "not_run": collected but never reached; "missing": known from the baseline, not collected.
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "timed_out", "not_run", "missing")
#: Outcomes that are not a failure: the test passed, or did not run by its own design.
NOT_FAILING = ("passed", "skipped", "xfailed")

PLUGIN_MODULE = "gi_pytest_report"
#: pytest's exit status when tests ran and some failed.
TESTS_FAILED = 1
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


#: The plugin's files, as copied into a workspace's tools folder: the module pytest loads, and
#: beside it its per-test time limits, its checks (canaries, the audit of returned values) and
#: its freeze of pytest's machinery.
PLUGIN_FILES = (
    (f"{PLUGIN_MODULE}.py", "pytest_plugin.py"),
    ("gi_pytest_limits.py", "pytest_limits.py"),
    ("gi_pytest_checks.py", "pytest_checks.py"),
    ("gi_pytest_freeze.py", "pytest_freeze.py"),
    ("gi_pytest_inputs.py", "pytest_inputs.py"),
)


@functools.cache
def _plugin_source(name: str) -> str:
    return (SANDBOXED / name).read_text(encoding="utf-8")


def install_plugin(install: Callable[[str, str], Path]) -> None:
    """Copy gi's plugin into a run's tools folder with `install` (name, text)."""
    for installed, source in PLUGIN_FILES:
        install(installed, _plugin_source(source))


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
    #: Why the plugin's watchdog stopped the run before its end ("" when it did not): a test
    #: ran past its hard deadline in code its time limit could not interrupt.
    stopped: str = ""
    #: A warm run only: a process the tests started with an environment that did not hand it the
    #: variant (their own `env=`), so it imported the original from the worker's copy; "" for
    #: none. Such a run is not what a cold run gives: the engine runs the variant cold instead.
    started_without_variant: str = ""

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
    selected: Collection[str] | None = None,
) -> dict[str, str]:
    """The environment that hands gi's plugin its per-test limits, the order to run the tests
    in, the tests to run (`selected`; None: every test collected) and the editable modules'
    files (module -> absolute path), each as a file `install` writes into the run's read-only
    tools folder."""
    env: dict[str, str] = {}
    if modules:
        env["GI_PROJECT_MODULES"] = str(install("gi_project_modules.json", json.dumps(dict(modules))))
    if limits or default_limit > 0:
        table = json.dumps({"tests": dict(limits), "default": default_limit})
        env["GI_TEST_LIMITS"] = str(install("gi_test_limits.json", table))
    if order:
        env["GI_TEST_ORDER"] = str(install("gi_test_order.json", json.dumps(list(order))))
    if selected is not None:
        env["GI_TEST_SELECT"] = str(install("gi_test_select.json", json.dumps(sorted(selected))))
    return env


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
    selected: Sequence[str] | None = None,
    on_test: Callable[[int], None] | None = None,
) -> TestRun:
    """Run pytest on `paths` in the runner's copy of the variant and read the per-test outcomes.

    `timeout` bounds the whole run; `limits` (by node id) and `default_limit` (for the other
    tests; 0 for none) bound each test, which then fails alone as `timed_out`. Only the tests
    `selected` names run, when it names them: pytest collects those node ids in place of `paths`
    (the plugin deselects anything else), and the others are not in the outcomes.
    The tests `order` names run first, in that order; with `first_failure` the run stops at the
    first test that fails, and the tests it did not reach are `not_run`. The plugin makes the
    `checks`. `on_test` is told how many tests have finished as the report arrives (for a
    display; the report is checked at the end).
    """
    install_plugin(runner.install_tool)
    key = secrets.token_hex(32).encode()
    files = plugin_files(runner.install_tool, limits or {}, default_limit, order, setup.module_files(runner.workdir),
                         selected)  # fmt: skip
    run_env = {**(env or {}), "PYTHONPATH": setup.pythonpath(runner.tools, runner.workdir), **files}
    command = pytest_command(paths if selected is None else selected, prefix, first_failure=first_failure, setup=setup)
    finished = [0]

    def count(chunk: bytes) -> None:
        if on_test is not None and (done := chunk.count(b'"finish"')):
            finished[0] += done
            on_test(finished[0])

    process = runner(command, timeout=timeout, env=run_env, stdin=key + checks.plan(), channel=True,
                     on_channel=count if on_test is not None else None)  # fmt: skip
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
    stopped = ""
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
        elif "stopped" in record:
            stopped = str(record["stopped"])
    timed_out = process.timed_out or bool(stopped)
    for test in started:
        outcomes.setdefault(test, "timed_out" if timed_out else "error")
    for test in collected:
        outcomes.setdefault(test, "not_run")
    if not forged and not timed_out:
        forged = _contradiction(process, exit_status, outcomes, bool(collect_errors))
    if not forged and not checks.learn:
        forged = _canaries_betrayed(checks, clones, collected, outcomes, exit_status == process.returncode)
    finished = exit_status is not None and exit_status == process.returncode and not timed_out
    return TestRun(
        outcomes=outcomes,
        durations=durations,
        timed_out=timed_out,
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
        stopped=stopped,
        started_without_variant=process.started_without_variant,
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


def _contradiction(
    process: ProcessOutcome, exit_status: int | None, outcomes: Mapping[str, str], collect_errors: bool
) -> str:
    """Why the report of a run that ended by itself contradicts pytest, or "" (`collect_errors`:
    the report names test files that could not be collected, which pytest counts as failures)."""
    if exit_status is None:
        if process.returncode == 0:
            return "the test process exited with status 0 before pytest finished"
        return ""  # a crash: the unfinished tests count as failed
    if process.returncode != exit_status:
        if process.returncode == 0:
            return f"the test process exited with status 0, but pytest's exit status was {exit_status}"
        return ""  # it crashed after pytest finished; the exit status is not trusted
    failing = [test for test, outcome in outcomes.items() if outcome not in NOT_FAILING]
    if exit_status == TESTS_FAILED and not failing and not collect_errors:
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
