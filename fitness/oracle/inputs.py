"""Inputs the tests did not try: Hypothesis strategies for a function's calls, from the values its
training tests gave it (recorded by fitness/sandboxed/oracle_recorder.py) and its annotations.

Each parameter draws from strategies shaped like what was seen: integers around and well beyond
the ones seen, floats, strings over the characters seen and printable ones, collections of the
seen element kinds (at the seen lengths and longer), None where it was seen or annotated; the
recorded values themselves come last, so Hypothesis shrinks a difference towards the simplest
generated input rather than towards a recorded one. Values gi cannot make (objects, functions,
iterators of unknown items) are left out; a parameter with nothing else to draw from takes its
default, and without one the function cannot be checked (`UnmakeableError`).
"""

from __future__ import annotations

import json
import math
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from gi.fitness.oracle.values import Call, Encoded

#: How deep collections of collections are generated.
DEPTH = 3
#: Integers are drawn at least this far either side of zero (and twice as far as any seen).
INTEGER_REACH = 1000
POSITIONAL = ("positional_only", "positional_or_keyword")


@dataclass(frozen=True)
class Parameter:
    """One parameter of a recorded function."""

    name: str
    kind: str  # inspect's kind, lower case: positional_or_keyword, var_positional, keyword_only, ...
    default: Encoded | None = None
    annotation: Any = None  # a type shape: ["int"], ["list", item], ["union", [...]], ...


@dataclass(frozen=True)
class FunctionProfile:
    """What the training tests showed of one top-level function: its parameters and its calls
    (each {"args": [...], "kwargs": {...}} in the neutral encoding)."""

    key: str  # "module:name"
    parameters: tuple[Parameter, ...]
    calls: tuple[Mapping[str, Any], ...] = ()
    #: How many times the training tests called it.
    count: int = 0
    #: The indices in `calls` of those a failing training test made.
    failing_calls: frozenset[int] = frozenset()

    @classmethod
    def from_json(cls, key: str, data: Mapping[str, Any]) -> FunctionProfile:
        parameters = tuple(
            Parameter(p["name"], p["kind"], p.get("default"), p.get("annotation")) for p in data["parameters"]
        )
        failing = frozenset(int(index) for index in data.get("failing_calls", ()))
        return cls(key, parameters, tuple(data.get("calls", ())), int(data.get("count", 0)), failing)

    @property
    def passing_calls(self) -> tuple[Mapping[str, Any], ...]:
        """The recorded calls no failing training test made."""
        return tuple(call for index, call in enumerate(self.calls) if index not in self.failing_calls)

    @property
    def failing_test_calls(self) -> tuple[Mapping[str, Any], ...]:
        """The recorded calls a failing training test made."""
        return tuple(call for index, call in enumerate(self.calls) if index in self.failing_calls)

    @property
    def positional_names(self) -> list[str]:
        return [p.name for p in self.parameters if p.kind in POSITIONAL]


class UnmakeableError(Exception):
    """A function's inputs cannot be made: a parameter takes only values gi cannot make."""


def recorded_calls(profile: FunctionProfile, recorded: Sequence[Mapping[str, Any]]) -> list[Call]:
    """The calls of `recorded` (some of the profile's) that gi can make again."""
    return [_call(profile.key, call) for call in recorded if _makeable_call(call)]


def calls(profile: FunctionProfile) -> st.SearchStrategy[Call]:
    """Calls of the function: generated ones first, then the recorded ones; raises UnmakeableError."""
    recorded = recorded_calls(profile, profile.calls)
    generated = _generated(profile)
    if recorded:
        return st.one_of(generated, st.sampled_from(recorded))
    return generated


def _generated(profile: FunctionProfile) -> st.SearchStrategy[Call]:
    positional = [p for p in profile.parameters if p.kind in POSITIONAL]
    seen: dict[str, list[Encoded]] = {p.name: [] for p in profile.parameters}
    extra_args: list[Encoded] = []
    extra_kwargs: list[dict[str, Encoded]] = []
    keyword_names = {p.name for p in profile.parameters if p.kind == "keyword_only"}
    for call in profile.calls:
        args, kwargs = call["args"], call["kwargs"]
        for parameter, value in zip(positional, args, strict=False):
            seen[parameter.name].append(value)
        extra_args += args[len(positional) :]
        for name, value in kwargs.items():
            if name in keyword_names:
                seen[name].append(value)
        extras = {name: value for name, value in kwargs.items() if name not in keyword_names}
        if extras and all(_makeable(value) for value in extras.values()):
            extra_kwargs.append(extras)
    strategies: list[st.SearchStrategy[Encoded]] = []
    for parameter in positional:
        strategies.append(_parameter(parameter, seen[parameter.name]))
    keywords = {p.name: _parameter(p, seen[p.name]) for p in profile.parameters if p.kind == "keyword_only"}
    variadic = next((p for p in profile.parameters if p.kind == "var_positional"), None)
    longest = max((len(call["args"]) - len(positional) for call in profile.calls), default=0)
    rest: st.SearchStrategy[list[Encoded]] = st.just([])
    if variadic is not None:
        element = like(extra_args, variadic.annotation) if extra_args or variadic.annotation else None
        if element is not None:
            rest = st.lists(element, max_size=max(4, longest + 2))
    more: st.SearchStrategy[dict[str, Encoded]] = st.just({})
    if extra_kwargs:
        more = st.one_of(st.just({}), st.sampled_from(extra_kwargs))

    @st.composite
    def drawn(draw: st.DrawFn) -> Call:
        args = [draw(strategy) for strategy in strategies] + draw(rest)
        kwargs = {name: draw(strategy) for name, strategy in keywords.items()}
        kwargs.update(draw(more))
        return Call(profile.key, tuple(args), tuple(kwargs.items()))

    made: st.SearchStrategy[Call] = drawn()
    return made


