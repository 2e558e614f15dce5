"""Variation: how a search makes new patches, apart from how it keeps or ranks them.

Every algorithm makes its candidates here: a new edit from a uniformly chosen operator (or
from an operator with a share of the mutations, such as the language model's), mutation of
a patch (append, replace or drop an edit), crossover of two patches, a random patch of a
given size; and a `Batch` that applies each proposal, leaves out programs already present
and counts, per operator, what was proposed (`ArrivalBatch`, a steady-state search's, takes the
offspring whose operator's answer is in first). Every random choice comes from the one
`numpy.random.Generator` given.
"""

from __future__ import annotations

import collections
import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass

import numpy as np

from gi.algorithms.adaptive import OperatorSelection
from gi.model.edits import Edit
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.mutators import Crossover, MutationContext, Operator
from gi.mutators.base import Deferred, arrival
from gi.mutators.rewritten import in_rewritten, rewritten_share

#: Tries at an operator that finds no legal site before the search gives up on one mutation.
MUTATION_TRIES = 10
#: Candidates tried per slot before a generation is allowed to come out smaller.
BREEDING_TRIES = 20
#: Uses an operator with a share of the mutations (the language model) may make in a generation
#: beyond its share (for replies that give nothing new); past that, the others make its mutations.
SHARE_MARGIN = 2
#: Tree hashes of patches `Variation` remembers before it forgets them all and starts again.
HASHES = 4096


def operator_of_label(label: str) -> str:
    """What made an offspring's new edit, from its label, with the mode an operator may add
    ("uniform+replace:llm.diff" -> "llm.diff"): the accounting's row."""
    return label.rpartition("+")[2].removeprefix("replace:")


def operator_name(label: str) -> str:
    """The name of the operator that made an offspring's new edit, from its label, without
    the mode ("uniform+replace:llm.diff" -> "llm"): what operators and their selection go by."""
    return operator_of_label(label).split(".")[0]


@dataclass(frozen=True)
class Candidate:
    """A patch the search wants evaluated, with where it came from."""

    id: str
    patch: Patch
    variant: Variant
    parents: tuple[str, ...]
    operator: str
    #: The edits the offspring's operator made (its operator learns what became of them).
    edits: tuple[Edit, ...] = ()
    #: The island that bred it (gi/algorithms/islands.py), if the search has islands.
    island: int | None = None


@dataclass(frozen=True)
class Later:
    """New edits still to come from an operator that waits (`Operator.prepare`): the operator,
    its prepared proposal, the patch it was given, and where the edits go in the offspring."""

    operator: Operator
    deferred: Deferred
    base: Patch
    #: The index of the edit the new ones replace in `base`; None: they are appended.
    index: int | None = None

    def place(self, edits: tuple[Edit, ...]) -> Patch:
        return placed(self.base, edits, self.index)


def placed(base: Patch, edits: tuple[Edit, ...], index: int | None) -> Patch:
    """`base` with `edits` appended (`index` None) or in place of its edit `index`."""
    if index is None:
        return Patch((*base.edits, *edits))
    return Patch((*base.edits[:index], *edits, *base.edits[index + 1 :]))


@dataclass(frozen=True)
class Offspring:
    """A proposed patch before it is applied: its parents, label and new edits (if any); or, while
    an operator's answer is awaited, what will make its patch (`later`)."""

    patch: Patch
    parents: tuple[str, ...]
    operator: str
    edit: Edit | None
    #: Every new edit (an operator may make several: a model's change of three statements).
    edits: tuple[Edit, ...] = ()
    later: Later | None = None
    #: The island that bred it, if the search has islands.
    island: int | None = None

    @property
    def new(self) -> tuple[Edit, ...]:
        return self.edits or ((self.edit,) if self.edit is not None else ())


