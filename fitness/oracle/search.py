"""The search for a difference: Hypothesis draws calls of one function (`gi.fitness.oracle.inputs`),
each is made on the original and on the variant (by `ask`, which runs them in processes of their
own), and the first call on which they differ is shrunk to a minimal one.

The verdict of a front member (`Behaviour`) says whether any checked function did otherwise on
the variant ("changed", with the minimal call as a pytest test), none did on the inputs tried
("same": no difference found, which is evidence, not proof), or nothing could be checked ("not
checked", and why).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, find, settings
from hypothesis.errors import HypothesisException, NoSuchExample

from gi.fitness.oracle.inputs import FunctionProfile, calls, recorded_calls
from gi.fitness.oracle.values import Call, Encoded, Outcome, crash, crashes, differs

SAME = "same"
CHANGED = "changed"
NOT_CHECKED = "not checked"

#: Calls Hypothesis draws of one function before it concludes no difference is to be found.
EXAMPLES = 200

Ask = Callable[[Call], tuple[Outcome, Outcome]]


@dataclass(frozen=True)
class Difference:
    """A call on which the programs differ, and what each did."""

    call: Call
    original: Outcome
    variant: Outcome
    #: Whether it was looked for as a crash only (`crashes`): what the original did is not the
    #: right result, only one without a crash.
    crash: bool = False


@dataclass
class Search:
    """The calls made of one function, and the difference found (minimal when the search could
    finish shrinking it in time)."""

    tried: int = 0
    difference: Difference | None = None
    #: Whether the time ran out before Hypothesis had drawn and shrunk all it would.
    cut_short: bool = False
    found: dict[str, Difference] = field(default_factory=dict)


def search_difference(profile: FunctionProfile, ask: Ask, *, seed: int, deadline: float,
                      examples: int = EXAMPLES, crashes_only: bool = False,
                      expected: frozenset[str] = frozenset()) -> Search:  # fmt: skip
    """Draw calls of the function until one differs (then shrink it) or `examples` were drawn,
    or the clock (time.monotonic) passes `deadline`. With `crashes_only`, a call differs only
    where the variant crashes and the original does not (`crashes`, the errors `expected` left
    out). Raises UnmakeableError."""
    strategy = calls(profile)
    search = Search()

    def compare(original: Outcome, variant: Outcome) -> bool:
        return crashes(original, variant, expected) if crashes_only else differs(original, variant)

    def different(call: Call) -> bool:
        if time.monotonic() > deadline:
            search.cut_short = True
            return False
        key = call.key()
        if key in search.found:
            return True
        search.tried += 1
        original, variant = ask(call)
        if compare(original, variant):
            search.found[key] = Difference(call, original, variant, crash=crashes_only)
            return True
        return False

    rules = settings(
        max_examples=examples,
        database=None,
        deadline=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate, Phase.shrink],
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
    )
    try:
        minimal = find(strategy, different, settings=rules, random=random.Random(seed))
        search.difference = search.found.get(minimal.key())
    except NoSuchExample:
        pass
    except HypothesisException:  # flaky: a call that differed once did not again
        pass
    if search.difference is None and search.found:
        search.difference = min(search.found.values(), key=lambda found: len(found.call.key()))
    if search.difference is not None:
        search.difference = _simplest(search.difference, different, search)
    return search


def expected_errors(profile: FunctionProfile, ask: Ask, *, deadline: float) -> frozenset[str]:
    """The errors (CRASHES) the variant raises on the calls the failing training tests made,
    which it passes: there the error is what those tests ask for (`pytest.raises(KeyError)`),
    not a crash."""
    found = set()
    for call in recorded_calls(profile, profile.failing_test_calls):
        if time.monotonic() > deadline:
            break
        raised = crash(ask(call)[1])
        if raised is not None:
            found.add(raised)
    return frozenset(found)


def replay_difference(profile: FunctionProfile, ask: Ask, *, deadline: float) -> Search:
    """Make each call of the function a passing training test made, as it was made (nothing
    drawn, nothing shrunk: an input near one of them may be one the failing tests are about),
    until one differs or the clock passes `deadline`."""
    search = Search()
    for call in recorded_calls(profile, profile.passing_calls):
        if time.monotonic() > deadline:
            search.cut_short = True
            break
        search.tried += 1
        original, variant = ask(call)
        if differs(original, variant):
            search.difference = search.found[call.key()] = Difference(call, original, variant)
            break
    return search


#: Calls the pass after Hypothesis's shrinking may make.
SIMPLIFYING_CALLS = 300


def _simplest(difference: Difference, different: Callable[[Call], bool], search: Search) -> Difference:
    """The difference made simpler argument by argument, greedily, where Hypothesis's shrinker
    stopped at a local minimum (on is_prime, it may stop at 58 where 18 differs too): each
    argument is replaced by each simpler value of its kind, simplest first, while the call
    still differs (at most SIMPLIFYING_CALLS calls)."""
    call = difference.call
    budget = search.tried + SIMPLIFYING_CALLS
    improved = True
    while improved and search.tried < budget and not search.cut_short:
        improved = False
        for index in range(len(call.args)):
            for simpler in simpler_values(call.args[index]):
                if search.tried >= budget or search.cut_short:
                    break
                candidate = replace(call, args=(*call.args[:index], simpler, *call.args[index + 1 :]))
                if different(candidate):
                    call, improved = candidate, True
                    break
    return search.found.get(call.key(), difference)


def simpler_values(value: Encoded) -> Iterator[Encoded]:
    """Values of the same kind simpler than `value`, simplest first: integers nearer zero,
    shorter strings and collections (an item left out)."""
    tag = value[0]
    if tag == "int":
        number = int(value[1])
        sign = -1 if number < 0 else 1
        for magnitude in range(min(abs(number), 64)):
            yield ["int", str(magnitude)]
            if magnitude and sign < 0:
                yield ["int", str(-magnitude)]
        if number < 0:
            yield ["int", str(-number)]
        if abs(number) > 64:  # rounder numbers first: one significant digit, then halves
            scale = 10
            while scale < abs(number):
                for digit in range(1, 10):
                    if 64 <= digit * scale < abs(number):
                        yield ["int", str(sign * digit * scale)]
                scale *= 10
            yield ["int", str(number // 2)]
            yield ["int", str(number - sign)]
    elif tag == "str" and value[1]:
        text = value[1]
        yield ["str", ""]
        for index in range(min(len(text), 32)):
            yield ["str", text[:index] + text[index + 1 :]]
    elif tag in ("list", "tuple", "set", "frozenset", "iter") and value[1]:
        items = value[1]
        yield [tag, []]
        for index in range(min(len(items), 32)):
            yield [tag, items[:index] + items[index + 1 :]]


@dataclass(frozen=True)
class Behaviour:
    """A front member's behaviour verdict, as summary.json's `behaviour` holds it."""

    verdict: str
    inputs_tried: int = 0
    counterexample: str | None = None
    why: str = ""
    #: The functions checked ("module:name").
    functions: tuple[str, ...] = ()
    seconds: float = 0.0
    #: Whether pytest ran the counterexample and it passed on the original and failed on the
    #: variant (None: no counterexample).
    confirmed: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "inputs_tried": self.inputs_tried,
            "counterexample": self.counterexample,
            "why": self.why,
            "functions": list(self.functions),
            "seconds": round(self.seconds, 3),
            "confirmed": self.confirmed,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Behaviour:
        return cls(
            str(data["verdict"]),
            int(data.get("inputs_tried", 0)),
            data.get("counterexample"),
            str(data.get("why", "")),
            tuple(data.get("functions", ())),
            float(data.get("seconds", 0.0)),
            data.get("confirmed"),
        )


def not_checked(why: str, seconds: float = 0.0) -> Behaviour:
    return Behaviour(NOT_CHECKED, why=why, seconds=seconds)