def _parameter(parameter: Parameter, values: Sequence[Encoded]) -> st.SearchStrategy[Encoded]:
    strategy = like(values, parameter.annotation)
    if strategy is not None:
        return strategy
    if parameter.default is not None and _makeable(parameter.default):
        return st.just(parameter.default)
    raise UnmakeableError(f"parameter {parameter.name} takes {_kinds(values)}, which gi cannot make")


def _kinds(values: Sequence[Encoded]) -> str:
    names = sorted({value[1] if value[0] in ("object", "iterator", "ref") else value[0] for value in values})
    return ", ".join(names[:3]) or "values no test gave"


def like(values: Sequence[Encoded], annotation: Any = None, depth: int = 0) -> st.SearchStrategy[Encoded] | None:
    """Values like `values` (and of the `annotation`'s shape), generated ones first and the seen
    ones last; None when there is nothing gi can make."""
    by_tag: dict[str, list[Encoded]] = {}
    for value in values:
        by_tag.setdefault(value[0], []).append(value)
    branches = [made for tag, group in by_tag.items() if (made := _of_tag(tag, group, depth)) is not None]
    if annotation is not None and (shaped := of_shape(annotation, depth)) is not None:
        branches.append(shaped)
    known = _distinct([value for value in values if _makeable(value)])
    if not branches:
        return None
    if known:
        branches.append(st.sampled_from(known))
    return st.one_of(branches)


def _distinct(values: Sequence[Encoded]) -> list[Encoded]:
    found: dict[str, Encoded] = {}
    for value in values:
        found.setdefault(json.dumps(value), value)
    return list(found.values())


def _makeable(value: Encoded) -> bool:
    tag = value[0]
    if tag in ("none", "bool", "int", "float", "complex", "str", "bytes", "range"):
        return True
    if tag in ("list", "tuple", "set", "frozenset", "iter"):
        return all(_makeable(item) for item in value[1])
    if tag == "dict":
        return all(_makeable(key) and _makeable(item) for key, item in value[1])
    return False


def _makeable_call(call: Mapping[str, Any]) -> bool:
    return all(_makeable(value) for value in call["args"]) and all(_makeable(v) for v in call["kwargs"].values())


def _call(key: str, call: Mapping[str, Any]) -> Call:
    return Call(key, tuple(call["args"]), tuple(call["kwargs"].items()))


def _integers(seen: Sequence[int]) -> st.SearchStrategy[int]:
    reach = max([INTEGER_REACH, *(2 * abs(value) for value in seen)])
    around = st.sampled_from(sorted(set(seen))).flatmap(lambda value: st.integers(value - 3, value + 3))
    return st.one_of(st.integers(-reach, reach), around) if seen else st.integers(-reach, reach)