@dataclass(frozen=True)
class New:
    """What `Variation.new_edit` made: the edits at once, or a proposal to finish later."""

    edits: tuple[Edit, ...]
    label: str
    later: tuple[Operator, Deferred] | None = None

    def offspring(self, base: Patch, parents: tuple[str, ...], label: str, index: int | None = None) -> Offspring:
        """The offspring the new edits make of `base` (appended, or in place of edit `index`)."""
        if self.later is not None:
            operator, deferred = self.later
            return Offspring(base, parents, label, None, (), Later(operator, deferred, base, index))
        return Offspring(placed(base, self.edits, index), parents, label, self.edits[-1], self.edits)


class Variation:
    """Operators and crossovers, with per-operator accounting. Operators with a share of the
    mutations (`Operator.share`, the language model's) are drawn first, for their share and
    while their budget for the generation lasts; the others uniformly."""

    def __init__(
        self,
        program: Program,
        operators: Sequence[Operator],
        crossovers: Sequence[Crossover],
        rng: np.random.Generator,
        *,
        context: MutationContext | None = None,
        selection: OperatorSelection | None = None,
    ) -> None:
        self.program = program
        self.operators = tuple(operators)
        #: Operators drawn for a share of the mutations, and those drawn uniformly for the rest.
        self.shared = tuple(operator for operator in self.operators if operator.share() is not None)
        self.uniform = tuple(operator for operator in self.operators if operator.share() is None)
        if not self.uniform:
            raise ValueError("a search needs at least one mutation operator")
        self.by_name = {operator.name: operator for operator in self.operators}
        #: Which operator makes the next edit: as above (uniformly but for the shared ones), or
        #: by recent success (`search.operator_selection`), its names in `operators`' order.
        self.selection = selection or OperatorSelection([operator.name for operator in self.operators])
        self.crossovers = tuple(crossovers)
        self.rng = rng
        self.context = (context or MutationContext()).bind(program)
        #: Uses left in this generation of each operator with a share (`start_generation` sets them).
        self.left: dict[str, int] = {}
        #: Per operator: edits proposed, tries that found no site, offspring that repeated a
        #: program already in the population, offspring whose new edit changed nothing, and
        #: seconds spent proposing.
        self.accounting: dict[str, dict[str, float]] = {}
        #: Tree hashes of patches applied lately (by patch key): the program an offspring's
        #: patch makes without its new edit is most often its parent's.
        self._hashes: dict[str, str] = {}

    def start_generation(self, size: int) -> None:
        """Allow each operator with a share that share of a generation of `size` mutations, plus a margin."""
        self.left = {
            operator.name: math.ceil(size * (operator.share() or 0.0)) + SHARE_MARGIN for operator in self.shared
        }

    def count(self, operator: str, key: str, amount: float = 1.0) -> None:
        """Add to an operator's count (a run resumed from an older store may lack the key)."""
        counts = self.accounting.setdefault(
            operator, {"proposals": 0, "no_site": 0, "duplicates": 0, "unchanged": 0, "seconds": 0.0}
        )
        counts[key] = counts.get(key, 0) + amount

    def tree_hash(self, patch: Patch) -> str:
        """The tree hash of the program `patch` makes (remembered for the last HASHES patches)."""
        key = patch.key()
        found = self._hashes.get(key)
        if found is None:
            found = apply(self.program, patch).tree_hash
            self.remember(patch, found)
        return found

    def remember(self, patch: Patch, tree_hash: str) -> None:
        """Note the tree hash of a patch just applied (all are forgotten past HASHES)."""
        if len(self._hashes) >= HASHES:
            self._hashes.clear()
        self._hashes[patch.key()] = tree_hash

    def changed_nothing(self, offspring: Offspring, variant: Variant) -> bool:
        """Whether the offspring's new edits left the program as it was without them: none took
        effect (their sites were gone, a later edit overwrote them) or they made the same program."""
        edits, new = offspring.patch.edits, offspring.new
        at = [index for index, edit in enumerate(edits) if any(edit is mine for mine in new)]
        at = at or [index for index, edit in enumerate(edits) if edit in new]
        if not at:
            return False
        if not any(variant.effective[index] for index in at):
            return True
        kept = tuple(edit for index, edit in enumerate(edits) if index not in at)
        return self.tree_hash(Patch(kept)) == variant.tree_hash

    def new_edit(self, patch: Patch) -> New | None:
        """New edits: by adaptive selection when the search asks for it (the operators with a share
        among the others, at the first attempt while their uses last); else from an operator with
        a share of the mutations for that share (while its uses in the generation last), else from
        a uniformly chosen operator (also when the shared one finds nothing to propose). An
        operator that waits only prepares its proposal here (`Operator.prepare`: every random
        choice now); its edits come in `resolve`."""
        for attempt in range(MUTATION_TRIES):
            if self.selection.adaptive:
                operator: Operator | None = self._adaptive_choice(attempt)
            else:
                operator = self._shared_choice() if attempt == 0 and self.shared else None
            if operator is None:
                operator = self.uniform[int(self.rng.integers(len(self.uniform)))]
            started = time.perf_counter()
            if operator.waits:
                deferred = operator.prepare(self.program, patch, self.rng, self.context)
                if deferred is not None:
                    self.count(deferred.label, "seconds", time.perf_counter() - started)
                    return New((), deferred.label, (operator, deferred))
                self.count(operator.name, "seconds", time.perf_counter() - started)
            else:
                edit = self._propose(operator, patch)
                self.count(operator.name, "seconds", time.perf_counter() - started)
                if edit is not None:
                    self.count(operator.name, "proposals")
                    return New((edit,), operator.name)
            self.count(operator.name, "no_site")
        return None

    def _propose(self, operator: Operator, patch: Patch) -> Edit | None:
        """The operator's edit; inside a function the patch rewrote whole for the share of the
        variant's statements such functions hold (gi.mutators.rewritten), so that classic
        operators reach the model's code too (no draw when the patch rewrote none)."""
        share = rewritten_share(self.program, patch)
        if share > 0 and self.rng.random() < share:
            return in_rewritten(operator, self.program, patch, self.rng)
        return operator.propose(self.program, patch, self.rng, self.context)

    def resolve(self, offspring: Offspring) -> Offspring | None:
        """The offspring with the edits its operator's answer makes (waiting for it), or None
        when the answer gave none."""
        later = offspring.later
        if later is None:
            return offspring
        name = operator_of_label(offspring.operator)
        started = time.perf_counter()
        edits = later.operator.finish(later.deferred, self.program, later.base)
        self.count(name, "seconds", time.perf_counter() - started)
        if not edits:
            self.count(name, "no_site")
            return None
        self.count(name, "proposals")
        return Offspring(
            later.place(edits), offspring.parents, offspring.operator, edits[-1], edits, island=offspring.island
        )

    def _adaptive_choice(self, attempt: int) -> Operator:
        """The next operator by adaptive selection; one with a share of the mutations (the
        language model's) only at the first attempt, while its uses in the generation last."""
        allowed = [
            operator.share() is None or (attempt == 0 and self.left.get(operator.name, 0) > 0)
            for operator in self.operators
        ]
        operator = self.operators[self.selection.choose(self.rng, allowed)]
        if operator.share() is not None:
            self.left[operator.name] -= 1
        return operator

    def _shared_choice(self) -> Operator | None:
        """The operator with a share whose turn one draw says it is, if its uses last; else None."""
        draw, bound = self.rng.random(), 0.0
        for operator in self.shared:
            bound += operator.share() or 0.0
            if draw < bound:
                if self.left.get(operator.name, 0) <= 0:
                    return None
                self.left[operator.name] -= 1
                return operator
        return None

    def mutate(self, patch: Patch, parents: tuple[str, ...], label: str = "") -> Offspring | None:
        """Change a patch: append new edits, replace a random edit with new ones, or drop a
        random edit, a third of the time each (an empty patch can only grow). The offspring's
        label is `label` (the crossover that made `patch`, if any), then what the mutation did.

        Replacing and dropping let a useful edit shed the harmful ones it arrived with.
        """
        before = f"{label}+" if label else ""
        choice = self.rng.random() if patch.edits else 0.0
        if choice >= 2 / 3:
            index = int(self.rng.integers(len(patch)))
            return Offspring(Patch(patch.edits[:index] + patch.edits[index + 1 :]), parents, f"{before}drop", None)
        made = self.new_edit(patch)
        if made is None:
            return None
        if choice >= 1 / 3:
            index = int(self.rng.integers(len(patch)))
            return made.offspring(patch, parents, f"{before}replace:{made.label}", index)
        return made.offspring(patch, parents, f"{before}{made.label}")

    def neighbour(self, patch: Patch, parent: str) -> Offspring | None:
        """A mutation of one patch (a local-search move or a mutation-only offspring)."""
        return self.mutate(patch, (parent,))

    def breed(
        self, first: tuple[str, Patch], second: tuple[str, Patch], crossover_rate: float, mutation_rate: float
    ) -> Offspring | None:
        """An offspring of two parents (id, patch): by crossover with `crossover_rate` (then a
        mutation with `mutation_rate`), else by mutation of the first."""
        if self.crossovers and self.rng.random() < crossover_rate:
            crossover = self.crossovers[int(self.rng.integers(len(self.crossovers)))]
            child = crossover.combine(first[1], second[1], self.rng)
            parents = (first[0], second[0])
            if self.rng.random() < mutation_rate:
                mutated = self.mutate(child, parents, crossover.name)
                if mutated is not None:
                    return mutated
            return Offspring(child, parents, crossover.name, None)
        return self.neighbour(first[1], first[0])

    def random_patch(self, size: int) -> Offspring | None:
        """A patch of `size` edits, each from a uniformly chosen operator, built without
        looking at any measurement. Its label names the operators in order."""
        patch, names, new = Patch(), list[str](), tuple[Edit, ...]()
        for _ in range(size):
            made = self.new_edit(patch)
            resolved = None if made is None else self.resolve(made.offspring(patch, (), made.label))
            if made is None or resolved is None:  # (the next edit goes on the patch: it waits for this one)
                break
            patch, names, new = resolved.patch, [*names, made.label], resolved.new
        if not names:
            return None
        return Offspring(patch, (), "+".join(names), new[-1], new)


