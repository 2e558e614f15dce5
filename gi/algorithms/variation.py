"""Variation: how a search makes new patches, apart from how it keeps or ranks them.

Every algorithm makes its candidates here: a new edit from a uniformly chosen operator (or
from an operator with a share of the mutations, such as the language model's), mutation of
a patch (append, replace or drop an edit), crossover of two patches, a random patch of a
given size; and a `Batch` that applies each proposal, leaves out programs already present
and counts, per operator, what was proposed. Every random choice comes from the one `numpy.random.Generator` given.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from gi.algorithms.adaptive import OperatorSelection
from gi.model.edits import Edit
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from mutators import Crossover, MutationContext, Operator

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
    """The operator that made an offspring's new edit, from its label ("uniform+replace:llm" -> "llm")."""
    return label.rpartition("+")[2].removeprefix("replace:")


@dataclass(frozen=True)
class Candidate:
    """A patch the search wants evaluated, with where it came from."""

    id: str
    patch: Patch
    variant: Variant
    parents: tuple[str, ...]
    operator: str


@dataclass(frozen=True)
class Offspring:
    """A proposed patch before it is applied: its parents, label and new edit (if any)."""

    patch: Patch
    parents: tuple[str, ...]
    operator: str
    edit: Edit | None


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
        """Whether the offspring's new edit left the program as it was without that edit: it
        took no effect (its site was gone, a later edit overwrote it) or made the same program."""
        edits = offspring.patch.edits
        at = [index for index, edit in enumerate(edits) if edit is offspring.edit]
        at = at or [index for index, edit in enumerate(edits) if edit == offspring.edit]
        if not at:
            return False
        index = at[-1]
        if not variant.effective[index]:
            return True
        return self.tree_hash(Patch(edits[:index] + edits[index + 1 :])) == variant.tree_hash

    def new_edit(self, patch: Patch) -> tuple[Edit, str] | None:
        """One edit: by adaptive selection when the search asks for it (the operators with a share
        among the others, at the first attempt while their uses last); else from an operator with
        a share of the mutations for that share (while its uses in the generation last), else from
        a uniformly chosen operator (also when the shared one gives nothing usable)."""
        for attempt in range(MUTATION_TRIES):
            if self.selection.adaptive:
                operator: Operator | None = self._adaptive_choice(attempt)
            else:
                operator = self._shared_choice() if attempt == 0 and self.shared else None
            if operator is None:
                operator = self.uniform[int(self.rng.integers(len(self.uniform)))]
            started = time.perf_counter()
            edit = operator.propose(self.program, patch, self.rng, self.context)
            self.count(operator.name, "seconds", time.perf_counter() - started)
            if edit is not None:
                self.count(operator.name, "proposals")
                return edit, operator.name
            self.count(operator.name, "no_site")
        return None

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

    def mutate(self, patch: Patch) -> tuple[Patch, str, Edit | None] | None:
        """Change a patch: append a new edit, replace a random edit with a new one, or drop a
        random edit, a third of the time each (an empty patch can only grow). Returns the
        patch, a label and the new edit.

        Replacing and dropping let a useful edit shed the harmful ones it arrived with.
        """
        choice = self.rng.random() if patch.edits else 0.0
        if choice >= 2 / 3:
            index = int(self.rng.integers(len(patch)))
            return Patch(patch.edits[:index] + patch.edits[index + 1 :]), "drop", None
        made = self.new_edit(patch)
        if made is None:
            return None
        edit, name = made
        if choice >= 1 / 3:
            index = int(self.rng.integers(len(patch)))
            return Patch((*patch.edits[:index], edit, *patch.edits[index + 1 :])), f"replace:{name}", edit
        return patch.appended(edit), name, edit

    def neighbour(self, patch: Patch, parent: str) -> Offspring | None:
        """A mutation of one patch (a local-search move or a mutation-only offspring)."""
        mutated = self.mutate(patch)
        if mutated is None:
            return None
        return Offspring(mutated[0], (parent,), mutated[1], mutated[2])

    def breed(
        self, first: tuple[str, Patch], second: tuple[str, Patch], crossover_rate: float, mutation_rate: float
    ) -> Offspring | None:
        """An offspring of two parents (id, patch): by crossover with `crossover_rate` (then a
        mutation with `mutation_rate`), else by mutation of the first."""
        if self.crossovers and self.rng.random() < crossover_rate:
            crossover = self.crossovers[int(self.rng.integers(len(self.crossovers)))]
            child = crossover.combine(first[1], second[1], self.rng)
            label, edit = crossover.name, None
            if self.rng.random() < mutation_rate:
                mutated = self.mutate(child)
                if mutated is not None:
                    child, label, edit = mutated[0], f"{label}+{mutated[1]}", mutated[2]
            return Offspring(child, (first[0], second[0]), label, edit)
        return self.neighbour(first[1], first[0])

    def random_patch(self, size: int) -> Offspring | None:
        """A patch of `size` edits, each from a uniformly chosen operator, built without
        looking at any measurement. Its label names the operators in order."""
        patch, names = Patch(), list[str]()
        for _ in range(size):
            made = self.new_edit(patch)
            if made is None:
                break
            patch, names = patch.appended(made[0]), [*names, made[1]]
        if not names:
            return None
        last = patch.edits[-1]
        return Offspring(patch, (), "+".join(names), last)


class Batch:
    """One generation's candidates: each proposal applied, too-long patches and programs
    already present left out (counted as duplicates of the operator that made them, or, when
    the offspring's new edit changed nothing, as unchanged: one count per offspring)."""

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

    def offer(self, offspring: Offspring) -> bool:
        """Add the offspring unless its patch is too long or its program is already here."""
        if len(offspring.patch) > self.max_edits:
            return False
        variant = apply(self.variation.program, offspring.patch)
        self.variation.remember(offspring.patch, variant.tree_hash)
        name = operator_of_label(offspring.operator)
        unchanged = offspring.edit is not None and self.variation.changed_nothing(offspring, variant)
        if unchanged:
            self.variation.count(name, "unchanged")
        if variant.tree_hash in self.seen:
            if not unchanged:
                self.variation.count(name, "duplicates")
            operator = self.variation.by_name.get(name)
            if operator is not None and offspring.edit is not None:
                operator.note_duplicate(offspring.edit)
            return False  # the same program is already here: not worth a slot
        self.seen.add(variant.tree_hash)
        identifier = f"g{self.generation}-i{len(self.candidates)}"
        candidate = Candidate(identifier, offspring.patch, variant, offspring.parents, offspring.operator)
        self.candidates.append(candidate)
        if self.on_candidate is not None:
            self.on_candidate(candidate)
        return True
