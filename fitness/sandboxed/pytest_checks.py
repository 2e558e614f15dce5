"""What gi's pytest plugin (pytest_plugin.py, installed beside this file as gi_pytest_checks.py)
checks of a variant beside the tests' outcomes: canary tests, whose clones must fail with the
editable modules' functions skewed (`place_canaries`), and the audit of the values the editable
functions return, which names the ones that decide for themselves what a test's check sees of
them (`audit`).

Like the plugin, it needs only the standard library and pytest, and is imported with the plugin,
before any project code.
"""

from __future__ import annotations

import os
import random
import sys
import types
from collections.abc import Callable
from typing import Any

import pytest

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


def place_canaries(items: list[pytest.Item], plan: dict[str, Any], root: str) -> set[int]:
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


def audit(editable: set[str]) -> tuple[Callable[[Any, str, Any], None], dict[str, str]]:
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