class Batch:
    """One generation's candidates: each proposal applied, too-long patches and programs
    already present left out (counted as duplicates of the operator that made them, or, when
    the offspring's new edit changed nothing, as unchanged: one count per offspring).

    An offspring whose edits an operator is still waiting for (the model's) is queued, and so is
    every offspring bred after it: offspring are offered in the order they were bred, each as
    soon as those before it are, so which reply serves which candidate, and so the batch, is
    fixed by the seed, however fast the replies come. `waiting` is how many are queued;
    `settle_one` waits for the oldest."""

    def __init__(
        self,
        variation: Variation,
        generation: int,
        seen: set[str],
        max_edits: int,
        on_candidate: Callable[[Candidate], None] | None = None,
    ) -> None:
        self.variation = variation
        self.generation = generation
        self.seen = set(seen)
        self.max_edits = max_edits
        self.on_candidate = on_candidate
        self.candidates: list[Candidate] = []
        self.queue: collections.deque[Offspring] = collections.deque()

    @property
    def waiting(self) -> int:
        return len(self.queue)

    def offer(self, offspring: Offspring) -> bool:
        """Add the offspring unless its patch is too long or its program is already here; queue
        it behind one still waiting for its edits (True: queued)."""
        if offspring.later is not None or self.queue:
            self.queue.append(offspring)
            return True
        return self._add(offspring)

    def settle_one(self) -> None:
        """Wait for the oldest queued offspring's edits, offer it, and every offspring behind it
        that waits for nothing."""
        if self.queue:
            self._settle(0)
        while self.queue and self.queue[0].later is None:
            self._add(self.queue.popleft())

    def _settle(self, index: int) -> None:
        """Take queued offspring `index` out of the queue, wait for its edits, and offer it."""
        offspring = self.queue[index]
        del self.queue[index]
        resolved = self.variation.resolve(offspring)
        if resolved is not None:
            self._add(resolved)

    def _add(self, offspring: Offspring) -> bool:
        if len(offspring.patch) > self.max_edits:
            return False
        variant = apply(self.variation.program, offspring.patch)
        self.variation.remember(offspring.patch, variant.tree_hash)
        name = operator_of_label(offspring.operator)
        unchanged = bool(offspring.new) and self.variation.changed_nothing(offspring, variant)
        if unchanged:
            self.variation.count(name, "unchanged")
        if variant.tree_hash in self.seen:
            if not unchanged:
                self.variation.count(name, "duplicates")
            operator = self.variation.by_name.get(operator_name(offspring.operator))
            if operator is not None and offspring.new:
                operator.note_duplicate(offspring.new[-1])
            return False  # the same program is already here: not worth a slot
        self.seen.add(variant.tree_hash)
        identifier = f"g{self.generation}-i{len(self.candidates)}"
        candidate = Candidate(
            identifier, offspring.patch, variant, offspring.parents, offspring.operator, offspring.new, offspring.island
        )
        self.candidates.append(candidate)
        if self.on_candidate is not None:
            self.on_candidate(candidate)
        return True


