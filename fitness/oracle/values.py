"""Values in the oracle's neutral encoding (see fitness/sandboxed/oracle_worker.py): what a call
did, whether two programs did the same (or, in a repair, whether the variant crashed where the
original did not), and a difference written as a pytest test.

An encoding is JSON made of tagged lists: ["int", "18"], ["str", "a"], ["list", [...]],
["dict", [[key, value], ...]], ["range", "0", "5", "1"], ["iter", [...]] (an argument made an
iterator), ["iterated", [...], stop] (what a returned iterator gave), ["object", "module.Class",
[[field, value], ...]], ["ref", "module.name"] (a function, class or module), ["cut", ...] (too
big), ["cycle"]. An outcome is what the worker answered for one call: {"returned": value} or
{"raised": "module.Exception"}, with "args" and "kwargs" as the arguments were after the call;
or {"timed_out": true}; or {"unavailable": why}.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Encoded = list[Any]
Outcome = Mapping[str, Any]

#: The tags of values gi can make and write as Python source.
LITERAL_TAGS = frozenset(
    {"none", "bool", "int", "float", "complex", "str", "bytes", "list", "tuple", "set", "frozenset", "dict"}
)


@dataclass(frozen=True)
class Call:
    """One call of a function: its arguments in the neutral encoding."""

    function: str  # "module:name"
    args: tuple[Encoded, ...]
    kwargs: tuple[tuple[str, Encoded], ...] = ()

    def request(self, limit: float) -> dict[str, Any]:
        """What the worker is sent."""
        return {"function": self.function, "args": list(self.args), "kwargs": dict(self.kwargs), "limit": limit}

    def key(self) -> str:
        return json.dumps([self.function, self.args, self.kwargs])

    @property
    def name(self) -> str:
        return self.function.partition(":")[2]

    @property
    def module(self) -> str:
        return self.function.partition(":")[0]


def canonical(value: Any) -> Any:
    """An encoding (or outcome) with the order of dict items left out (dicts are equal whatever
    order their items were inserted in, as Python compares them)."""
    if isinstance(value, dict):
        return {key: canonical(item) for key, item in value.items()}
    if isinstance(value, list):
        items = [canonical(item) for item in value]
        if len(items) == 2 and items[0] == "dict" and isinstance(items[1], list):
            return ["dict", sorted(items[1], key=json.dumps)]
        return items
    return value


def differs(original: Outcome, variant: Outcome) -> bool:
    """Whether the variant did otherwise than the original on one call. A call the original did
    not answer in time, or could not make, says nothing; a variant that runs out of time where
    the original answered does otherwise."""
    if "timed_out" in original or "unavailable" in original:
        return False
    if "unavailable" in variant:
        return True
    return bool(canonical(dict(original)) != canonical(dict(variant)))


#: The errors the interpreter raises on a program's own mistake (an index past the end, a missing
#: key or attribute, a wrong type, a name not bound, a division by zero), as opposed to one a
#: program raises to refuse an input (ValueError) or to check itself (AssertionError). Where the
#: original returns, a variant that raises one of them has crashed. Not RecursionError: how deep
#: a call may go depends on the stack left, and a correct recursive repair meets it on large
#: inputs a buggy original returned from early.
_CRASH_NAMES = ("IndexError", "KeyError", "AttributeError", "TypeError", "NameError", "UnboundLocalError",
                "ZeroDivisionError")  # fmt: skip
CRASHES = frozenset(f"builtins.{name}" for name in _CRASH_NAMES)


def crash(outcome: Outcome) -> str | None:
    """The error (CRASHES) the call raised, or its returned iterator raised, or None."""
    raised = outcome.get("raised")
    if raised is None and "returned" in outcome:
        value = outcome["returned"]
        if value[0] == "iterated" and value[2] and value[2][0] == "raised":
            raised = value[2][1]
    return raised if raised in CRASHES else None


def crashes(original: Outcome, variant: Outcome, expected: frozenset[str] = frozenset()) -> bool:
    """Whether the variant crashed (CRASHES, less the errors `expected` of it) on a call the
    original answered without crashing. The implicit oracle of a repair, where the original is
    wrong on what the repair is about and so cannot say what is right: whatever the right result
    is, a crash of the language is not it."""
    answered = "returned" in original or "raised" in original
    raised = crash(variant)
    return answered and crash(original) is None and raised is not None and raised not in expected


def source(value: Encoded) -> str | None:
    """Python source that makes the value, or None when gi cannot write it."""
    tag = value[0]
    if tag == "none":
        return "None"
    if tag == "bool":
        return "True" if value[1] else "False"
    if tag in ("int", "complex"):
        return str(value[1])
    if tag == "float":
        text = str(value[1])
        return f"float({text!r})" if text in ("nan", "inf", "-inf") else text
    if tag == "str":
        return repr(value[1])
    if tag == "bytes":
        return repr(bytes.fromhex(value[1]))
    if tag == "range":
        start, stop, step = value[1:4]
        return f"range({start}, {stop})" if step == "1" else f"range({start}, {stop}, {step})"
    if tag in ("list", "tuple", "set", "frozenset", "iter", "dict"):
        if tag == "dict":
            pairs = [(source(key), source(item)) for key, item in value[1]]
            if any(text is None for pair in pairs for text in pair):
                return None
            return "{" + ", ".join(f"{key}: {item}" for key, item in pairs) + "}"
        items = [source(item) for item in value[1]]
        if any(text is None for text in items):
            return None
        inside = ", ".join(items)  # type: ignore[arg-type]
        if tag == "list":
            return f"[{inside}]"
        if tag == "tuple":
            return f"({inside},)" if len(items) == 1 else f"({inside})"
        if tag == "iter":
            return f"iter([{inside}])"
        if not items:
            return "set()" if tag == "set" else "frozenset()"
        return "{" + inside + "}" if tag == "set" else "frozenset({" + inside + "})"
    return None


def value_of(value: Encoded) -> Any:
    """The Python value of a literal encoding (LITERAL_TAGS); raises ValueError for others."""
    text = source(value)
    if value[0] not in LITERAL_TAGS or text is None:
        raise ValueError(f"not a literal: {value[0]}")
    tag = value[0]
    if tag == "float":
        return float(value[1])
    if tag in ("list", "tuple", "set", "frozenset"):
        items = [value_of(item) for item in value[1]]
        return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
    if tag == "dict":
        return {value_of(key): value_of(item) for key, item in value[1]}
    if tag == "bytes":
        return bytes.fromhex(value[1])
    if tag == "int":
        return int(value[1])
    if tag == "bool":
        return bool(value[1])
    if tag == "none":
        return None
    if tag == "str":
        return value[1]
    return complex(value[1])


def describe(outcome: Outcome) -> str:
    """An outcome in a few words: "returns False", "raises AssertionError", "runs out of time"."""
    if "timed_out" in outcome:
        return "runs out of time"
    if "unavailable" in outcome:
        return f"cannot be called ({outcome['unavailable']})"
    if "raised" in outcome:
        return f"raises {outcome['raised'].removeprefix('builtins.')}"
    value = outcome["returned"]
    if value[0] == "iterated":
        shown = [source(item) or item[0] for item in value[1][:5]]
        more = ", ..." if len(value[1]) > 5 or value[2] == ["more"] else ""
        raised = f" then raises {value[2][1].removeprefix('builtins.')}" if value[2] and value[2][0] == "raised" else ""
        return f"gives [{', '.join(shown)}{more}]{raised}"
    text = source(value)
    if text is None:
        text = f"a {value[1]}" if value[0] == "object" else value[0]
    return f"returns {text if len(text) <= 60 else text[:57] + '...'}"


def call_source(call: Call, names: Sequence[str] = ()) -> str | None:
    """`name(args)` as Python source; an argument whose index has a name in `names` (not "") is
    written as that name (a variable the test binds first)."""
    parts = []
    for index, value in enumerate(call.args):
        named = names[index] if index < len(names) else ""
        text = named or source(value)
        if text is None:
            return None
        parts.append(text)
    for key, value in call.kwargs:
        text = source(value)
        if text is None:
            return None
        parts.append(f"{key}={text}")
    return f"{call.name}({', '.join(parts)})"


def counterexample_name(call: Call) -> str:
    """A test's name from the call: test_is_prime_18."""
    shown = ", ".join([source(value) or value[0] for value in call.args] + [key for key, _ in call.kwargs])
    slug = re.sub(r"\W+", "_", re.sub(r"-(?=\d)", "minus_", shown)).strip("_")[:40].strip("_")
    return f"test_{call.name}_{slug}" if slug else f"test_{call.name}"


