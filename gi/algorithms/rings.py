"""The neighbourhood of the original program in rings: what lies one edit away, then two.

Ring 1 is every one-edit program, in the order of `gi.mutators.neighbourhood.walk` (the site's
suspiciousness or hotness times the operator's prior, split among the operator's edits
there), each program once (by tree hash). Ring 2 combines what ring 1 found useful, as soon
as it is found: when the original fails training tests, its *partial repairs* (edits that
make some failing tests pass and no passing test fail), two at a time, those that together
fix the most tests first; otherwise its best single improvements (one-edit programs the
original does not dominate), two at a time, in the order found. Pairs and ring 1 take
turns, so a pair of partial repairs is tried soon after its second half is found, while
ring 1 goes on.

`Rings` is the part of a search that walks them (the `neighbourhood` algorithm, and the first
phase of the evolutionary ones): `next()` gives the next offspring, `told` takes what the
search measured, and `state`/`restore` keep it across a checkpoint (a resumed run walks ring 1
again to where it stood, so the same programs come in the same order).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gi.algorithms.variation import Offspring, Variation
from gi.fitness.tests import NOT_FAILING
from gi.model.edits import Edit
from gi.model.patch import Patch
from gi.model.results import Evaluation
from gi.mutators import MutationContext, Operator
from gi.mutators.neighbourhood import Neighbour, walk
from gi.populations import Individual, ParetoFitness

#: Improvements (or partial repairs) ring 2 combines at most: the first found.
RING2_BASIS = 20


@dataclass
class _Useful:
    """A ring-1 program worth combining: its edit and the failing tests it makes pass."""

    edit: Edit
    operator: str
    fixed: frozenset[str] = field(default_factory=frozenset)


class Rings:
    """Ring 1 and ring 2 of the original program, as one stream of offspring."""

    def __init__(
        self,
        variation: Variation,
        operators: Sequence[Operator],
        context: MutationContext,
        weights: Sequence[float],
        priors: Mapping[str, float] | None = None,
    ) -> None:
        self.variation = variation
        self._weights = tuple(weights)
        self._operators = tuple(operators)
        self._context = context
        self._priors = dict(priors or {})
        self._walk: Iterator[Neighbour] = walk(variation.program, self._operators, context, self._priors)
        #: Edits taken from the walk so far, and the programs they made (the original's too).
        self.walked = 0
        self._seen: set[str] = {variation.program.tree_hash}
        self.ring1_done = False
        #: What ring 1 found worth combining, and the pairs of them (indices) already offered.
        self._useful: list[_Useful] = []
        self._paired: set[tuple[int, int]] = set()
        #: The original's failing training tests (None until told) and its fitness.
        self._failing: frozenset[str] | None = None
        self._original: ParetoFitness | None = None
        self._turn = 0

    @property
    def exhausted(self) -> bool:
        """Nothing is left: ring 1 is walked and every pair of ring 2 offered."""
        return self.ring1_done and self._next_pair() is None

    # --- the stream ---------------------------------------------------------------------------

    def next(self) -> Offspring | None:
        """The next program of the rings not made before (None when they are exhausted): a
        pair of ring 2 every other time one is waiting, else the next of ring 1."""
        self._turn += 1
        pair = self._next_pair()
        if pair is not None and (self._turn % 2 == 0 or self.ring1_done):
            return self._offer_pair(pair)
        single = self._next_single()
        if single is not None:
            return single
        return self._offer_pair(self._next_pair())

    def _next_single(self) -> Offspring | None:
        while not self.ring1_done:
            neighbour = next(self._walk, None)
            if neighbour is None:
                self.ring1_done = True
                return None
            self.walked += 1
            patch = Patch((neighbour.edit,))
            tree_hash = self.variation.tree_hash(patch)
            if tree_hash in self._seen:
                continue
            self._seen.add(tree_hash)
            self.variation.count(neighbour.operator, "proposals")
            return Offspring(patch, (), neighbour.operator, neighbour.edit)
        return None

    def _next_pair(self) -> tuple[int, int] | None:
        """The best pair of useful programs not yet offered: when repairing, the pair whose
        edits together may fix the most failing tests (then the earliest found); otherwise the
        earliest found."""
        best: tuple[tuple[int, int, int], tuple[int, int]] | None = None
        for second in range(len(self._useful)):
            for first in range(second):
                if (first, second) in self._paired:
                    continue
                a, b = self._useful[first], self._useful[second]
                if a.edit.target == b.edit.target:
                    continue
                rank = (-len(a.fixed | b.fixed), second, first)
                if best is None or rank < best[0]:
                    best = (rank, (first, second))
        return None if best is None else best[1]

    def _offer_pair(self, pair: tuple[int, int] | None) -> Offspring | None:
        """The program of `pair` (or of the next pair, while one makes a program made before)."""
        while pair is not None:
            self._paired.add(pair)
            first, second = (self._useful[index] for index in pair)
            patch = Patch((first.edit, second.edit))
            tree_hash = self.variation.tree_hash(patch)
            if tree_hash not in self._seen:
                self._seen.add(tree_hash)
                return Offspring(patch, (), f"{first.operator}+{second.operator}", None)
            pair = self._next_pair()
        return None

    # --- what the search measured -------------------------------------------------------------

    def told(self, children: Sequence[Individual], evaluations: Sequence[Evaluation]) -> None:
        """Note the original's failing tests and which one-edit children are worth combining:
        partial repairs when the original fails tests, else improvements on the original."""
        for child, evaluation in zip(children, evaluations, strict=True):
            if not child.patch.edits:
                self._failing = frozenset(
                    test for test, outcome in evaluation.tests.items() if outcome not in NOT_FAILING
                )
                self._original = child.fitness
        if self._original is None:
            return
        for child, evaluation in zip(children, evaluations, strict=True):
            if len(child.patch.edits) != 1 or len(self._useful) >= RING2_BASIS or not evaluation.ok:
                continue
            useful = self._usefulness(child, evaluation)
            if useful is not None:
                self._useful.append(useful)

    def _usefulness(self, child: Individual, evaluation: Evaluation) -> _Useful | None:
        assert self._original is not None and self._failing is not None
        edit, operator = child.patch.edits[0], child.operator
        if self._failing:
            failing = {test for test, outcome in evaluation.tests.items() if outcome not in NOT_FAILING}
            fixed = self._failing - failing
            if fixed and failing <= self._failing and failing:  # some fixed, none broken, not all
                return _Useful(edit, operator, frozenset(fixed))
            return None
        if child.fitness.feasible and not self._original.dominates(child.fitness) and child.fitness != self._original:
            return _Useful(edit, operator)
        return None

    # --- checkpoints --------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        return {
            "walked": self.walked,
            "ring1_done": self.ring1_done,
            "useful": [
                {"edit": u.edit.to_json(), "operator": u.operator, "fixed": sorted(u.fixed)} for u in self._useful
            ],
            "paired": sorted(list(pair) for pair in self._paired),
            "failing": None if self._failing is None else sorted(self._failing),
            "original": None if self._original is None else [*self._original.values, self._original.violation],
            "turn": self._turn,
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Continue from `state`: walk ring 1 again to where it stood (the programs it made are
        seen again), and take back what was worth combining."""
        walked = int(state.get("walked", 0))
        while self.walked < walked:
            neighbour = next(self._walk, None)
            if neighbour is None:
                break
            self.walked += 1
            self._seen.add(self.variation.tree_hash(Patch((neighbour.edit,))))
        self.ring1_done = bool(state.get("ring1_done", False))
        self._useful = [
            _Useful(Edit.from_json(entry["edit"]), str(entry["operator"]), frozenset(entry["fixed"]))
            for entry in state.get("useful", [])
        ]
        self._paired = {(int(a), int(b)) for a, b in state.get("paired", [])}
        for first, second in self._paired:
            self._seen.add(self.variation.tree_hash(Patch((self._useful[first].edit, self._useful[second].edit))))
        failing = state.get("failing")
        self._failing = None if failing is None else frozenset(failing)
        original = state.get("original")
        self._original = None if original is None else ParetoFitness(self._weights, original[:-1], original[-1])
        self._turn = int(state.get("turn", 0))
