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

import _thread
import hashlib
import hmac
import json
import os
import random
import select
import signal
import sys
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

KEY_BYTES = 64
#: Characters of one failing test's report that are kept (its end: the assertion and where).
FAILURE_CHARS = 2000


def _channel() -> tuple[Callable[[dict[str, Any]], None], dict[str, Any]]:
    """The writer of signed records and gi's plan; a writer that drops them when gi did not start us."""
    descriptor = int(os.environ.pop("GI_CHANNEL_FD", "-1"))
    if descriptor < 0:
        return lambda record: None, {}
    data = b""
    while chunk := os.read(0, 65536):
        data += chunk
    key, plan = data[:KEY_BYTES], data[KEY_BYTES:]
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

    return write, json.loads(plan) if plan.strip() else {}


class TestTimeout(BaseException):
    """Raised in a test that runs past its own time limit (a BaseException, so that a test's
    `except Exception` does not swallow it)."""


#: When a test's time limit runs out while pytest's machinery runs (reading the captured
#: output, reporting, this plugin writing a record), the alarm comes back this much later.
ALARM_RETRY_SECONDS = 0.02


#: The signal a test's time limit arrives by: not SIGALRM, which a test (or pytest-timeout in
#: signal mode) may take for itself and cancel.
TIMER_SIGNAL: int = getattr(signal, "SIGRTMAX", signal.SIGUSR2)


class _Watchdog:
    """A per-test timer of its own: a thread (started with `_thread`, so `threading.enumerate()`
    does not list it) waits for the deadline and then signals the main thread with TIMER_SIGNAL,
    whose handler stays this plugin's for the whole session. A test that sets and cancels an
    alarm, or pytest-timeout timing the test with SIGALRM, leaves it alone; the signal interrupts
    a sleeping or blocked test as an alarm would.

    Its state is one tuple swapped whole, and a pipe wakes the thread, so neither side ever
    waits on a lock the other may hold when the signal lands."""

    def __init__(self) -> None:
        self._pid = -1
        self._main = 0
        self._wake = (-1, -1)
        #: (test number, deadline on the monotonic clock, what to call when it passes), or None.
        self._armed: tuple[int, float, Callable[[types.FrameType | None], None]] | None = None
        self._tests = 0
        #: The test number whose deadline the thread signalled last.
        self._fired = -1

    def start(self, seconds: float, expire: Callable[[types.FrameType | None], None]) -> None:
        """Time a test: `expire(frame)` runs in the main thread `seconds` from now."""
        if self._pid != os.getpid():  # the first test, or a process forked since: a thread of its own
            self._pid, self._main = os.getpid(), _thread.get_ident()
            self._wake = os.pipe()
            signal.signal(TIMER_SIGNAL, self._signalled)
            _thread.start_new_thread(self._watch, ())
        self._tests += 1
        self._armed = (self._tests, time.monotonic() + seconds, expire)
        self._poke()

    def again(self, seconds: float) -> None:
        """Signal the same test once more, `seconds` from now (called from `expire`)."""
        armed = self._armed
        if armed is not None:
            self._armed = (armed[0], time.monotonic() + seconds, armed[2])
            self._poke()

    def stop(self) -> None:
        self._armed = None
        self._poke()

    def _poke(self) -> None:
        os.write(self._wake[1], b".")

    def _signalled(self, signum: int, frame: types.FrameType | None) -> None:
        armed = self._armed
        if armed is not None and armed[0] == self._fired:  # (a late signal for a test that ended: nothing)
            armed[2](frame)

    def _watch(self) -> None:
        signalled = None
        while True:
            armed = self._armed
            wait = None if armed is None or armed is signalled else max(0.0, armed[1] - time.monotonic())
            if select.select([self._wake[0]], [], [], wait)[0]:
                os.read(self._wake[0], 4096)
                continue
            if armed is not None and armed is self._armed and armed[1] <= time.monotonic():
                signalled, self._fired = armed, armed[0]
                signal.pthread_kill(self._main, TIMER_SIGNAL)


