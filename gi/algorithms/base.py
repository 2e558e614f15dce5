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
from gi.algorithms.features import GridSettings
from gi.algorithms.rings import Rings
from gi.algorithms.strategies import IslandPlan
from gi.algorithms.variation import BREEDING_TRIES, ArrivalBatch, Batch, Candidate, Offspring, Variation, operator_name
from gi.fitness.objectives import Constraint, Objective, objective_values, violation
from gi.model.patch import Patch
from gi.model.program import Program
from gi.model.results import Evaluation
from gi.mutators import Crossover, MutationContext, Operator
from gi.populations import Grid, Individual, ParetoArchive, ParetoFitness


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
    #: The islands algorithm: its islands and their migration (gi/algorithms/islands.py).
    islands: IslandPlan | None = None


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
        grid: GridSettings | None = None,
    ) -> None:
        """`grid`: the quality-diversity grid's features (map_elites breeds from it; any other
        algorithm keeps it to report QD-score and coverage)."""
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
        self.grid_settings = grid
        #: The best program found in each cell of the feature grid (search.grid), if the run keeps one.
        self.grid = (
            Grid(grid.features.shape, self.reference, self.weights, unit=grid.unit, insertion=grid.insertion)
            if grid is not None
            else None
        )
        #: Steady-state: the first population's individuals as they are told, until it is complete
        #: (None once it is, or in a generational run).
        self.initial: list[tuple[Individual, Evaluation]] | None = None
        #: Whether the children being taken in are the initial population (survival starts it).
        self.initialising = False

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
        batch = self.batch(generation, on_candidate)
        if generation == 0:
            batch.offer(Offspring(Patch(), (), "original", None))
            self.fill(batch, self.initial_maker())
        else:
            self._propose(batch)
        return batch.candidates

    def batch(
        self,
        generation: int,
        on_candidate: Callable[[Candidate], None] | None = None,
        mutations: int | None = None,
        *,
        arrivals: bool = False,
    ) -> Batch:
        """An empty batch of `generation`, the operators' shares started for `mutations` (by
        default a population: a steady-state batch holds more, its offspring made ahead);
        `arrivals`: one that takes offspring as their operators' answers come (`ArrivalBatch`,
        a steady-state search's)."""
        self.variation.start_generation(mutations or self.settings.population)
        kind = ArrivalBatch if arrivals else Batch
        return kind(self.variation, generation, self._seen(), self.settings.max_edits, on_candidate)

    def initial_maker(self) -> Callable[[], Offspring | None]:
        """What makes the initial population besides the original: one-edit patches (the rings' first)."""
        return self._from_rings(self._one_edit) if self.walking(0) else self._one_edit

    def _from_rings(self, otherwise: Callable[[], Offspring | None]) -> Callable[[], Offspring | None]:
        """A maker of offspring from the rings, and from `otherwise` once they are exhausted."""
        rings = self.rings
        assert rings is not None
        return lambda: rings.next() if not rings.exhausted else otherwise()

    def fill(self, batch: Batch, make: Callable[[], Offspring | None], size: int | None = None, ahead: int = 0) -> None:
        """Offer what `make()` returns until the batch holds `size` candidates (by default a
        population, fewer where the budget of evaluations leaves less), or tries run out.
        Offspring still waiting for an operator's answer hold a slot: when every slot is held, one
        is waited for (`Batch.settle_one`: the oldest, so that the model's requests are in flight
        together while the batch is fixed by the seed alone, how many are made depending only on
        what came of them; an `ArrivalBatch` takes the first answered). `ahead`
        more may wait beyond `size` (a steady-state search keeps requests in flight between its
        candidates); they stay queued in the batch when it returns."""
        population = self.settings.population
        if size is None:
            size = population if self.batch_limit is None else min(self.batch_limit, population)
            limit = BREEDING_TRIES * population
        else:
            limit = BREEDING_TRIES * max(1, size - len(batch.candidates) + ahead)
        tries = 0
        while True:
            while len(batch.candidates) + batch.waiting < size + ahead and tries < limit:
                tries += 1
                offspring = make()
                if offspring is not None:
                    batch.offer(offspring)
            if len(batch.candidates) >= size or not batch.waiting:
                return
            batch.settle_one()

    def _one_edit(self) -> Offspring | None:
        made = self.variation.new_edit(Patch())
        return None if made is None else made.offspring(Patch(), (), made.label)

    def _seen(self) -> set[str]:
        """Programs a new batch must not repeat: by default, those in the population."""
        return {individual.tree_hash for individual in self.population}

    def _propose(self, batch: Batch) -> None:
        """Fill `batch` with the candidates of a generation after the first."""
        self.fill(batch, self.maker(batch.generation))

    @abstractmethod
    def maker(self, generation: int) -> Callable[[], Offspring | None]:
        """What breeds the offspring of `generation` (after the first), one a call (None: a try
        that made none)."""

    # --- steady state (gi/algorithms/steady.py) ---------------------------------------------------

    @property
    def started(self) -> bool:
        """Whether the initial population is complete (steady-state: told)."""
        return self.generation >= 0

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
        features = (
            self.grid_settings.features.values(candidate.variant, evaluation)
            if self.grid_settings is not None
            else None
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
            features=features,
            extra={} if candidate.island is None else {"island": candidate.island},
        )

    def worst(self) -> tuple[float, ...]:
        """Objective values for a broken variant: the reference point, in each objective's direction."""
        return tuple(o.from_minimised(r) for o, r in zip(self.objectives, self.reference, strict=True))

    def joining(self, candidates: Sequence[Candidate], evaluations: Sequence[Evaluation]) -> list[int]:
        """The positions of the candidates that `tell` with these evaluations would make feasible
        members of the archive (what the report calls the front) or elites of the grid (what its
        QD-score counts); nothing changes."""
        children = [
            self.individual(candidate, evaluation, self.generation + 1)
            for candidate, evaluation in zip(candidates, evaluations, strict=True)
        ]
        trial = ParetoArchive(self.archive.members)
        trial.update(children)
        kept = {id(member) for member in trial.members}
        if self.grid is not None and self.grid_settings is not None:
            cells = self.grid.trial()
            for child in children:
                cells.insert(child, self.grid_settings.features.cell(child.features))
            kept |= {id(elite) for elite in cells.elites.values()}
        return [position for position, child in enumerate(children) if id(child) in kept and child.fitness.feasible]

    def tell(self, candidates: Sequence[Candidate], evaluations: Sequence[Evaluation]) -> list[Individual]:
        """Take the evaluations of the batch from `ask`; returns the new individuals."""
        self.generation += 1
        children = [
            self.individual(candidate, evaluation, self.generation)
            for candidate, evaluation in zip(candidates, evaluations, strict=True)
        ]
        self.take(children, evaluations, initial=self.generation == 0)
        self.generation_done()
        return children

    def generation_done(self) -> None:  # noqa: B027 (most algorithms do nothing between generations)
        """What the algorithm does once a generation is told (the islands migrate)."""

    def take(self, children: list[Individual], evaluations: Sequence[Evaluation], *, initial: bool = False) -> None:
        """Let `children` into the grid, the population (the algorithm's survival: `initial`, they
        are the initial population) and the archive."""
        parents = {individual.id: individual for individual in (*self.population, *self.archive.members)}
        self._illuminate(children)
        self.initialising = initial
        try:
            self._survive(children)
        finally:
            self.initialising = False
        self.archive.update(children)
        if self.rings is not None:
            self.rings.told(children, evaluations)
        self._credit(children, parents)

    def _illuminate(self, children: Sequence[Individual]) -> None:
        """Offer each child its cell of the grid, if the run keeps one."""
        if self.grid is None or self.grid_settings is None:
            return
        for child in children:
            self.grid.insert(child, self.grid_settings.features.cell(child.features))

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
        if self.grid is not None:
            state["grid"] = [[list(cell), elite.id] for cell, elite in sorted(self.grid.elites.items())]
        return state

    def stored_ids(self, state: Mapping[str, Any]) -> list[str]:
        """The individuals a checkpoint's `state` names beyond its population and archive (the
        grid's elites), which the caller rebuilds for `restore`."""
        return [str(identifier) for _, identifier in state.get("grid", [])]

    def restore(
        self,
        generation: int,
        population: list[Individual],
        archive: list[Individual],
        state: Mapping[str, Any] | None = None,
        others: Mapping[str, Individual] | None = None,
    ) -> None:
        """Continue from a checkpoint (the generator's state is restored by the caller);
        `others` holds the individuals of `stored_ids`, by id."""
        self.generation = generation
        self.population = population
        self.archive = ParetoArchive(archive)
        state = dict(state or {})
        if self.grid is not None:
            found = {**{i.id: i for i in (*population, *archive)}, **(others or {})}
            self.grid.restore((tuple(cell), found[identifier]) for cell, identifier in state.get("grid", []))
        if self.rings is not None and "rings" in state:
            self.rings.restore(state["rings"])
        if self.selection.adaptive and "operator_selection" in state:
            self.selection.restore(state["operator_selection"])
        self._restored(state)

    def _restored(self, state: dict[str, Any]) -> None:  # noqa: B027 (most algorithms derive nothing)
        """Rebuild what the algorithm derives from its population (ranks, say) and `state`."""

    # --- figures ----------------------------------------------------------------------------

    @property
    def front(self) -> list[Individual]:
        """The Pareto archive's members."""
        return self.archive.members

    def hypervolume(self) -> float:
        return self.archive.hypervolume(self.reference, self.weights)

    def diversity(self) -> dict[str, float] | None:
        """The grid's QD-score and coverage, if the run keeps a grid."""
        if self.grid is None:
            return None
        return {"qd_score": self.grid.qd_score(), "coverage": self.grid.coverage()}

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

    def maker(self, generation: int) -> Callable[[], Offspring | None]:
        return self._from_rings(self._breed) if self.walking(generation) else self._breed
