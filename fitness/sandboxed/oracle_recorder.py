"""gi's behaviour oracle inside the sandbox: records the calls the training tests make.

    python gi_oracle_recorder.py OUTPUT PLAN

runs the training tests (pytest in this process, each under its own time limit, by gi's plugin's
timer, installed beside this file as gi_pytest_limits: a failing test that hangs on the buggy
original is cut, and the rest are recorded; so is each literal call it makes again for the
differential checks, under the plan's `call_limit`) while a hook notes every call of a top-level
function of the editable files: its arguments in the oracle worker's neutral encoding (see
oracle_worker.py, installed beside this file as gi_oracle_worker), bounded per function; which
functions the failing tests reach; and, for the differential checks, the results of the calls
whose arguments are literals. Writes JSON to OUTPUT. gi runs it in a copy of the original only.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import types
from collections.abc import Callable
from typing import Any

if __package__:  # imported from gi's package (by gi's own tests and type checks)
    from . import pytest_limits as time_limits
    from .oracle_worker import Encoder, encoder, target
else:  # a workspace's tools folder, where gi copies it beside the worker and the plugin's limits
    _worker = importlib.import_module("gi_oracle_worker")
    Encoder, encoder, target = _worker.Encoder, _worker.encoder, _worker.target
    time_limits = importlib.import_module("gi_pytest_limits")


def record(output: str, text: str) -> None:
    """Run the training tests under a hook that notes the calls of the editable functions."""
    import ast

    import pytest

    encode, _ = encoder()
    plan = json.loads(text)
    files: set[str] = set()
    for file in plan["files"]:
        files |= {file, os.path.realpath(file)}
    per_function, literal_limit = int(plan["per_function"]), int(plan["literal_per_function"])
    #: Per code object of the editable files: what was noted of its function, None for code
    #: that is no top-level function; once enough was noted, only that it was reached.
    states: dict[types.CodeType, dict[str, Any] | None] = {}
    literals: dict[str, list[str]] = {}
    current: list[str | None] = [None]
    reached: set[str] = set()
    failing_reach: set[str] = set()
    #: The calls (state, index into its calls) noted during the current test, and per state the
    #: indices of those a failing test made.
    noted: list[tuple[dict[str, Any], int]] = []
    outcome = {"passed": 0, "failed": 0}

    def key_of(frame: types.FrameType) -> str | None:
        code = frame.f_code
        module = frame.f_globals.get("__name__")
        function = frame.f_globals.get(code.co_name)
        if module == "__main__" or not isinstance(function, types.FunctionType) or function.__code__ is not code:
            return None  # nested functions and methods are not called from outside
        return f"{module}:{code.co_name}"

    def literal(values: list[Any]) -> str | None:
        try:
            text = repr(tuple(values))
            return text if ast.literal_eval(text) == tuple(values) else None
        except Exception:
            return None

    def state_of(frame: types.FrameType) -> dict[str, Any] | None:
        code = frame.f_code
        key = key_of(frame)
        if key is None:
            return None
        plain = not (code.co_flags & 0x0C or code.co_kwonlyargcount or code.co_name.startswith("_"))
        return {"key": key, "calls": [], "texts": {}, "failing": set(), "count": 0, "done": False,
                "literals": literals.setdefault(key, []) if plain and literal_limit else None,
                "tries": 0}  # fmt: skip

    #: Whether `note` runs: a test's time limit never raises in it (an exception in a profile
    #: function switches the hook off), but waits until it returns.
    noting = [False]

    def note(frame: types.FrameType) -> None:
        noting[0] = True
        try:
            note_call(frame)
        finally:
            noting[0] = False

    def note_call(frame: types.FrameType) -> None:
        code = frame.f_code
        if code in states:
            state = states[code]
        else:
            state = states[code] = state_of(frame)
        if state is None:
            return
        reached.add(state["key"])
        state["count"] += 1
        if state["done"]:
            return
        count = code.co_argcount + code.co_kwonlyargcount
        names = code.co_varnames[:count]
        values = frame.f_locals
        args = [values[name] for name in names[: code.co_argcount]]
        kwargs = {name: values[name] for name in names[code.co_argcount :]}
        varargs = bool(code.co_flags & 0x04)
        if varargs:
            args += list(values[code.co_varnames[count]])
        if code.co_flags & 0x08:
            kwargs.update(values[code.co_varnames[count + varargs]])
        texts = state["literals"]
        if texts is not None and len(texts) < literal_limit and state["tries"] < 10 * literal_limit:
            state["tries"] += 1
            made = literal(args)
            if made is not None and made not in texts:
                texts.append(made)
        if len(state["calls"]) < per_function and state["count"] <= 50 * per_function:
            try:
                call = {"args": [encode(item) for item in args], "kwargs": {k: encode(v) for k, v in kwargs.items()}}
                made = json.dumps(call, sort_keys=True)
                if made not in state["texts"]:
                    state["texts"][made] = len(state["calls"])
                    state["calls"].append(call)
                noted.append((state, state["texts"][made]))
            except Exception:
                pass
        literal_done = texts is None or len(texts) >= literal_limit or state["tries"] >= 10 * literal_limit
        state["done"] = literal_done and (len(state["calls"]) >= per_function or state["count"] > 50 * per_function)
        if state["done"] and watched is not None:
            watched.discard(state["key"])
            if not watched:
                hook_on[0] = False
                pause()

    only = None if plan.get("only") is None else set(plan["only"])
    #: The functions the recording is for: once each has all the calls it keeps, the hook is
    #: switched off and the tests run on at full speed (their reach is then no longer noted).
    watched = None if plan.get("watch") is None else set(plan["watch"])
    hook_on = [True]
    test_limit = float(plan.get("test_limit", 0.0))
    call_limit = float(plan.get("call_limit", 0.0))
    timer = time_limits.Timer()
    worker_file = str(sys.modules[encoder.__module__].__file__)
    places = time_limits.machinery_places(os.path.abspath(__file__), os.path.abspath(worker_file))

    class Tracker:
        def pytest_collection_modifyitems(self, config: Any, items: list[Any]) -> None:
            if only is None:
                return
            left = [item for item in items if item.nodeid not in only]
            if left:
                config.hook.pytest_deselected(items=left)
                items[:] = [item for item in items if item.nodeid in only]

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
            current[0] = nodeid
            reached.clear()
            noted.clear()

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Any:
            """The test (setup, call, teardown) under its time limit: past it, TestTimeout is raised
            in the test's own code, as gi's plugin raises it (`in_tests_code`: never in pytest's
            machinery, the recorder's or the worker's code, nor while the hook notes a call), and
            the test fails."""
            if test_limit <= 0:
                yield
                return

            def expire(frame: types.FrameType | None) -> None:
                timer.again(time_limits.ALARM_RETRY_SECONDS)  # not yet in the test's code, or swallowed
                if not noting[0] and time_limits.in_tests_code(frame, places):
                    raise time_limits.TestTimeout(f"{item.nodeid} ran past its time limit of {test_limit:.3g} s")

            timer.start(test_limit, expire)
            try:
                yield
            finally:
                timer.stop()

        def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
            if report.failed and current[0] is not None:
                failing_reach.update(reached)
                for state, index in noted:
                    state["failing"].add(index)
                outcome["failed"] += report.when in ("call", "setup")
            elif report.passed and report.when == "call":
                outcome["passed"] += 1

    start, pause, stop = _hook(note, files)
    hooked = watched != set()  # nothing to watch: no hook at all
    hook_on[0] = hooked
    if hooked:
        start()
    try:
        status = pytest.main([*plan["options"], "-q", "-p", "no:cacheprovider", *plan["paths"]], plugins=[Tracker()])
    finally:
        if hooked:
            stop()
    for key, inputs in plan["listed"].items():
        texts = literals.setdefault(key, [])
        for made in (literal(arguments) for arguments in inputs):
            if made is not None and made not in texts:
                texts.append(made)

    def out_of_time(frame: types.FrameType | None) -> None:
        timer.again(time_limits.ALARM_RETRY_SECONDS)  # should the function swallow it
        raise time_limits.TestTimeout("a literal call ran past its time limit")

    cases = []
    for key in sorted(literals):
        module, _, name = key.partition(":")
        function = getattr(importlib.import_module(module), name)
        for arguments in literals[key]:
            if call_limit > 0:  # a buggy original may loop forever on a failing test's input
                timer.start(call_limit, out_of_time)
            try:
                result = "returns " + repr(function(*ast.literal_eval(arguments)))
            except time_limits.TestTimeout:
                continue  # no case: what the original does there is not known
            except Exception as error:
                result = "raises " + type(error).__name__
            finally:
                timer.stop()
            cases.append([module, name, arguments, result])
    functions = {state["key"]: state for state in states.values() if state is not None}
    for module in plan["modules"]:  # the functions no test called: their parameters and annotations
        try:
            names = vars(importlib.import_module(module))
        except BaseException:
            continue
        for name, function in list(names.items()):
            if isinstance(function, types.FunctionType) and function.__module__ == module and not name.startswith("_"):
                functions.setdefault(f"{module}:{name}", {"calls": [], "count": 0})
    profile = {}
    for key, seen in sorted(functions.items()):
        try:
            parameters = _parameters(target(key), encode)
        except Exception:
            continue
        profile[key] = {"parameters": parameters, "calls": seen["calls"], "count": seen["count"],
                        "failing_calls": sorted(seen.get("failing", ()))}  # fmt: skip
    with open(output, "w", encoding="utf-8") as stream:
        json.dump({"functions": profile, "failing_reach": sorted(failing_reach), "tests": outcome,
                   "status": int(status), "cases": cases[: int(plan["literal_total"])],
                   "hook_to_the_end": hook_on[0]}, stream)  # fmt: skip


def _hook(
    note: Callable[[types.FrameType], None], files: set[str]
) -> tuple[Callable[[], Any], Callable[[], Any], Callable[[], Any]]:
    """Start, pause and stop functions of a hook that calls `note(frame)` as each Python function
    starts: sys.monitoring where the interpreter has it (code outside `files` is switched off
    after its first call, so the tests run at nearly full speed), else a profile function, called
    on every call until it is paused. `pause` may be called from inside `note`."""
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        tool = next((tool for tool in (2, 3, 4, 5) if monitoring.get_tool(tool) is None), None)
        if tool is not None:
            getframe = sys._getframe

            def started(code: types.CodeType, offset: int) -> Any:
                if code.co_filename not in files:
                    return monitoring.DISABLE
                note(getframe(1))
                return None

            def start() -> None:
                monitoring.use_tool_id(tool, "gi-oracle")
                monitoring.register_callback(tool, monitoring.events.PY_START, started)
                monitoring.set_events(tool, monitoring.events.PY_START)

            def pause() -> None:
                monitoring.set_events(tool, 0)

            def stop() -> None:
                monitoring.set_events(tool, 0)
                monitoring.register_callback(tool, monitoring.events.PY_START, None)
                monitoring.free_tool_id(tool)

            return start, pause, stop

    def profile(frame: types.FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename in files:
            note(frame)

    return (lambda: sys.setprofile(profile)), (lambda: sys.setprofile(None)), (lambda: sys.setprofile(None))


def _parameters(function: Any, encode: Encoder) -> list[dict[str, Any]]:
    """The function's parameters: name, kind, default (encoded) and annotation (a type shape)."""
    import inspect

    try:
        signature = inspect.signature(function, eval_str=True)
    except Exception:
        signature = inspect.signature(function)
    parameters = []
    for parameter in signature.parameters.values():
        entry: dict[str, Any] = {"name": parameter.name, "kind": parameter.kind.name.lower()}
        if parameter.default is not parameter.empty:
            entry["default"] = encode(parameter.default)
        if parameter.annotation is not parameter.empty:
            shape = _shape(parameter.annotation)
            if shape is not None:
                entry["annotation"] = shape
        parameters.append(entry)
    return parameters


