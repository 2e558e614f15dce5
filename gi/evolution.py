"""The evolutionary loop as ask/tell: NSGA-II over patches.

`ask` proposes the next batch of candidate patches (the initial population, then
offspring by crossover and mutation), already applied and with duplicate programs left
out; the caller evaluates them; `tell` turns the evaluations into individuals, runs
NSGA-II survival and updates the Pareto archive. Every random choice comes from the one
`numpy.random.Generator` the search is given.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fitness.objectives import Constraint, Objective, objective_values, violation
from gi.edits import Edit
from gi.patch import Patch, Variant, apply
from gi.program import Program
from gi.results import Evaluation
from mutators import Crossover, MutationContext, Operator
from mutators.llm import LLMOperator
from populations import (
    Individual,
    ParetoArchive,
    ParetoFitness,
    crowded_tournament,
    nsga2_survivors,
    rank_and_crowd,
)

#: Tries at an operator that finds no legal site before the search gives up on one mutation.
MUTATION_TRIES = 10
#: Candidates tried per slot before a generation is allowed to come out smaller.
BREEDING_TRIES = 20
#: Uses of the language model a generation may make beyond its share of mutations (for
#: replies that give nothing new); past that, its mutations come from classic operators.
LLM_MARGIN = 2


def operator_of_label(label: str) -> str:
    """The operator that made an offspring's new edit, from its label ("uniform+replace:llm" -> "llm")."""
    return label.rpartition("+")[2].removeprefix("replace:")


@dataclass(frozen=True)
class SearchSettings:
    population: int = 20
    generations: int = 10
    crossover_rate: float = 0.5
    mutation_rate: float = 1.0
    max_edits: int = 10
    archive_parents: float = 0.5


@dataclass(frozen=True)
class Candidate:
    """A patch the search wants evaluated, with where it came from."""

    id: str
    patch: Patch
    variant: Variant
    parents: tuple[str, ...]
    operator: str


