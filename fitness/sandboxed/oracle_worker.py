"""gi's behaviour oracle inside the sandbox: records the calls the training tests make, and
calls one program's functions on the inputs gi sends, answering with what they did.

gi copies this file into a workspace's read-only tools folder and runs it with the project's
interpreter; it needs only the standard library (and pytest, to record). Two modes:

    record OUTPUT PLAN   runs the training tests (pytest in this process) while a hook notes
                         every call of a top-level function of the editable files: its arguments
                         as a neutral encoding (below), bounded per function; which functions
                         the failing tests reach; and, for the differential checks, the results
                         of the calls whose arguments are literals. Writes JSON to OUTPUT.
    serve                a long-lived process: the first request (GI_REQUEST_FD, a 4-byte length
                         and JSON) carries a key; each later one names a function, its arguments
                         in the neutral encoding and a time limit; the answer (GI_RESPONSE_FD)
                         says what the call returned (or raised) and what became of its
                         arguments, signed with the key (HMAC-SHA256 over the answer's number
                         and its JSON), so a line the worker did not write breaks the chain.

The neutral encoding is JSON made of tagged lists: ["int", "18"], ["list", [...]],
["object", "module.Class", {attribute: ...}], ... It describes a value by its exact type and
its structure, read with references to the builtins taken before any project code runs: never
through the value's own __repr__, __eq__ or __iter__ (a subclass of a builtin is an object whose
value is read with the builtin's own methods), so a program cannot make a different value
encode as the original's by defining them, nor by replacing json or repr once imported.
Iterators a call returns are drained (bounded) and encoded as the items they gave.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import importlib
import json
import os
import signal
import struct
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

Encoded = list[Any]
Encoder = Callable[..., Encoded]

#: Items read of a container or an iterator, and the depth and node count of one encoding.
ITEMS = 200
DEPTH = 8
NODES = 4000
#: Characters of a string and bytes of a bytes value kept (beyond: cut, with a digest).
TEXT = 20000


def _encoder() -> tuple[Encoder, Callable[[type], str]]:
    """The encoder, closed over references to the builtins taken now (before project code runs)."""
    type_, isinstance_, len_, id_, sorted_ = builtins.type, builtins.isinstance, builtins.len, builtins.id, sorted
    next_, iter_, hasattr_ = builtins.next, builtins.iter, builtins.hasattr
    dict_, list_, str_, enumerate_ = builtins.dict, builtins.list, builtins.str, builtins.enumerate
    stop_iteration = StopIteration
    expired, member_descriptor = _Expired, types.MemberDescriptorType
    getattribute = object.__getattribute__
    type_getattribute = type.__getattribute__
    dumps = json.dumps
    sha256 = hashlib.sha256
    int_repr, float_repr, complex_repr, bytes_hex = int.__repr__, float.__repr__, complex.__repr__, bytes.hex
    int_plain, float_plain, str_plain = int.__add__, float.__float__, str.__str__
    list_iter, tuple_iter, set_iter, frozenset_iter = list.__iter__, tuple.__iter__, set.__iter__, frozenset.__iter__
    dict_items, mapping_items = dict.items, types.MappingProxyType.items
    range_start, range_stop, range_step = range.start.__get__, range.stop.__get__, range.step.__get__
    function_types = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType, type_)
    iterator_types = (types.GeneratorType,)
    base_exception = BaseException
    scalars: dict[type, str] = {type(None): "none", bool: "bool", int: "int", float: "float",
                                complex: "complex", str: "str", bytes: "bytes"}  # fmt: skip
    containers: dict[type, tuple[str, Callable[[Any], Iterator[Any]]]] = {
        list: ("list", list_iter), tuple: ("tuple", tuple_iter), set: ("set", set_iter),
        frozenset: ("frozenset", frozenset_iter)}  # fmt: skip
    builtin_bases = (bool, int, float, complex, str, bytes, list, tuple, set, frozenset, dict)

    def name_of(kind: type) -> str:
        module = type_getattribute(kind, "__module__")
        return f"{module}.{type_getattribute(kind, '__qualname__')}"

    def scalar(tag: str, value: Any) -> Encoded:
        if tag == "none":
            return ["none"]
        if tag == "bool":
            return ["bool", value is True]
        if tag == "int":
            return ["int", int_repr(value)]
        if tag == "float":
            return ["float", float_repr(value)]
        if tag == "complex":
            return ["complex", complex_repr(value)]
        if tag == "bytes":
            text = bytes_hex(value)
            return ["bytes", text] if len_(text) <= 2 * TEXT else ["cut", "bytes", sha256(value).hexdigest()]
        if len_(value) <= TEXT:
            return ["str", value]
        return ["cut", "str", sha256(value.encode("utf-8", "surrogatepass")).hexdigest()]

    def encode(value: Any, consume: bool = False) -> Encoded:
        """`value` in the neutral encoding; with `consume`, iterators are drained (a call's result)."""
        budget = [NODES]

        def walk(value: Any, depth: int, seen: frozenset[int]) -> Encoded:
            budget[0] -= 1
            kind = type_(value)
            tag = scalars.get(kind)
            if tag is not None:
                return scalar(tag, value)
            if budget[0] < 0 or depth > DEPTH:
                return ["cut", name_of(kind)]
            if id_(value) in seen:
                return ["cycle"]
            seen = seen | {id_(value)}
            if kind in containers:
                tag, items = containers[kind]
                found = [walk(item, depth + 1, seen) for item in _bounded(items(value))]
                if tag in ("set", "frozenset"):
                    found = sorted_(found, key=dumps)
                return [tag, found]
            if kind is dict:
                return ["dict", [[walk(k, depth + 1, seen), walk(v, depth + 1, seen)]
                                 for k, v in _bounded(iter_(dict_items(value)))]]  # fmt: skip
            if kind is range:
                return ["range", int_repr(range_start(value)), int_repr(range_stop(value)),
                        int_repr(range_step(value))]  # fmt: skip
            if isinstance_(value, function_types):
                try:
                    return ["ref", f"{getattribute(value, '__module__')}.{getattribute(value, '__qualname__')}"]
                except base_exception:
                    return ["ref", name_of(kind)]
            iterator = hasattr_(kind, "__next__") and not isinstance_(value, builtin_bases)
            if iterator or isinstance_(value, iterator_types):
                if not consume:
                    return ["iterator", name_of(kind)]
                drained: Encoded = list_()
                stop: Encoded | None = None
                try:
                    while len_(drained) < ITEMS:
                        drained.append(walk(next_(value), depth + 1, seen))
                    next_(value)
                    stop = ["more"]
                except stop_iteration:
                    pass
                except base_exception as error:
                    if isinstance_(error, expired):
                        raise
                    stop = ["raised", name_of(type_(error))]
                return ["iterated", drained, stop]
            return ["object", name_of(kind), fields(value, kind, depth, seen)]

        def fields(value: Any, kind: type, depth: int, seen: frozenset[int]) -> Encoded:
            found: Encoded = []
            for base in builtin_bases:
                if isinstance_(value, base):
                    found.append(["value", walk(plain(value, base), depth + 1, seen)])
                    break
            try:
                own = getattribute(value, "__dict__")
            except base_exception:
                own = None
            if type_(own) is dict:
                found += [[str_(key), walk(item, depth + 1, seen)] for key, item in _bounded(iter_(dict_items(own)))]
            for klass in type_getattribute(kind, "__mro__"):
                slots = mapping_items(type_getattribute(klass, "__dict__"))
                for key, descriptor in slots:
                    if type_(descriptor) is member_descriptor:
                        try:
                            found.append([key, walk(getattribute(value, key), depth + 1, seen)])
                        except base_exception:
                            found.append([key, ["unset"]])
            return found

        def plain(value: Any, base: type) -> Any:
            """A builtin subclass's value, read with the builtin's own methods."""
            if base is bool or base is int:
                return int_plain(value, 0)
            if base is float:
                return float_plain(value)
            if base is str:
                return str_plain(value)
            if base is dict:
                return dict_(dict_items(value))
            if base in containers:
                return list_(containers[base][1](value))
            return None

        def _bounded(iterator: Iterator[Any]) -> Iterator[Any]:
            for count, item in enumerate_(iterator):
                if count >= ITEMS:
                    return
                yield item

        return walk(value, 0, frozenset())

    return encode, name_of


class _Expired(BaseException):
    """Raised in a call that runs past its time limit."""


def _decode(data: Encoded) -> Any:
    """A value from the neutral encoding (what gi sends as arguments)."""
    tag = data[0]
    if tag == "none":
        return None
    if tag == "bool":
        return bool(data[1])
    if tag == "int":
        return int(data[1])
    if tag == "float":
        return float(data[1])
    if tag == "complex":
        return complex(data[1])
    if tag == "str":
        return data[1]
    if tag == "bytes":
        return bytes.fromhex(data[1])
    if tag in ("list", "tuple", "set", "frozenset", "iter"):
        items = [_decode(item) for item in data[1]]
        made: dict[str, Callable[[list[Any]], Any]] = {"list": list, "tuple": tuple, "set": set,
                                                      "frozenset": frozenset, "iter": iter}  # fmt: skip
        return made[tag](items)
    if tag == "dict":
        return {_decode(key): _decode(value) for key, value in data[1]}
    if tag == "range":
        return range(int(data[1]), int(data[2]), int(data[3]))
    raise ValueError(f"cannot make a value of {tag}")


def _target(spec: str) -> Any:
    module, _, qualname = spec.partition(":")
    found = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


# --- serving calls ---------------------------------------------------------------------------------


def serve() -> None:
    encode, name_of = _encoder()
    requests = int(os.environ.pop("GI_REQUEST_FD"))
    responses = int(os.environ.pop("GI_RESPONSE_FD"))
    loads, dumps, pack, unpack = json.loads, json.dumps, struct.pack, struct.unpack
    read, write, new_mac, sha = os.read, os.write, hmac.new, hashlib.sha256
    base_exception, isinstance_, type_, expired = BaseException, isinstance, type, _Expired
    import random

    reseed = random.seed

    def receive() -> Any:
        def exactly(size: int) -> bytes:
            data = b""
            while len(data) < size:
                chunk = read(requests, size - len(data))
                if not chunk:
                    raise SystemExit(0)
                data += chunk
            return data

        return loads(exactly(unpack(">I", exactly(4))[0]))

    first = receive()
    key = bytes.fromhex(first["key"])
    number = [0]

    def answer(body: dict[str, Any]) -> None:
        text = dumps(body, separators=(",", ":"))
        mac = new_mac(key, f"{number[0]}:{text}".encode(), sha).hexdigest()
        number[0] += 1
        data = dumps({"mac": mac, "body": text}).encode()
        data = pack(">I", len(data)) + data
        while data:
            data = data[write(responses, data) :]

    def expire(signum: int, frame: types.FrameType | None) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0.05)  # again, should the first be swallowed
        raise expired()

    signal.signal(signal.SIGALRM, expire)
    failed: dict[str, str] = {}
    for module in first.get("modules", []):  # imported before the first call's clock starts
        try:
            importlib.import_module(module)
        except base_exception as error:
            if isinstance_(error, KeyboardInterrupt):
                raise
            failed[module] = f"{type_(error).__name__}: {error}"[:300]
    answer({"ready": True, "failed": failed})
    while True:
        request = receive()
        try:
            function = _target(request["function"])
            args = [_decode(item) for item in request["args"]]
            kwargs = {name: _decode(item) for name, item in request["kwargs"].items()}
        except base_exception as error:
            if isinstance_(error, (KeyboardInterrupt, SystemExit)):
                raise
            answer({"unavailable": f"{type_(error).__name__}: {error}"[:300]})
            continue
        outcome: dict[str, Any] = {}
        reseed(0)  # both programs draw the same numbers, call by call
        signal.setitimer(signal.ITIMER_REAL, float(request["limit"]))
        try:
            try:
                outcome["returned"] = encode(function(*args, **kwargs), consume=True)
            except expired:
                raise
            except base_exception as error:
                outcome["raised"] = name_of(type_(error))
            outcome["args"] = [encode(item) for item in args]
            outcome["kwargs"] = {name: encode(item) for name, item in kwargs.items()}
        except expired:
            outcome = {"timed_out": True}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        answer(outcome)


# --- recording the training tests' calls ------------------------------------------------------------


def record(output: str, text: str) -> None:
    """Run the training tests under a hook that notes the calls of the editable functions."""
    import ast

    import pytest

    encode, _ = _encoder()
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

    def note(frame: types.FrameType) -> None:
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
    cases = []
    for key in sorted(literals):
        module, _, name = key.partition(":")
        function = getattr(importlib.import_module(module), name)
        for arguments in literals[key]:
            try:
                result = "returns " + repr(function(*ast.literal_eval(arguments)))
            except Exception as error:
                result = "raises " + type(error).__name__
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
            parameters = _parameters(_target(key), encode)
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
    if sys.argv[1] == "serve":
        serve()
    else:
        record(sys.argv[2], sys.argv[3])
