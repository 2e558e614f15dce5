"""The ask/tell interface every search algorithm has, and what they share.

`ask` proposes the next batch of candidates (generation 0: the original and one-edit
patches, the same for every algorithm; afterwards, whatever the algorithm makes), already
applied and with programs already present left out; the caller evaluates them; `tell`
scores them (objective values, constraint violation, DEAP fitness), lets the algorithm
choose what it keeps, and updates the run's Pareto archive, which every algorithm has and
which is what the report calls the front.

What an algorithm keeps between generations is its `population` (saved as individual ids
in each checkpoint) and `state()` (JSON, saved beside it), so a resumed run continues
exactly: the caller restores the generator's state too.

With `neighbourhood` above 0, a search first walks the rings of the original program
(gi/algorithms/rings.py: every one-edit program best first, and pairs of what they found
useful) for that share of its generations, or until they are exhausted; the evolutionary
algorithms then breed from what the rings found.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from gi.algorithms.adaptive import OperatorSelection
from gi.algorithms.rings import Rings
from gi.algorithms.variation import BREEDING_TRIES, Batch, Candidate, Offspring, Variation, operator_name
from gi.fitness.objectives import Constraint, Objective, objective_values, violation
from gi.model.patch import Patch
from gi.model.program import Program
from gi.model.results import Evaluation
from gi.mutators import Crossover, MutationContext, Operator
from gi.populations import Individual, ParetoArchive, ParetoFitness


@dataclass(frozen=True)
class SearchSettings:
    population: int = 20
    generations: int = 10
    crossover_rate: float = 0.5
    mutation_rate: float = 1.0
    max_edits: int = 10
    archive_parents: float = 0.5
    #: NSGA-III: divisions of each objective's axis for the reference directions (None: as
    #: many as the population can hold one member each).
    reference_divisions: int | None = None
    #: The share of the generations (the initial one included) that walk the rings of the
    #: original program before the algorithm's own proposals; 0: none.
    neighbourhood: float = 0.0
    #: "uniform": every classic operator as likely; "adaptive": by recent success
    #: (gi/algorithms/adaptive.py).
    operator_selection: str = "uniform"
    #: The evaluations the run may make (search.max_evaluations): the rings' share is of them.
    max_evaluations: int | None = None


class Search(ABC):
    """An ask/tell search over patches with a Pareto archive of the whole run."""

    #: The name a config gives in `search.algorithm`, and what `gi algorithms` says of it.
    name: ClassVar[str]
    description: ClassVar[str]

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
    ) -> None:
        self.program = program
        self.objectives = tuple(objectives)
        self.constraint = constraint
        self.settings = settings
        self.rng = rng
        shares = {operator.name: operator.share() for operator in operators}
        given = sum(share for share in shares.values() if share is not None)
        uniform = [name for name, share in shares.items() if share is None]
        # An operator with a share (the model's) is one more arm of adaptive selection, starting
        # at its share; the others split the rest evenly, as uniform drawing gives them.
        priors = (
            {name: share if share is not None else (1 - given) / max(len(uniform), 1) for name, share in shares.items()}
            if given > 0
            else None
        )
        self.selection = OperatorSelection(
            list(shares), adaptive=settings.operator_selection == "adaptive", priors=priors
        )
        self.variation = Variation(program, operators, crossovers, rng, context=context, selection=self.selection)
        self.reference = tuple(reference)
        self.test_count = test_count
        self.weights = tuple(objective.weight for objective in self.objectives)
        self.population: list[Individual] = []
        self.archive = ParetoArchive()
        self.generation = -1  # the initial population is generation 0
        #: The most candidates the next batch may hold (the engine's budget of evaluations), if
        #: fewer than a population; and the programs evaluated so far (set by the engine).
        self.batch_limit: int | None = None
        self.evaluated = 0
        #: The evaluations the run may make (search.max_evaluations), if it says.
        self.evaluation_budget = settings.max_evaluations
        self.rings = (
            Rings(self.variation, self.variation.operators, self.variation.context, self.weights)
            if self.neighbourhood_share > 0
            else None
        )

    @property
    def neighbourhood_share(self) -> float:
        """The share of the generations that walk the rings (`SearchSettings.neighbourhood`)."""
        return self.settings.neighbourhood

    def walking(self, generation: int) -> bool:
        """Whether `generation` walks the rings: within their share of the budget (of the
        evaluations when the run has a budget of them, else of the generations), while they
        have programs left."""
        if self.rings is None or self.rings.exhausted:
            return False
        if self.evaluation_budget is not None:
            return self.evaluated < self.neighbourhood_share * self.evaluation_budget
        return generation < math.ceil(self.neighbourhood_share * (self.settings.generations + 1))

    # --- what the engine reads and sets ------------------------------------------------------

    @property
    def accounting(self) -> dict[str, dict[str, float]]:
        """Per operator: edits proposed, tries that found no site, duplicates, seconds."""
        return self.variation.accounting

    @accounting.setter
    def accounting(self, value: dict[str, dict[str, float]]) -> None:
        self.variation.accounting = value

    # --- ask ------------------------------------------------------------------------------

    def ask(self, on_candidate: Callable[[Candidate], None] | None = None) -> list[Candidate]:
        """The next batch to evaluate: the initial population, or one generation's proposals.
        `on_candidate` is given each candidate as soon as it is bred (to start evaluating it
        while the rest are bred); the batch does not depend on what it does.

        An operator with a share of the mutations (the language model) is used at most that share
        of the generation's mutations plus SHARE_MARGIN times, however many of its proposals make
        programs already here.
        """
        generation = self.generation + 1
        self.variation.start_generation(self.settings.population)
        batch = Batch(self.variation, generation, self._seen(), self.settings.max_edits, on_candidate)
        if generation == 0:
            batch.offer(Offspring(Patch(), (), "original", None))
            self._fill(batch, self._from_rings(self._one_edit) if self.walking(0) else self._one_edit)
        else:
            self._propose(batch)
        return batch.candidates

    def _from_rings(self, otherwise: Callable[[], Offspring | None]) -> Callable[[], Offspring | None]:
        """A maker of offspring from the rings, and from `otherwise` once they are exhausted."""
        rings = self.rings
        assert rings is not None
        return lambda: rings.next() if not rings.exhausted else otherwise()

    def _fill(self, batch: Batch, make: Callable[[], Offspring | None]) -> None:
        """Offer what `make()` returns until the batch holds a population (fewer where the budget
        of evaluations leaves less), or tries run out. Offspring still waiting for an operator's
        answer hold a slot: when every slot is held, the oldest is waited for, so that the model's
        requests are in flight together while the batch is fixed by the seed alone (how many are
        made depends only on what came of them)."""
        tries, population = 0, self.settings.population
        size = population if self.batch_limit is None else min(self.batch_limit, population)
        while True:
            while len(batch.candidates) + batch.waiting < size and tries < BREEDING_TRIES * population:
                tries += 1
                offspring = make()
                if offspring is not None:
                    batch.offer(offspring)
            if not batch.waiting:
                return
            batch.settle_one()

    def _one_edit(self) -> Offspring | None:
        made = self.variation.new_edit(Patch())
        return None if made is None else made.offspring(Patch(), (), made.label)

    def _seen(self) -> set[str]:
        """Programs a new batch must not repeat: by default, those in the population."""
        return {individual.tree_hash for individual in self.population}

    @abstractmethod
    def _propose(self, batch: Batch) -> None:
        """Fill `batch` with the candidates of a generation after the first."""

    # --- tell -----------------------------------------------------------------------------

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

    def joining(self, candidates: Sequence[Candidate], evaluations: Sequence[Evaluation]) -> list[int]:
        """The positions of the candidates that `tell` with these evaluations would make feasible
        members of the archive (what the report calls the front); nothing changes."""
        children = [
            self.individual(candidate, evaluation, self.generation + 1)
            for candidate, evaluation in zip(candidates, evaluations, strict=True)
        ]
        trial = ParetoArchive(self.archive.members)
        trial.update(children)
        kept = {id(member) for member in trial.members}
        return [position for position, child in enumerate(children) if id(child) in kept and child.fitness.feasible]

    def tell(self, candidates: Sequence[Candidate], evaluations: Sequence[Evaluation]) -> list[Individual]:
        """Take the evaluations of the batch from `ask`; returns the new individuals."""
        self.generation += 1
        children = [
            self.individual(candidate, evaluation, self.generation)
            for candidate, evaluation in zip(candidates, evaluations, strict=True)
        ]
        parents = {individual.id: individual for individual in (*self.population, *self.archive.members)}
        self._survive(children)
        self.archive.update(children)
        if self.rings is not None:
            self.rings.told(children, evaluations)
        self._credit(children, parents)
        return children

    def _credit(self, children: Sequence[Individual], parents: Mapping[str, Individual]) -> None:
        """Credit each child's operator (the one that made its new edit): a success when the
        child entered the archive or dominates one of its parents."""
        if not self.selection.adaptive:
            return
        kept = {id(member) for member in self.archive.members}
        for child in children:
            if not child.patch.edits or child.operator == "original":
                continue
            success = id(child) in kept or any(
                parent in parents and child.fitness.dominates(parents[parent].fitness) for parent in child.parents
            )
            self.selection.credit(operator_name(child.operator), success)

    @abstractmethod
    def _survive(self, children: list[Individual]) -> None:
        """Choose the population that goes on, from the present one and `children`."""

    # --- checkpoints ----------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """What the algorithm keeps beyond its population, archive and generator (JSON)."""
        state: dict[str, Any] = {}
        if self.rings is not None:
            state["rings"] = self.rings.state()
        if self.selection.adaptive:
            state["operator_selection"] = self.selection.state()
        return state

    def restore(
        self,
        generation: int,
        population: list[Individual],
        archive: list[Individual],
        state: Mapping[str, Any] | None = None,
    ) -> None:
        """Continue from a checkpoint (the generator's state is restored by the caller)."""
        self.generation = generation
        self.population = population
        self.archive = ParetoArchive(archive)
        state = dict(state or {})
        if self.rings is not None and "rings" in state:
            self.rings.restore(state["rings"])
        if self.selection.adaptive and "operator_selection" in state:
            self.selection.restore(state["operator_selection"])
        self._restored(state)

    def _restored(self, state: dict[str, Any]) -> None:  # noqa: B027 (most algorithms derive nothing)
        """Rebuild what the algorithm derives from its population (ranks, say) and `state`."""

    # --- figures ----------------------------------------------------------------------------

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


class Evolutionary(Search):
    """A population-based search: parents from the archive or a tournament, offspring by
    crossover and/or mutation; subclasses choose the tournament and the survivors."""

    def _parent(self) -> Individual:
        """A parent from the Pareto archive (with probability `archive_parents`, uniformly) or by
        the algorithm's tournament on the population.

        In GI the front is often tiny (most edits break something), so the population fills up
        with dominated patches; drawing half the parents from the archive, as SPEA2 draws all of
        them, keeps the search building on the best programs found.
        """
        archive = self.archive.feasible() or self.archive.members
        if archive and self.rng.random() < self.settings.archive_parents:
            return archive[int(self.rng.integers(len(archive)))]
        return self._tournament()

    @abstractmethod
    def _tournament(self) -> Individual:
        """One parent chosen from the population by the algorithm's own comparison."""

    def _breed(self) -> Offspring | None:
        first, second = self._parent(), self._parent()
        return self.variation.breed(
            (first.id, first.patch),
            (second.id, second.patch),
            self.settings.crossover_rate,
            self.settings.mutation_rate,
        )

    def _propose(self, batch: Batch) -> None:
        self._fill(batch, self._from_rings(self._breed) if self.walking(batch.generation) else self._breed)
