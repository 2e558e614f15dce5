"""Scores no variant writes alone: the guard on a model's code, the canaries, the front's second run.

A variant's test verdict comes out of the process its own code runs in, so gi does not take it
on that process's word (see docs/guides/sandbox.md):

- `model_code_uses`: the tamper guard (gi.model.guard) on the code a language model wrote,
  against everything the original and the variant's classic edits already use. Such code that
  reaches for anything new (frames, modules through other modules, dunders, `exec`, a computed
  attribute) is refused before it runs.
- `CanaryTests`: which training tests can be canaries (their clones failed on the original),
  and a few of them for each run, at places drawn at random (gi.fitness.tests.Checks).
- `second_run`: at the end, each front member's training tests again, in a run laid out
  differently (each test file in a process of its own, in reverse order, other canaries) with
  the audit of returned values; it must agree with the search's verdict, and no value the
  member returns to the tests may decide `==` by a method of its own that no value of the
  original's does.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from gi.fitness.tests import Checks, TestRun
from gi.model.guard import new_risky_names
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program

#: Canaries in each training run: enough that one placed after a forgery starts is all but sure
#: (each sits at a random place among the tests), few enough to cost little.
CANARIES_PER_RUN = 2


def model_code_uses(program: Program, variant: Variant) -> list[str]:
    """What the code a language model wrote in `variant` uses that neither the original nor the
    variant's classic edits alone use ("file: label" lines; see gi.model.guard). Classic edits
    only recombine the original's code and are not judged; a variant that comes without its
    patch (the sources a worker receives) is judged whole."""
    edits = variant.patch.edits
    if not edits:
        return new_risky_names(program.sources, variant.sources)
    classic = tuple(edit for edit in edits if edit.recombines)
    if len(classic) == len(edits):
        return []
    allowed = apply(program, Patch(classic)).sources if classic else None
    return new_risky_names(program.sources, variant.sources, allowed)


@dataclass
class CanaryTests:
    """The training tests whose canaries failed on the original: the ones a run may use."""

    editable: tuple[str, ...]
    must_fail: tuple[str, ...] = ()
    learned: bool = False

    def learn(self, run: TestRun) -> None:
        """Take the tests whose clones failed in the original's learning run."""
        self.must_fail = tuple(sorted(test for test, outcome in run.canaries.items() if outcome == "failed"))
        self.learned = True

    def learning(self) -> Checks:
        """The checks of the original's learning run: a clone of every test, and the audit of
        the values the original returns (what a front member's second run is held against)."""
        return Checks(editable=self.editable, learn=True, audit=True)

    def checks(self, *, audit: bool = False, count: int = CANARIES_PER_RUN) -> Checks:
        """The checks of one run: `count` canaries, chosen and placed by a secret draw (a variant
        cannot predict them; which ones run changes no honest score)."""
        chosen: list[str] = []
        pool = list(self.must_fail)
        while pool and len(chosen) < count:
            chosen.append(pool.pop(secrets.randbelow(len(pool))))
        return Checks(canaries=tuple(chosen), editable=self.editable, seed=secrets.randbits(32), audit=audit)


@dataclass(frozen=True)
class SecondRun:
    """What a front member's second run said: whether it agrees with the search's verdict."""

    agrees: bool
    detail: str = ""
    #: The types the member returned to the tests, with the method of their own that decides a check.
    returned: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {"agrees": self.agrees, "detail": self.detail}


def second_run(
    searched: Mapping[str, str],
    run: Callable[[Sequence[str], Checks], TestRun],
    files: Sequence[str],
    canaries: CanaryTests,
    original_types: Mapping[str, str],
) -> SecondRun:
    """Run a member's training tests again, one test file a process, in reverse order, with
    canaries and the audit; `searched` are its outcomes in the search, `run(paths, checks)` runs
    the tests on it, `original_types` is the original's audit. Disagreeing outcomes (a test the
    search saw pass that does not pass here), a forged run, or a returned value that decides
    `==` by a method of its own the original's values do not have: it does not agree."""
    outcomes: dict[str, str] = {}
    returned: dict[str, str] = {}
    for path in reversed(files):
        result = run([path], canaries.checks(audit=True))
        if result.forged:
            return SecondRun(False, f"its second run was forged: {result.forged}", returned)
        outcomes.update(result.outcomes)
        returned.update(result.returned)
    lost = sorted(test for test, outcome in searched.items() if outcome == "passed" and outcomes.get(test) != "passed")
    if lost:
        return SecondRun(False, f"{lost[0]} passed in the search, but {outcomes.get(lost[0], 'missing')} in its "
                         "second run", returned)  # fmt: skip
    own = sorted(kind for kind, method in returned.items() if method and kind not in original_types)
    if own:
        return SecondRun(False, f"it returns {own[0]} to the tests, whose {returned[own[0]].rpartition('.')[2]}"
                         " decides the tests' checks, and no value of the original's does", returned)  # fmt: skip
    return SecondRun(True, "", returned)