def _machinery_places() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Where pytest's, pluggy's and this plugin's code lives, and where the code lives that
    runs on behalf of whichever called it (the standard library, frozen modules)."""
    import sysconfig

    import _pytest
    import pluggy

    folders = (os.path.dirname(module.__file__) + os.sep for module in (pytest, _pytest, pluggy) if module.__file__)
    return (*folders, __file__), ("<", sysconfig.get_paths()["stdlib"] + os.sep)


def _in_machinery(frame: types.FrameType | None, places: tuple[tuple[str, ...], tuple[str, ...]]) -> bool:
    """Whether the interrupted code is pytest's or this plugin's rather than the test's: the
    innermost frame outside the standard library (which runs for its caller) is theirs. A test
    timed out there would raise inside pytest's own bookkeeping (a record cut in half, a
    report that contradicts pytest), and be scored as tampered with."""
    machinery, on_behalf = places
    while frame is not None:
        file = frame.f_code.co_filename
        if file.startswith(machinery):
            return True
        if not file.startswith(on_behalf):
            return False
        frame = frame.f_back
    return True


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
    """The functions that run a test and turn it into its report and its count, as loaded, each
    with its code: code under test that replaces one (or its code) is caught."""
    import pluggy
    from _pytest import main, reports, runner

    functions = {
        "CallInfo.from_call": runner.CallInfo.from_call,
        "TestReport.from_item_and_call": reports.TestReport.from_item_and_call,
        "TestReport.__init__": reports.TestReport.__init__,
        "call_and_report": runner.call_and_report,
        "runtestprotocol": runner.runtestprotocol,
        "check_interactive_exception": runner.check_interactive_exception,
        "runner.pytest_runtest_makereport": runner.pytest_runtest_makereport,
        "Session.pytest_runtest_logreport": main.Session.pytest_runtest_logreport,
        "HookCaller.__call__": pluggy.HookCaller.__call__,
        "PluginManager._hookexec": pluggy.PluginManager._hookexec,
    }
    found: dict[str, object] = {}
    for name, loaded in functions.items():
        function = getattr(loaded, "__func__", loaded)  # a classmethod's bound method is new each time
        found[name] = (function, getattr(function, "__code__", None))
    for name in ("passed", "failed", "skipped"):
        found[f"BaseReport.{name}"] = vars(reports.BaseReport).get(name)
    return found


def _registry(config: pytest.Config) -> dict[str, object]:
    """Every hook's implementations in order, by their functions and code; the relay, the hook
    executor, the tracer and the profiler."""
    manager = config.pluginmanager
    found: dict[str, object] = {
        " relay": (config.hook, manager.hook, getattr(manager, "_inner_hookexec", None)),
        " tracing": (sys.gettrace(), sys.getprofile()),
    }
    for name, caller in vars(manager.hook).items():
        if hasattr(caller, "get_hookimpls"):
            impls = caller.get_hookimpls()
            found[name] = (caller, tuple((impl.plugin, impl.function, getattr(impl.function, "__code__", None))
                                         for impl in impls))  # fmt: skip
    return found


def _a_conftest(plugin: object, root: str) -> bool:
    """Whether `plugin` is a conftest.py of the project that pytest collected (registered while
    the session runs, by right)."""
    if not isinstance(plugin, types.ModuleType):
        return False
    file = getattr(plugin, "__file__", None)
    return (
        isinstance(file, str)
        and os.path.basename(file) == "conftest.py"
        and os.path.realpath(file).startswith(root + os.sep)
        and os.path.isfile(file)
        and sys.modules.get(plugin.__name__) is plugin
    )


def _changes(before: dict[str, object], after: dict[str, object], root: str) -> list[str]:
    """What differs between two registries, but for implementations conftest.py files added."""
    changed = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if isinstance(new, tuple) and name[0] != " " and (old is None or (isinstance(old, tuple) and old[0] is new[0])):
            kept = () if old is None else old[1]
            added = [impl for impl in new[1] if impl not in kept]
            if all(_a_conftest(impl[0], root) for impl in added) and [i for i in new[1] if i in kept] == list(kept):
                continue  # a conftest.py collected, with a hook of its own or no new one
        changed.append(name.strip())
    return changed


# --- canaries ------------------------------------------------------------------------------------


class _Skewed:
    """What an editable function returns in a canary: the real value, but equal to nothing, with
    its truth reversed; everything else is the value's."""

    __slots__ = ("_value",)

    def __init__(self, value: object) -> None:
        self._value = value

    def __eq__(self, other: object) -> bool:
        return False

    def __ne__(self, other: object) -> bool:
        return True

    def __bool__(self) -> bool:
        return not self._value

    def __repr__(self) -> str:
        return repr(self._value)

    def __str__(self) -> str:
        return str(self._value)

    def __getattr__(self, name: str) -> object:
        return getattr(self._value, name)

    __hash__ = None  # type: ignore[assignment]


