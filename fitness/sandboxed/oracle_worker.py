"""gi's behaviour oracle inside the sandbox: records the calls the training tests make, and
calls one program's functions on the inputs gi sends, answering with what they did.

gi copies this file into a workspace's read-only tools folder and runs it with the project's
interpreter; it needs only the standard library. It serves calls: a long-lived process whose
first request (GI_REQUEST_FD, a 4-byte length and JSON) carries a key; each later one names a
function, its arguments in the neutral encoding and a time limit; the answer (GI_RESPONSE_FD)
says what the call returned (or raised) and what became of its arguments, signed with the key
(HMAC-SHA256 over the answer's number and its JSON), so a line the worker did not write breaks
the chain. The recorder of the training tests' calls (oracle_recorder.py, installed beside it)
encodes what it notes with this file's `encoder`.

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


def encoder() -> tuple[Encoder, Callable[[type], str]]:
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


def target(spec: str) -> Any:
    module, _, qualname = spec.partition(":")
    found = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


# --- serving calls ---------------------------------------------------------------------------------


def serve() -> None:
    encode, name_of = encoder()
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
            function = target(request["function"])
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


if __name__ == "__main__":
    sys.path.insert(1, os.getcwd())  # the project's root, as `python -m pytest` puts it on the path
    serve()