def _of_tag(tag: str, group: Sequence[Encoded], depth: int) -> st.SearchStrategy[Encoded] | None:
    """Values of one kind, like those seen of it."""
    if tag == "none":
        return st.just(["none"])
    if tag == "bool":
        return st.booleans().map(lambda flag: ["bool", flag])
    if tag == "int":
        return _integers([int(value[1]) for value in group]).map(lambda number: ["int", str(number)])
    if tag == "float":
        numbers = [float(value[1]) for value in group]
        finite = [abs(number) for number in numbers if math.isfinite(number)]
        reach = max([1e6, *(2 * number for number in finite)])
        drawn = st.floats(
            -reach,
            reach,
            allow_nan=any(math.isnan(number) for number in numbers),
            allow_infinity=False,
        )
        if any(abs(number) == float("inf") for number in numbers):
            drawn = st.one_of(drawn, st.sampled_from([float("inf"), float("-inf")]))
        return drawn.map(lambda number: ["float", repr(number)])
    if tag == "complex":
        return st.complex_numbers(max_magnitude=1e6, allow_nan=False).map(lambda number: ["complex", repr(number)])
    if tag == "str":
        texts = [value[1] for value in group]
        return _texts(texts).map(lambda text: ["str", text])
    if tag == "bytes":
        longest = max(len(value[1]) // 2 for value in group)
        return st.binary(max_size=max(16, 2 * longest)).map(lambda data: ["bytes", data.hex()])
    if tag == "range":
        bounds = [int(number) for value in group for number in value[1:3]]
        steps = sorted({int(value[3]) for value in group} | {1})
        return st.tuples(_integers(bounds), _integers(bounds), st.sampled_from(steps)).map(
            lambda made: ["range", str(made[0]), str(made[1]), str(made[2])]
        )
    if tag in ("list", "tuple", "set", "frozenset", "iter", "iterator"):
        return _collections(tag, group, depth)
    if tag == "dict":
        if depth >= DEPTH:
            return None
        keys = like([key for value in group for key, _ in value[1]], None, depth + 1)
        items = like([item for value in group for _, item in value[1]], None, depth + 1)
        if keys is None or items is None:
            return None
        longest = max(len(value[1]) for value in group)
        pairs = st.lists(
            st.tuples(keys, items), max_size=max(6, 2 * longest), unique_by=lambda pair: json.dumps(pair[0])
        )
        return pairs.map(lambda made: ["dict", [list(pair) for pair in made]])
    return None


def _texts(seen: Sequence[str]) -> st.SearchStrategy[str]:
    alphabet = sorted({character for text in seen for character in text} | set(string.printable[:95]))
    longest = max((len(text) for text in seen), default=0)
    return st.text(st.sampled_from(alphabet), max_size=max(20, 2 * longest))


def _collections(tag: str, group: Sequence[Encoded], depth: int) -> st.SearchStrategy[Encoded] | None:
    if depth >= DEPTH:
        return None
    if tag == "iterator":  # an iterator the tests passed: its items were not read
        return st.lists(_integers([]).map(lambda number: ["int", str(number)]), max_size=8).map(
            lambda items: ["iter", items]
        )
    items = [item for value in group for item in value[1]]
    lengths = {len(value[1]) for value in group}
    if tag == "tuple" and len(lengths) == 1 and 0 < (size := next(iter(lengths))) <= 8:
        positions = [like([value[1][index] for value in group], None, depth + 1) for index in range(size)]
        if any(position is None for position in positions):
            return None
        return st.tuples(*positions).map(lambda made: ["tuple", list(made)])
    element = like(items, None, depth + 1) if items else _integers([]).map(lambda number: ["int", str(number)])
    if element is None:
        return None
    size = max(10, 2 * max(lengths))
    if tag in ("set", "frozenset"):
        return st.lists(element, max_size=size, unique_by=json.dumps).map(lambda made: [tag, made])
    return st.lists(element, max_size=size).map(lambda made: [tag, made])


def of_shape(shape: Any, depth: int = 0) -> st.SearchStrategy[Encoded] | None:
    """Values of an annotation's type shape (see oracle_recorder._shape); None when it names
    nothing gi can make."""
    if shape is None:
        return _integers([]).map(lambda number: ["int", str(number)]) if depth else None
    tag = shape[0]
    simple: dict[str, Encoded] = {"int": ["int", "0"], "float": ["float", "0.0"], "str": ["str", ""],
                                  "bool": ["bool", False], "none": ["none"], "bytes": ["bytes", ""],
                                  "complex": ["complex", "0j"]}  # fmt: skip
    if tag in simple:
        return _of_tag(tag, [simple[tag]], depth)
    if depth >= DEPTH:
        return None
    if tag == "union":
        branches = [made for inner in shape[1] if (made := of_shape(inner, depth)) is not None]
        return st.one_of(branches) if branches else None
    if tag in ("list", "set", "iter"):
        element = of_shape(shape[1], depth + 1)
        if element is None:
            return None
        unique = json.dumps if tag == "set" else None
        return st.lists(element, max_size=10, unique_by=unique).map(lambda made: [tag, made])
    if tag == "tuple":
        if len(shape) == 3:
            element = of_shape(shape[1], depth + 1)
            return None if element is None else st.lists(element, max_size=10).map(lambda made: ["tuple", made])
        positions = [of_shape(inner, depth + 1) for inner in shape[1]]
        if any(position is None for position in positions):
            return None
        return st.tuples(*positions).map(lambda made: ["tuple", list(made)])
    if tag == "dict":
        keys, items = of_shape(shape[1], depth + 1), of_shape(shape[2], depth + 1)
        if keys is None or items is None:
            return None
        pairs = st.lists(st.tuples(keys, items), max_size=6, unique_by=lambda pair: json.dumps(pair[0]))
        return pairs.map(lambda made: ["dict", [list(pair) for pair in made]])
    return None
