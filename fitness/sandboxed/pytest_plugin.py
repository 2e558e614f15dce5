"""gi's pytest plugin, loaded into every test run gi starts (`-p gi_pytest_report`).

gi copies this file into the workspace's read-only tools folder, with those beside it
(pytest_inputs.py, the signed channel and what else gi hands the run; pytest_limits.py, the
per-test time limits; pytest_checks.py, the canaries and the audit of returned values;
pytest_freeze.py, the freeze of pytest's machinery), so the plugin needs nothing but the
standard library and pytest. It reports
every event as one line on a pipe that gi reads while the tests run (GI_CHANNEL_FD names it),
so the outcomes of the tests that finished survive a run killed at its time limit; no report
file exists that a variant could append to.

Each line is `<mac> <json>`: an HMAC-SHA256 over the line's sequence number and its JSON,
keyed by a secret gi writes to the process's standard input, which the plugin reads as
pytest loads it (before any project code is imported) and then replaces with /dev/null.
A line the plugin did not write, or a line left out, breaks the chain and gi scores the run
as forged.

The key lives in the plugin's memory, where code in the same process could still dig for it,
so the verdict does not rest on the signature alone:

- A test's outcome is taken in the plugin's own report hook, the outermost one, after every
  other hook has had its say, and its phases must agree with what raised (a phase that raised
  cannot have passed).
- Pytest's and pluggy's machinery is frozen from the start of the session: every hook's list of
  implementations (functions and their code), the functions that turn a test's run into its
  report, the tracer and profiler. A plugin registered later (but a conftest.py of the project,
  as pytest collects it), a hook slipped into a list, a function replaced: the run is tampered.
  So is a change to the code between pytest's call of a test and its report made before the
  session by the project's code that its conftest.py files imported.
- Canary tests: after stdin's key comes gi's plan, which may name tests whose clones must fail.
  A clone is the very test (same node id, function, fixtures and markers) run once more with the
  editable modules' functions returning a value that equals nothing and whose truth is reversed:
  on the original, such a clone failed. A hook that turns failures into passes turns the clone's
  too, and gi sees it. Clones run at places drawn from the plan's seed, are reported to pytest
  as passed (they change neither its exit status nor where `-x` stops) and to gi apart.
- gi checks the report against pytest's exit status and summary line, and refuses variants whose
  new code reaches for any of this (gi.model.guard). The hooks are closures, so rebinding this module's
  names does nothing.
"""

from __future__ import annotations

import importlib
import operator
import os
import sys
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

#: Set while a warm worker imports this plugin: its hooks are made later, in each child (`activate`).
DEFERRED = "GI_REPORT_DEFERRED"
#: The per-test time limits' module, as gi installs it beside this one (gi.fitness.tests).
LIMITS_MODULE = "gi_pytest_limits"
#: Canaries and the audit of returned values (pytest_checks.py), installed beside this file.
CHECKS_MODULE = "gi_pytest_checks"
#: The freeze of pytest's machinery (pytest_freeze.py), installed beside this file.
FREEZE_MODULE = "gi_pytest_freeze"
#: What gi hands a run: the signed channel, the plan, the limits (pytest_inputs.py), beside this file.
INPUTS_MODULE = "gi_pytest_inputs"
#: Characters of one failing test's report that are kept (its end: the assertion and where).
FAILURE_CHARS = 2000


if __package__:  # imported from gi's package (by gi's own tests)
    from . import pytest_checks as checks
    from . import pytest_freeze as freeze
    from . import pytest_inputs as run_inputs
    from . import pytest_limits as time_limits
else:  # a test run's tools folder, where gi copies them beside this file
    time_limits = importlib.import_module(LIMITS_MODULE)  # type: ignore[assignment,unused-ignore]
    checks = importlib.import_module(CHECKS_MODULE)  # type: ignore[assignment,unused-ignore]
    freeze = importlib.import_module(FREEZE_MODULE)  # type: ignore[assignment,unused-ignore]
    run_inputs = importlib.import_module(INPUTS_MODULE)  # type: ignore[assignment,unused-ignore]

Inputs = run_inputs.Inputs


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