def _skew(value: object, editable: set[str]) -> object:
    """A test module's global, as a canary sees it: the editable code's functions and classes
    return skewed values; anything else is left alone."""
    if isinstance(value, types.ModuleType):
        if os.path.realpath(getattr(value, "__file__", "") or "") not in editable:
            return value
        proxy = types.ModuleType(value.__name__, value.__doc__)
        proxy.__dict__.update({name: _skew_callable(item, editable) for name, item in vars(value).items()})
        return proxy
    return _skew_callable(value, editable)


def _skew_callable(value: object, editable: set[str]) -> object:
    module = sys.modules.get(getattr(value, "__module__", None) or "")
    if not callable(value) or module is None:
        return value
    if os.path.realpath(getattr(module, "__file__", "") or "") not in editable:
        return value

    def skewed(*args: Any, **kwargs: Any) -> object:
        return _Skewed(value(*args, **kwargs))

    return skewed


def _clone(item: pytest.Item, editable: set[str]) -> pytest.Item | None:
    """The canary of a test: the same test, whose editable functions return skewed values (a
    test function of another kind, a doctest say, has none)."""
    function: Any = getattr(item, "obj", None)
    real: Any = getattr(function, "__func__", function)
    if not isinstance(item, pytest.Function) or not isinstance(real, types.FunctionType):
        return None
    namespace = {name: _skew(value, editable) for name, value in real.__globals__.items()}
    twin = types.FunctionType(real.__code__, namespace, real.__name__, real.__defaults__, real.__closure__)
    twin.__dict__.update(real.__dict__)
    twin.__kwdefaults__ = real.__kwdefaults__
    bound = types.MethodType(twin, function.__self__) if hasattr(function, "__self__") else twin
    return pytest.Function.from_parent(
        item.parent,
        name=item.name,
        callspec=getattr(item, "callspec", None),
        callobj=bound,
        keywords=dict(item.keywords),
        fixtureinfo=item._fixtureinfo,
        originalname=item.originalname,
    )


def _place_canaries(items: list[pytest.Item], plan: dict[str, Any], root: str) -> set[int]:
    """Add the clones the plan asks for among `items`, each at a place drawn from the plan's seed
    (with "learn", a clone of every test right after it); returns the clones' id()s."""
    every = bool(plan.get("learn"))
    names = [item.nodeid for item in items] if every else [str(nodeid) for nodeid in plan.get("canaries", [])]
    if not names:
        return set()
    editable = {os.path.realpath(os.path.join(root, file)) for file in plan.get("editable", [])}
    by_id = {item.nodeid: item for item in items}
    rng = random.Random(int(plan.get("seed", 0)))
    canaries: set[int] = set()
    for nodeid in names:
        item = by_id.get(nodeid)
        clone = _clone(item, editable) if item is not None else None
        if item is None or clone is None:
            continue
        items.insert(items.index(item) + 1 if every else rng.randint(0, len(items)), clone)
        canaries.add(id(clone))
    return canaries


# --- the audit of returned values ----------------------------------------------------------------

#: Methods through which a value decides what a test's check sees of it: comparisons, truth and
#: containment, and the arithmetic of a closeness check (`abs(x - 3) < 1e-9`, `pytest.approx`,
#: which subtracts the expected value from it).
_VERDICT_METHODS = ("__eq__", "__ne__", "__bool__", "__len__", "__contains__", "__iter__", "__lt__", "__le__",
                    "__gt__", "__ge__", "__instancecheck__", "__getattr__", "__getattribute__", "__getitem__",
                    "__sub__", "__rsub__", "__add__", "__radd__", "__mul__", "__rmul__", "__truediv__",
                    "__rtruediv__", "__abs__", "__neg__", "__round__", "__float__", "__int__", "__index__",
                    "__complex__")  # fmt: skip
#: Objects whose referents are code, scopes and classes, not what the value holds.
_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.CodeType,
           types.FrameType, types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)  # fmt: skip