class OrderError(ValueError):
    """A recorded order of answers names an offspring the batch does not hold waiting."""


class ArrivalBatch(Batch):
    """A steady-state search's batch: an offspring that waits for nothing is offered at once, and
    `settle_one` takes the waiting offspring whose operator's answer came first (the oldest of
    those in), so a slow reply holds up no other. Which one that is, the replies' speed decides:
    `picked` lists each choice as its place among the offspring waiting then, for the run to
    record, and a run following its record gives them back in `recorded_order`. A choice the
    record lacks is the oldest where `lenient` (a run killed before it recorded the order of a
    closing generation's answers), else an OrderError: the run does otherwise than its record.
    With `recorded_order` None the batch goes by the answers."""

    def __init__(
        self,
        variation: Variation,
        generation: int,
        seen: set[str],
        max_edits: int,
        on_candidate: Callable[[Candidate], None] | None = None,
    ) -> None:
        super().__init__(variation, generation, seen, max_edits, on_candidate)
        self.recorded_order: collections.deque[int] | None = None
        self.lenient = True
        self.picked: list[int] = []

    def offer(self, offspring: Offspring) -> bool:
        """Add the offspring as `Batch.offer` does, or queue it while its edits are awaited."""
        if offspring.later is not None:
            self.queue.append(offspring)
            return True
        return self._add(offspring)

    def settle_one(self) -> None:
        """Wait for the edits of the waiting offspring the recorded order names, or else whose
        answer is in first; offer it."""
        if not self.queue:
            return
        if self.recorded_order is None:
            index = self._first_in()
        else:
            if not self.recorded_order and not self.lenient:
                raise OrderError(f"an answer taken where the record takes none ({len(self.queue)} awaited)")
            index = self.recorded_order.popleft() if self.recorded_order else 0
            if not 0 <= index < len(self.queue):
                raise OrderError(f"answer {index} of {len(self.queue)} awaited")
        self.picked.append(index)
        self._settle(index)

    def take_picked(self) -> list[int]:
        """The choices made since the last call."""
        picked, self.picked = self.picked, []
        return picked

    def _first_in(self) -> int:
        """The place of the oldest waiting offspring whose answer is in, once one is."""
        arrivals = [None if offspring.later is None else arrival(offspring.later.deferred) for offspring in self.queue]
        if all(future is not None and not future.done() for future in arrivals):
            wait([future for future in arrivals if future is not None], return_when=FIRST_COMPLETED)
        return next(index for index, future in enumerate(arrivals) if future is None or future.done())