def _tell_inspect_module_files(items: list[pytest.Item], project_modules: dict[str, str]) -> None:
    """Record in `inspect`'s map from files to module names the collected test modules and the
    project's imported modules, as its lookup by file would on a miss: a failure's report looks
    up the module of each of its frames by file, and a miss goes through every imported module
    (in a warm worker's child, writing to memory the worker shares with it)."""
    import inspect

    modules = {getattr(item, "module", None) for item in items}
    modules.update(sys.modules.get(name) for name in project_modules)
    for module in modules:
        if not isinstance(module, types.ModuleType) or sys.modules.get(module.__name__) is not module:
            continue
        if isinstance(getattr(module, "__file__", None), str):
            path = inspect.getabsfile(module)
            inspect.modulesbyfile[path] = inspect.modulesbyfile[os.path.realpath(path)] = module.__name__


# --- the hooks -----------------------------------------------------------------------------------


def _switch_coverage_context(nodeid: str) -> None:
    """Under `coverage run`, record the lines each test executes under the test's node id."""
    import coverage

    current = coverage.Coverage.current()
    if current is not None:
        current.switch_context(nodeid)


def _hooks(inputs: Inputs) -> dict[str, Any]:
    """The plugin's hooks, as closures over the run's inputs and their state: rebinding a name of
    this module after pytest registered them changes nothing. Besides pytest's hooks,
    `freeze_session` (the freeze of the session's start) and `attach`, which binds the inputs
    once read into the hooks' own variables, before any project code runs: changing the
    `Inputs` or its `Channel` later (code under test can find them) changes nothing either."""
    write, position, descriptor, plan, test_limits, default_limit, worker_watch, first, selected, project_modules = (
        inputs.bound()
    )

    def attach() -> None:
        nonlocal write, position, descriptor, plan, test_limits, default_limit, worker_watch
        nonlocal first, selected, project_modules
        (write, position, descriptor, plan, test_limits, default_limit, worker_watch, first, selected,
         project_modules) = inputs.bound()  # fmt: skip

    places = time_limits.machinery_places(__file__, checks.__file__, freeze.__file__, run_inputs.__file__)
    place_canaries, audit = checks.place_canaries, checks.audit
    # What the checks call, bound now, before any project code, as the hooks are: a variant that
    # rebinds a name of this module or of the freeze's (or `operator.is_`) changes nothing.
    machinery, snapshot_of, registry_of, changes_of, same, identical = (
        freeze.machinery,
        freeze.snapshot,
        freeze.registry,
        freeze.changes,
        freeze.same_objects,
        operator.is_,
    )
    call_path, path_snapshot, path_changes, bindings, path_functions = (
        freeze.call_path,
        freeze.path_snapshot,
        freeze.path_changes,
        freeze.bindings,
        freeze.path_functions,
    )
    project_code, before_the_tests, settle_item_flag, registered_by_project = (
        freeze.project_code,
        freeze.BEFORE_THE_TESTS,
        freeze.settle_item_flag,
        freeze.registered_by_project,
    )
    tell_inspect = _tell_inspect_module_files
    loaded = machinery()
    #: The machinery's functions and their code as loaded: once the session starts, the freeze of
    #: the call path watches where each is bound, and a check compares their code.
    coded = [(name, *value) for name, value in loaded.items() if type(value) is tuple]
    timed_out: set[str] = set()
    outcomes: dict[str, str] = {}
    durations: dict[str, float] = {}
    failures: dict[str, str] = {}
    tampering: list[str] = []
    canaries: set[int] = set()
    canary_outcomes: dict[int, str] = {}
    frozen: dict[str, Any] = {}
    running: list[int] = [0]  # id() of the item in its protocol: a clone shares its node id
    #: The running test's phase ("setup", "call", "teardown"; "" between them) and the phase it
    #: ran out of time in ("" while it has time).
    phase = {"now": "", "expired": ""}
    #: The running test and when its protocol started (time.monotonic()).
    current: dict[str, Any] = {}
    #: The per-test timer (a thread signalling this one), and the watchdog process, once started.
    timer = time_limits.Timer()
    watchdog: list[Callable[[dict[str, Any]], None]] = []

    def check(where: str, since_loading: bool = False, whole: bool = True) -> None:
        """The machinery as frozen at the start of the session, but for conftest.py files; with
        `since_loading`, also where its functions are bound, as this plugin loaded (before the
        project's conftest.py files); not `whole`, as a test's phase ends: all but the hooks
        pytest calls only before the tests and the code of the call path's functions."""
        if not frozen or tampering:
            return
        replaced = [name for name, function, code in coded if getattr(function, "__code__", None) is not code]
        if since_loading:
            replaced += [name for name, function in machinery().items() if not same(function, loaded[name])]
        kept = "snapshot" if whole else "tests' snapshot"
        snapshot = snapshot_of(frozen["config"], frozenset() if whole else before_the_tests)
        before = frozen[kept]
        changed: list[str] = []
        if len(snapshot) != len(before) or not all(map(identical, snapshot, before)):
            changed = changes_of(registry_of(before), registry_of(snapshot), frozen["root"])
            frozen[kept] = snapshot
        # The code of the call path's functions only in the whole checks: a swap that lasts to the
        # session's end is seen there, and one undone sooner could as well be undone within the
        # phase it served, which no check sees.
        kept = "path snapshot" if whole else "tests' path snapshot"
        path = path_snapshot(frozen["path"], frozen["path functions"] if whole else [])
        if len(path) != len(frozen[kept]) or not all(map(identical, path, frozen[kept])):
            replaced += path_changes(frozen["path"], frozen["path copies"])
            freeze_path()
        if changed or replaced:
            tampering.append(f"{where}: pytest's machinery changed during the run ({', '.join(changed + replaced)})")

    def freeze_path() -> None:
        """Record the call path's namespaces as they are now: what the checks compare them with."""
        frozen["path functions"] = path_functions(frozen["path"])
        frozen["path snapshot"] = path_snapshot(frozen["path"], frozen["path functions"])
        frozen["tests' path snapshot"] = path_snapshot(frozen["path"], [])
        frozen["path copies"] = bindings(frozen["path"])

    def limit_of(item: pytest.Item) -> float:
        return test_limits.get(item.nodeid, default_limit)

    def arm(item: pytest.Item, at: float) -> None:
        """Tell the watchdog the running test's hard deadline (a time.monotonic() time)."""
        if watchdog:
            watchdog[0]({"at": at, "sequence": position(), "test": item.nodeid, "limit": limit_of(item),
                         "canary": running[0] in canaries})  # fmt: skip

    def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
        """The call path as it is before the project's first conftest.py files load (pytest's
        own loader of them runs last): whatever of the project they import runs before the
        session starts, where the path is frozen (after every plugin's configuration)."""
        path = call_path(early_config)
        frozen["before conftests"] = (path, bindings(path), set(sys.modules), snapshot_of(early_config))

    def freeze_session(session: pytest.Session) -> None:
        """Freeze pytest's machinery as it is now, as the session starts (by the session's start
        of this plugin, or by a warm worker for the session it prepared, `prepare`)."""
        frozen.update(config=session.config, root=os.path.realpath(str(session.config.rootpath)))
        frozen["snapshot"] = snapshot_of(session.config)
        frozen["tests' snapshot"] = snapshot_of(session.config, before_the_tests)
        settle_item_flag()
        frozen["path"] = call_path(session.config)
        freeze_path()
        check("the start of the session", since_loading=True)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(session: pytest.Session) -> None:
        root = os.path.realpath(str(session.config.rootpath))
        timed = bool(test_limits) or default_limit > 0
        if descriptor >= 0 and timed and worker_watch >= 0:
            watchdog.append(time_limits.teller(worker_watch))
        elif descriptor >= 0 and timed:
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter(
                    "ignore"
                )  # (Python warns of a fork beside threads; the watchdog runs none of theirs)
                watchdog.append(time_limits.start_watchdog(descriptor, write))
        audited = plan.get("audit")
        if audited:
            editable = plan.get("editable", [])
            watch, found = audit({os.path.realpath(os.path.join(root, file)) for file in editable})
            frozen["found"] = found
            sys.setprofile(watch)
        # A warm worker's prepared session was frozen before the child existed, but without the
        # audit's profiler, which the freeze records.
        if audited or "config" not in frozen:
            freeze_session(session)
        if "before conftests" in frozen:  # a cold run, or a warm child without a prepared session
            path, copies, modules, registered = frozen.pop("before conftests")
            # By file, and the editable modules by name too (a module can say it lies elsewhere).
            ran = sorted({*project_code(modules, root), *(name for name in project_modules if name in sys.modules)})
            changed = path_changes(path, copies) if ran else []
            if ran:
                editable = set(project_modules.values())
                changed += registered_by_project(registry_of(registered), registry_of(frozen["snapshot"]), editable)
            if changed:
                tampering.append(f"the project's code its conftest.py files imported ({', '.join(ran)}) changed "
                                 f"pytest's machinery before the session started ({', '.join(changed)})")  # fmt: skip

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Only the tests GI_TEST_SELECT names, if it names any (the others deselected, as `-k`
        would); those GI_TEST_ORDER names first, in its order; the others after, as collected;
        then the canaries the plan asks for."""
        if selected is not None:
            left_out = [item for item in items if item.nodeid not in selected]
            if left_out:
                items[:] = [item for item in items if item.nodeid in selected]
                config.hook.pytest_deselected(items=left_out)
        if first:
            items[:] = sorted(items, key=lambda item: first.get(item.nodeid, len(first)))
        canaries.update(place_canaries(items, plan, str(config.rootpath)))

    def pytest_collection_finish(session: pytest.Session) -> None:
        check("collection")
        tell_inspect(session.items, project_modules)
        write({"collected": [item.nodeid for item in session.items if id(item) not in canaries]})

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(session: pytest.Session) -> bool | None:
        """After a collection error pytest runs no test: it raises an interruption, and the
        report it makes of one formats pytest's own frames, parsing each of their modules, which
        costs a variant that does not import more than its tests would take. Here the loop ends
        as it would, without running a test, and without that report: the session ends as one
        whose tests failed (exit status 1, the collection errors its failures)."""
        if session.testsfailed and not session.config.option.continue_on_collection_errors:
            return True
        return None

    def pytest_collectreport(report: pytest.CollectReport) -> None:
        if report.failed:
            write({"collect_error": report.nodeid, "message": str(report.longrepr)[-FAILURE_CHARS:]})

    def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
        if running[0] not in canaries:
            write({"start": nodeid})
        item = current.get("item")
        if item is not None and id(item) == running[0] and limit_of(item) > 0:
            arm(item, current["started"] + limit_of(item) + time_limits.hard_grace(limit_of(item)))
        if os.environ.get("GI_COVERAGE_CONTEXT") == "1":
            _switch_coverage_context(nodeid)

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
        """Run one test under its own time limit (gi_pytest_limits: the alarm, and the watchdog
        at its hard deadline), so a test that hangs fails alone as `timed_out` and the rest of
        the run still counts (gi's limit on the whole run stays as a backstop)."""
        running[0] = id(item)
        phase.update(now="", expired="")
        current.update(item=item, started=time.monotonic())
        limit = limit_of(item)
        if limit <= 0:
            yield
            return

        def expire(frame: types.FrameType | None) -> None:
            if phase["expired"] and phase["now"] != phase["expired"]:
                return  # the phase it timed out in has ended: the alarm is done
            if not phase["now"] or not time_limits.in_tests_code(frame, places):
                timer.again(time_limits.ALARM_RETRY_SECONDS)
                return
            if id(item) not in canaries:
                timed_out.add(item.nodeid)
            phase["expired"] = phase["now"]
            timer.again(time_limits.ALARM_RETRY_SECONDS)  # again, should the test swallow it
            raise time_limits.TestTimeout(f"{item.nodeid} ran past its time limit of {limit:.3g} s")

        timer.start(limit, expire)
        try:
            yield
        finally:
            timer.stop()
            if watchdog:
                watchdog[0]({})

    def in_phase(item: pytest.Item, when: str) -> Iterator[None]:
        """Mark the test's phase `when` as running (the alarm raises in its code only then);
        once the phase it timed out in ends, its hard deadline starts afresh, for its reports
        and teardown."""
        phase["now"] = when
        try:
            yield
        finally:
            phase["now"] = ""
            if phase["expired"] == when:
                arm(item, time.monotonic() + time_limits.hard_grace(limit_of(item)))

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
        yield from in_phase(item, "setup")

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
        yield from in_phase(item, "call")

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
        yield from in_phase(item, "teardown")

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
        """The report, as every other hook left it: here the outcome is taken. A phase that raised
        cannot have passed; a canary's outcome goes to gi alone, pytest counts it as passed. A
        test whose phases took longer than its limit timed out, however it ended (its time went
        where the alarm could not raise, a bare `except:` swallowed it): the first of its reports
        that does not say failed is made to, so pytest counts it as gi does."""
        # Whether the phase raised, taken before any other report hook runs: one may clear
        # `call.excinfo` and put back whatever it changed before the check below.
        raised = call.excinfo is not None
        result: Any = yield
        report = result.get_result()
        check(item.nodeid, whole=False)
        if (raised or call.excinfo is not None) and report.passed:
            tampering.append(f"{item.nodeid}: its {call.when} raised, yet its report says passed")
        if id(item) in canaries:
            if report.failed or (call.when == "call" and id(item) not in canary_outcomes):
                canary_outcomes[id(item)] = "failed" if report.failed else report.outcome
            report.outcome, report.longrepr = "passed", None
            return
        nodeid = item.nodeid
        durations[nodeid] = durations.get(nodeid, 0.0) + report.duration
        limit = limit_of(item)
        if limit > 0 and durations[nodeid] > limit:
            timed_out.add(nodeid)
        if nodeid in timed_out and not report.failed and nodeid not in failures:
            report.outcome = "failed"
            report.longrepr = f"{nodeid} ran past its time limit of {limit:.3g} s ({durations[nodeid]:.3g} s)"
            if hasattr(report, "wasxfail"):
                del report.wasxfail
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
        if watchdog:  # first: no record of ours may be on its way when the watchdog strikes
            watchdog[0]({})
        # No check here: no code under test ran since the check of the teardown's report, and
        # what changes later is seen by the next test's checks or the session's end.
        if running[0] in canaries:
            write({"canary": nodeid, "outcome": canary_outcomes.get(running[0], "error")})
            return
        record: dict[str, Any] = {
            "finish": nodeid,
            "outcome": "timed_out" if nodeid in timed_out else outcomes.get(nodeid, "error"),
            "duration": durations.get(nodeid, 0.0),
        }
        if nodeid in failures:
            record["failure"] = failures[nodeid]
        write(record)

    def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
        check("the end of the session")
        if "found" in frozen:
            sys.setprofile(None)
            write({"returned": frozen["found"]})
        if tampering:
            write({"tampered": "; ".join(tampering)[:FAILURE_CHARS]})
        if foreign := _foreign_imports(project_modules):
            write({"foreign_imports": foreign})
        write({"exitstatus": int(exitstatus)})

    hooks = {name: value for name, value in locals().items() if name.startswith("pytest_")}
    return {**hooks, "freeze_session": freeze_session, "attach": attach}


#: The inputs of the hooks a warm worker made for the session it prepared (`prepare`), with what
#: binds them into the hooks, while it serves that session: each child reads them and binds them
#: as it starts (`activate`), and drops them.
_prepared: list[tuple[Inputs, Callable[[], None]]] = []
#: Whether `activate` ran in this process.
_activated: list[bool] = []


def activate() -> None:
    """Read gi's key and plan, and make the hooks as this module's names (pytest registers them
    from there): at import, as pytest loads the plugin, unless GI_REPORT_DEFERRED says that a
    warm worker imports it once for all its children; each child then activates it before
    pytest registers it, before any of the project's code is imported. A child of a session its
    worker prepared reads its inputs and binds them into the hooks registered there. Once only:
    a later call (by code under test, say) changes nothing."""
    if _activated:
        return
    _activated.append(True)
    if _prepared:
        inputs, attach = _prepared.pop()
        inputs.read()
        attach()
        return
    hooks = _hooks(Inputs().read())
    hooks.pop("attach")()
    del hooks["freeze_session"]  # the session's start freezes: nothing else may do so again
    globals().update(hooks)


def prepare(session: pytest.Session, name: str) -> None:
    """In a warm worker, for the session it prepared, where nothing of the project has run: make
    the hooks over inputs that each child reads as it starts (`activate`), register them with the
    session's plugin manager as the plugin `name` (a module holding them alone: pluggy and
    pytest's fixture manager each go through every name of what they register), and freeze
    pytest's machinery with them, as the session's start of a cold run does. Each child of the
    session starts from there."""
    inputs = Inputs()
    hooks = _hooks(inputs)
    freeze_session, attach = hooks.pop("freeze_session"), hooks.pop("attach")
    module = types.ModuleType(name, __doc__)
    vars(module).update(hooks)
    globals().update(hooks)  # this module's names, as in a cold run
    session.config.pluginmanager.register(module, name)
    freeze_session(session)
    _prepared[:] = [(inputs, attach)]


def release() -> None:
    """In a warm worker, at the end of the session it prepared: children of other sessions make
    their own hooks."""
    _prepared.clear()
    for name in [name for name in globals() if name.startswith("pytest_")]:
        del globals()[name]


if os.environ.get(DEFERRED) != "1":
    activate()