#: Objects looked at in each returned value, at most.
_HELD_LIMIT = 256
#: The flag of a type made at run time (a class statement, type()), not built into the interpreter.
_HEAP_TYPE = 1 << 9


#: A type's own slots, read past anything its metaclass defines under the same names.
_TYPE_SLOT = {name: type.__dict__[name] for name in ("__module__", "__qualname__", "__mro__", "__dict__", "__flags__")}


#: A module's own namespace, read past a module subclass's.
_MODULE_DICT: Any = vars(types.ModuleType)["__dict__"]


def _slot(kind: type, name: str) -> Any:
    return _TYPE_SLOT[name].__get__(kind, type)


def _own_verdict(kind: type) -> str:
    """Which of the methods that decide a check a type has from a class made at run time (not
    from a type built into the interpreter, whatever its `__module__` says), as "Ledger.__eq__",
    or ""."""
    for method in _VERDICT_METHODS:
        owner = next((base for base in _slot(kind, "__mro__") if method in _slot(base, "__dict__")), None)
        if owner is not None and _slot(owner, "__flags__") & _HEAP_TYPE:
            return f"{_slot(owner, '__qualname__')}.{method}"
    return ""


def _type_name(kind: type) -> str:
    """`module.qualname` of a type, by which a member's audit is held against the original's;
    a class that is not what its module holds under that name (it names itself after another,
    or was made inside a function) is marked as not its module's."""
    name = f"{_slot(kind, '__module__')}.{_slot(kind, '__qualname__')}"
    found: object = sys.modules.get(str(_slot(kind, "__module__")))
    for part in str(_slot(kind, "__qualname__")).split("."):
        if isinstance(found, types.ModuleType):
            found = _MODULE_DICT.__get__(found).get(part)
        elif isinstance(found, type):
            found = _slot(found, "__dict__").get(part)
        else:
            found = None
    return name if found is kind else f"{name} (not its module's)"


def _held_types(value: object) -> list[type]:
    """The type of `value` and of what it holds (a list's items, a dict's keys and values, an
    instance's attributes, the mapping behind a mapping proxy), up to `_HELD_LIMIT` objects: a
    container compares by its items' `==`, a proxy by its referent's, so a value equal to
    everything may hide inside a plain one."""
    import gc

    kinds: dict[type, None] = {}
    seen = {id(value)}
    waiting = [value]
    while waiting and len(seen) <= _HELD_LIMIT:
        item = waiting.pop()
        kinds[type(item)] = None
        if isinstance(item, _OPAQUE):
            continue
        for inner in gc.get_referents(item):
            if id(inner) not in seen and inner is not type(item):  # an instance refers to its class
                seen.add(id(inner))
                waiting.append(inner)
    return list(kinds)


def _audit(editable: set[str]) -> tuple[Callable[[Any, str, Any], None], dict[str, str]]:
    """A profile function that notes the type of every value the editable code returns to code
    outside it (the tests), and of what the value and the call's arguments hold (a list the test
    passed in may come back holding a value of the code's), each with the method of its own that
    decides a check, if any."""
    returned: dict[str, str] = {}
    inside: dict[str, bool] = {}

    def editable_file(filename: str) -> bool:
        if filename not in inside:
            inside[filename] = os.path.realpath(filename) in editable
        return inside[filename]

    def watch(frame: Any, event: str, value: Any) -> None:
        if event != "return" or frame.f_code.co_name == "<module>" or not editable_file(frame.f_code.co_filename):
            return
        caller = frame.f_back
        if caller is not None and editable_file(caller.f_code.co_filename):
            return
        code = frame.f_code
        count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 4) + bool(code.co_flags & 8)
        given = [frame.f_locals.get(name) for name in code.co_varnames[:count]]
        for held in (value, *given):  # what it returns, and what it may have put in its arguments
            for kind in _held_types(held):
                name = _type_name(kind)
                if name not in returned:
                    returned[name] = _own_verdict(kind)

    return watch, returned


# --- the hooks -----------------------------------------------------------------------------------


def _switch_coverage_context(nodeid: str) -> None:
    """Under `coverage run`, record the lines each test executes under the test's node id."""
    import coverage

    current = coverage.Coverage.current()
    if current is not None:
        current.switch_context(nodeid)