def _expectation(result: str, value: Encoded, other: Outcome, imports: set[str]) -> list[str] | None:
    """Assertions that `result` (an expression) is the original's returned `value`, strong
    enough to tell the variant's `other` outcome apart; None when gi cannot write them."""
    tag = value[0]
    if tag in ("none", "bool"):
        return [f"assert {result} is {source(value)}"]
    if tag == "float" and value[1] == "nan":
        imports.add("import math")
        return [f"assert math.isnan({result})"]
    if tag == "iterated":
        items = [source(item) for item in value[1]]
        if any(text is None for text in items):
            return None
        listed = "[" + ", ".join(items) + "]"  # type: ignore[arg-type]
        stop = value[2]
        if stop is None:
            return [f"assert list({result}) == {listed}"]
        if stop == ["more"]:
            imports.add("import itertools")
            return [f"assert list(itertools.islice({result}, {len(items)})) == {listed}"]
        imports.add("import pytest")
        return [
            f"iterator = iter({result})",
            f"assert [next(iterator) for _ in range({len(items)})] == {listed}",
            *_raises("next(iterator)", stop[1], imports),
        ]
    if tag == "object":
        lines = [f"assert type({result}).__qualname__ == {value[1].rpartition('.')[2]!r}"]
        for name, item in value[2]:
            text = source(item)
            if text is not None and name.isidentifier():
                lines.append(f"assert {result}.{name} == {text}" if name != "value" else f"assert {result} == {text}")
        return lines
    text = source(value)
    if text is None:
        return None
    lines = [f"assert {result} == {text}"]
    returned = other.get("returned")
    if returned is not None and returned[0] in LITERAL_TAGS and tag in LITERAL_TAGS:
        try:
            alike = value_of(returned) == value_of(value)
        except (ValueError, TypeError):
            alike = False
        if alike:  # equal as Python compares them (1 == 1.0 == True): the type tells them apart
            lines.append(f"assert type({result}) is {_type_name(tag)}")
    return lines