class NSGA2:
    """NSGA-II with constrained domination, elitism and a Pareto archive."""

    def __init__(
        self,
        program: Program,
        objectives: Sequence[Objective],
        constraint: Constraint,
        operators: Sequence[Operator],
        crossovers: Sequence[Crossover],
        settings: SearchSettings,
        rng: np.random.Generator,
        *,
        reference: Sequence[float],
        test_count: int,
        context: MutationContext | None = None,
        llm: LLMOperator | None = None,
        llm_share: float = 0.0,
    ) -> None:
        if not operators:
            raise ValueError("NSGA2 needs at least one mutation operator")
        self.program = program
        self.objectives = tuple(objectives)
        self.constraint = constraint
        self.operators = tuple(operators)
        self.crossovers = tuple(crossovers)
        self.settings = settings
        self.rng = rng
        self.reference = tuple(reference)
        self.test_count = test_count
        self.context = (context or MutationContext()).bind(program)
        self.llm = llm
        self.llm_share = llm_share if llm is not None else 0.0
        #: Uses of the language model left in this generation (`ask` sets it).
        self.llm_left = 0
        #: Per operator: edits proposed, tries that found no site, offspring that repeated a
        #: program already in the population, and seconds spent proposing.
        self.accounting: dict[str, dict[str, float]] = {}
        self.weights = tuple(objective.weight for objective in self.objectives)
        self.population: list[Individual] = []
        self.archive = ParetoArchive()
        self.generation = -1  # the initial population is generation 0

    # --- variation -----------------------------------------------------------------------

    def _count(self, operator: str, key: str, amount: float = 1.0) -> None:
        counts = self.accounting.setdefault(operator, {"proposals": 0, "no_site": 0, "duplicates": 0, "seconds": 0.0})
        counts[key] += amount

    def new_edit(self, patch: Patch) -> tuple[Edit, str] | None:
        """One edit: from the language model for a `llm_share` of mutations (while the
        generation's uses of it last), else from a uniformly chosen classic operator (also
        when the model gives nothing usable)."""
        for attempt in range(MUTATION_TRIES):
            use_llm = attempt == 0 and self.llm is not None and self.rng.random() < self.llm_share
            operator: Operator
            if use_llm and self.llm is not None and self.llm_left > 0:
                self.llm_left -= 1
                operator = self.llm
            else:
                operator = self.operators[int(self.rng.integers(len(self.operators)))]
            started = time.perf_counter()
            edit = operator.propose(self.program, patch, self.rng, self.context)
            self._count(operator.name, "seconds", time.perf_counter() - started)
            if edit is not None:
                self._count(operator.name, "proposals")
                return edit, operator.name
            self._count(operator.name, "no_site")
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

    def _parent(self) -> Individual:
        """A parent from the Pareto archive (with probability `archive_parents`, uniformly) or by
        a crowded tournament on the population.

        In GI the front is often tiny (most edits break something), so the population fills up
        with dominated patches; drawing half the parents from the archive, as SPEA2 draws all of
        them, keeps the search building on the best programs found.
        """
        archive = self.archive.feasible() or self.archive.members
        if archive and self.rng.random() < self.settings.archive_parents:
            return archive[int(self.rng.integers(len(archive)))]
        return crowded_tournament(self.population, 1, self.rng)[0]

    def _breed(self) -> tuple[Patch, tuple[str, ...], str, Edit | None] | None:
        """An offspring: its patch, parents, label and new edit (None if it has none)."""
        first, second = self._parent(), self._parent()
        if self.crossovers and self.rng.random() < self.settings.crossover_rate:
            crossover = self.crossovers[int(self.rng.integers(len(self.crossovers)))]
            child = crossover.combine(first.patch, second.patch, self.rng)
            label, parents, edit = crossover.name, (first.id, second.id), None
            if self.rng.random() < self.settings.mutation_rate:
                mutated = self.mutate(child)
                if mutated is not None:
                    child, label, edit = mutated[0], f"{label}+{mutated[1]}", mutated[2]
            return child, parents, label, edit
        mutated = self.mutate(first.patch)
        if mutated is None:
            return None
        return mutated[0], (first.id,), mutated[1], mutated[2]

    def ask(self) -> list[Candidate]:
        """The next batch to evaluate: the initial population, or one generation of offspring.

        The language model is used at most its share of the generation's mutations plus
        LLM_MARGIN times, however many of its replies make programs already here.
        """
        generation = self.generation + 1
        seen = {individual.tree_hash for individual in self.population}
        batch: list[Candidate] = []
        self.llm_left = math.ceil(self.settings.population * self.llm_share) + LLM_MARGIN if self.llm is not None else 0

        def offer(patch: Patch, parents: tuple[str, ...], operator: str, edit: Edit | None) -> None:
            if len(patch) > self.settings.max_edits:
                return
            variant = apply(self.program, patch)
            if variant.tree_hash in seen:
                self._count(operator_of_label(operator), "duplicates")
                if self.llm is not None and edit is not None and operator_of_label(operator) == self.llm.name:
                    self.llm.note_duplicate(edit)
                return  # the same program is already here: not worth a slot
            seen.add(variant.tree_hash)
            batch.append(Candidate(f"g{generation}-i{len(batch)}", patch, variant, parents, operator))

        if generation == 0:
            offer(Patch(), (), "original", None)
        tries = 0
        while len(batch) < self.settings.population and tries < BREEDING_TRIES * self.settings.population:
            tries += 1
            if generation == 0:
                made = self.new_edit(Patch())
                if made is not None:
                    offer(Patch((made[0],)), (), made[1], made[0])
            else:
                bred = self._breed()
                if bred is not None:
                    offer(*bred)
        return batch

    # --- selection -----------------------------------------------------------------------

    def individual(self, candidate: Candidate, evaluation: Evaluation, generation: int) -> Individual:
        """Score a candidate: objective values, constraint violation, DEAP fitness."""
        worst = self.worst()
        values = objective_values(self.objectives, evaluation.measures, worst) if evaluation.ok else None
        fitness = ParetoFitness(
            self.weights,
            values if values is not None else worst,
            violation(self.constraint, evaluation.measures, ok=evaluation.ok, test_count=self.test_count),
        )
        return Individual(
            id=candidate.id,
            patch=candidate.patch,
            tree_hash=candidate.variant.tree_hash,
            generation=generation,
            fitness=fitness,
            parents=candidate.parents,
            operator=candidate.operator,
            objectives=values,
        )

    def worst(self) -> tuple[float, ...]:
        """Objective values for a broken variant: the reference point, in each objective's direction."""
        return tuple(o.from_minimised(r) for o, r in zip(self.objectives, self.reference, strict=True))

    def tell(self, candidates: Sequence[Candidate], evaluations: Sequence[Evaluation]) -> list[Individual]:
        """Take the evaluations of the batch from `ask`; returns the new individuals."""
        self.generation += 1
        children = [
            self.individual(candidate, evaluation, self.generation)
            for candidate, evaluation in zip(candidates, evaluations, strict=True)
        ]
        if self.generation == 0:
            self.population = children
            rank_and_crowd(self.population)
        else:
            self.population = nsga2_survivors(self.population + children, self.settings.population)
        self.archive.update(children)
        return children

    def restore(self, generation: int, population: list[Individual], archive: list[Individual]) -> None:
        """Continue from a checkpoint (the generator's state is restored by the caller)."""
        self.generation = generation
        self.population = population
        rank_and_crowd(self.population)
        self.archive = ParetoArchive(archive)

    def hypervolume(self) -> float:
        return self.archive.hypervolume(self.reference, self.weights)

    def best(self) -> dict[str, float]:
        """The best value of each objective among feasible members of the archive."""
        feasible = [member.objectives for member in self.archive.feasible() if member.objectives is not None]
        best: dict[str, float] = {}
        for index, objective in enumerate(self.objectives):
            values = [vector[index] for vector in feasible]
            if values:
                best[objective.name] = min(values, key=objective.minimised)
        return best