def _shape(annotation: Any, depth: int = 0) -> Any:
    """An annotation as a type shape gi can generate values of: ["int"], ["list", item],
    ["tuple", [items]], ["tuple", item, "..."], ["dict", key, value], ["union", [shapes]],
    ["iter", item]; None for anything else."""
    import typing
    from collections import abc

    if depth > 4:
        return None
    simple: dict[Any, str] = {int: "int", float: "float", str: "str", bytes: "bytes", bool: "bool", complex: "complex",
              type(None): "none", None: "none"}  # fmt: skip
    if annotation in simple:
        return [simple[annotation]]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Union or (origin is not None and getattr(origin, "__name__", "") == "UnionType"):
        shapes = [_shape(arg, depth + 1) for arg in args]
        return None if None in shapes else ["union", shapes]
    if origin is None:
        if annotation in (list, abc.Sequence, abc.MutableSequence):
            return ["list", None]
        if annotation in (set, abc.Set, frozenset):
            return ["set", None]
        if annotation in (dict, abc.Mapping):
            return ["dict", None, None]
        if annotation in (abc.Iterable, abc.Iterator):
            return ["iter", None]
        return None
    inner = [_shape(arg, depth + 1) for arg in args if arg is not Ellipsis]
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return ["tuple", inner[0], "..."]
        return None if None in inner else ["tuple", inner]
    first = inner[0] if inner else None
    if origin in (list, abc.Sequence, abc.MutableSequence):
        return ["list", first]
    if origin in (set, frozenset, abc.Set, abc.MutableSet):
        return ["set", first]
    if origin in (dict, abc.Mapping, abc.MutableMapping):
        return ["dict", first, inner[1] if len(inner) > 1 else None]
    if origin in (abc.Iterable, abc.Iterator, abc.Generator):
        return ["iter", first]
    return None


if __name__ == "__main__":
    sys.path.insert(1, os.getcwd())  # the project's root, as `python -m pytest` puts it on the path
    record(sys.argv[1], sys.argv[2])