def _type_name(tag: str) -> str:
    return {"none": "type(None)"}.get(tag, tag)


def _raises(code: str, exception: str, imports: set[str]) -> list[str]:
    imports.add("import pytest")
    module, _, name = exception.rpartition(".")
    if module == "builtins":
        return [f"with pytest.raises({name}):", f"    {code}"]
    return [
        "with pytest.raises(BaseException) as raised:",
        f"    {code}",
        f"assert type(raised.value).__qualname__ == {name!r}",
    ]


def counterexample(
    call: Call, parameters: Sequence[str], original: Outcome, variant: Outcome, *, import_from: str
) -> str | None:
    """A ready-to-paste pytest test that passes on the original and fails on the variant: the call,
    and what the original did (its result or exception, and its arguments after the call where
    either program changed them). None when the call or the result cannot be written as Python."""
    imports: set[str] = set()
    mutated = [
        index
        for index, value in enumerate(original.get("args", []))
        if index < len(call.args)
        and (value != call.args[index] or value != (variant.get("args") or [None] * len(call.args))[index])
    ]
    names = [""] * len(call.args)
    lines: list[str] = []
    for index in mutated:
        names[index] = parameters[index] if index < len(parameters) and parameters[index].isidentifier() else "value"
        if names[index] in names[:index] or names[index] == call.name:
            names[index] = f"argument_{index}"
        text = source(call.args[index])
        if text is None:
            return None
        lines.append(f"{names[index]} = {text}")
    code = call_source(call, names)
    if code is None:
        return None
    if "raised" in original:
        lines += _raises(code, original["raised"], imports)
    else:
        expected = _expectation(code, original["returned"], variant, imports)
        if expected is None:
            return None
        if sum(code in line for line in expected) > 1:  # the call once, its result in a variable
            lines.append(f"result = {code}")
            expected = _expectation("result", original["returned"], variant, imports)
            if expected is None:
                return None
        lines += expected
    for index in mutated:
        text = source(original["args"][index])
        if text is None:
            return None
        lines.append(f"assert {names[index]} == {text}")
    header = [*sorted(imports), f"from {import_from} import {call.name}"]
    body = "\n".join(f"    {line}" for line in lines)
    return "\n".join(header) + f"\n\n\ndef {counterexample_name(call)}():\n{body}\n"


def crash_counterexample(call: Call, original: Outcome, *, import_from: str) -> str | None:
    """A ready-to-paste pytest test that the call does not crash: it passes on the original
    (which answered it) and fails on a variant that raises one of CRASHES. Neither what the call
    returns nor an error the original raised on purpose is asserted: in a repair the original is
    not the judge of that. None when the call cannot be written as Python."""
    code = call_source(call)
    if code is None:
        return None
    imports: set[str] = set()
    raised = original.get("raised")  # an error the program raises on purpose (which may be the bug)
    value = original.get("returned")
    if value is not None and value[0] == "iterated":
        if value[2] == ["more"]:  # the worker drew one item past those it kept
            imports.add("import itertools")
            code = f"list(itertools.islice({code}, {len(value[1]) + 1}))"
        else:
            code = f"list({code})"
            raised = value[2][1] if value[2] and value[2][0] == "raised" else None
    lines = [code]
    if raised is not None:  # that error or none: only the crash fails
        imports.add("import contextlib")
        module, _, name = raised.rpartition(".")
        caught = name if module == "builtins" else "Exception"
        lines = [f"with contextlib.suppress({caught}):", f"    {code}"]
    header = [*sorted(imports), f"from {import_from} import {call.name}"]
    body = "\n".join(f"    {line}" for line in lines)
    name = counterexample_name(call) + "_does_not_crash"
    return "\n".join(header) + f"\n\n\ndef {name}():\n{body}\n"