def _hooks(write: Callable[[dict[str, Any]], None], plan: dict[str, Any]) -> dict[str, Any]:
    """The plugin's hooks, as closures over the writer and their state: rebinding a name of this
    module after pytest registered them changes nothing."""
    test_limits, default_limit = _limits()
    places = _machinery_places()
    first = {nodeid: position for position, nodeid in enumerate(_order())}
    loaded = _machinery()
    project_modules = _project_modules()
    timed_out: set[str] = set()
    outcomes: dict[str, str] = {}
    durations: dict[str, float] = {}
    failures: dict[str, str] = {}
    tampering: list[str] = []
    canaries: set[int] = set()
    canary_outcomes: dict[int, str] = {}
    frozen: dict[str, Any] = {}
    running: list[int] = [0]  # id() of the item in its protocol: a clone shares its node id
    watchdog = _Watchdog()

    def check(where: str) -> None:
        """The machinery as frozen at the start of the session, but for conftest.py files."""
        if not frozen or tampering:
            return
        now = _registry(frozen["config"])
        changed = _changes(frozen["registry"], now, frozen["root"])
        replaced = [name for name, function in _machinery().items() if function != loaded[name]]
        if changed or replaced:
            tampering.append(f"{where}: pytest's machinery changed during the run ({', '.join(changed + replaced)})")
        frozen["registry"] = now

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(session: pytest.Session) -> None:
        root = os.path.realpath(str(session.config.rootpath))
        if plan.get("audit"):
            watch, found = _audit({os.path.realpath(os.path.join(root, file)) for file in plan.get("editable", [])})
            frozen["found"] = found
            sys.setprofile(watch)
        frozen.update(config=session.config, root=root)
        frozen["registry"] = _registry(session.config)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
        """The tests GI_TEST_ORDER names first, in its order; the others after, as collected;
        then the canaries the plan asks for."""
        if first:
            items[:] = sorted(items, key=lambda item: first.get(item.nodeid, len(first)))
        canaries.update(_place_canaries(items, plan, str(config.rootpath)))

    def pytest_collection_finish(session: pytest.Session) -> None:
        check("collection")
        write({"collected": [item.nodeid for item in session.items if id(item) not in canaries]})

    def pytest_collectreport(report: pytest.CollectReport) -> None:
        if report.failed:
            write({"collect_error": report.nodeid, "message": str(report.longrepr)[-FAILURE_CHARS:]})

    def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
        if running[0] not in canaries:
            write({"start": nodeid})
        if os.environ.get("GI_COVERAGE_CONTEXT") == "1":
            _switch_coverage_context(nodeid)

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
        """Run one test under its own time limit, so a test that hangs fails alone as `timed_out`
        and the rest of the run still counts (gi's limit on the whole run stays as a backstop).
        The limit is raised only in the test's own code: run out in pytest's, it comes back in
        ALARM_RETRY_SECONDS, and a test whose protocol ends first keeps its outcome."""
        running[0] = id(item)
        limit = test_limits.get(item.nodeid, default_limit)
        if limit <= 0:
            yield
            return

        def expire(frame: types.FrameType | None) -> None:
            if _in_machinery(frame, places):
                watchdog.again(ALARM_RETRY_SECONDS)
                return
            if id(item) not in canaries:
                timed_out.add(item.nodeid)
            raise TestTimeout(f"{item.nodeid} ran past its time limit of {limit:.3g} s")

        watchdog.start(limit, expire)
        try:
            yield
        finally:
            watchdog.stop()

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
        """The report, as every other hook left it: here the outcome is taken. A phase that raised
        cannot have passed; a canary's outcome goes to gi alone, pytest counts it as passed."""
        result: Any = yield
        report = result.get_result()
        check(item.nodeid)
        if call.excinfo is not None and report.passed:
            tampering.append(f"{item.nodeid}: its {call.when} raised, yet its report says passed")
        if id(item) in canaries:
            if report.failed or (call.when == "call" and id(item) not in canary_outcomes):
                canary_outcomes[id(item)] = "failed" if report.failed else report.outcome
            report.outcome, report.longrepr = "passed", None
            return
        nodeid = item.nodeid
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
        check(nodeid)
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

    return {name: value for name, value in locals().items() if name.startswith("pytest_")}


globals().update(_hooks(*_channel()))
