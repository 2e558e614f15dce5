"""Islands: several populations, each its own algorithm, operators and model modes, with migration.

Every island is a search of its own (any registered algorithm) over the run's program, with a
subset of the run's operators and, where the language model is among them, its own weights of
the model's modes (`MutationContext.modes`: an island that only asks for diffs, another that
only rewrites). Which island breeds each offspring is the island selection's choice (round
robin by default: each breeds an equal share); each child goes back to the island that bred it.
Every `interval` generations each island sends its best (up to `migrants` of its feasible
front) along the migration's routes (a ring by default), and the receiver takes them in by its
own survival. The initial population is the original (on every island) and one-edit patches,
as for every algorithm, each island making its own.

All islands draw from the run's one generator; the Pareto archive (the report's front) and the
grid are the whole run's. On Dask, each island's evaluations go to a worker of its own
(`Candidate.island`, gi/engine/backends/cluster.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from gi.algorithms.base import Search
from gi.algorithms.strategies import IslandPlan, IslandSelection
from gi.algorithms.variation import Batch, Candidate, Offspring
from gi.populations import Individual


class Islands(Search):
    """Several searches side by side, migrating their best every few generations."""

    name = "islands"
    description = (
        "islands: several populations, each with its own algorithm, operators and model modes"
        " (search.islands), exchanging their best every few generations along a ring or at random"
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        plan = self.settings.islands
        if plan is None or not plan.islands:
            raise ValueError("the islands algorithm needs its islands (search.islands)")
        self.plan: IslandPlan = plan
        self.selection_strategy: IslandSelection = plan.selection()
        from gi.algorithms import ALGORITHMS  # the registry holds this class too

        self.islands: list[Search] = []
        for island in plan.islands:
            operators = [
                op for op in self.variation.operators if island.operators is None or op.name in island.operators
            ]
            context = self.variation.context
            if island.modes is not None:
                context = dataclasses.replace(context, modes=dict(island.modes))
            settings = dataclasses.replace(
                self.settings, population=island.population, neighbourhood=0.0, islands=None, max_evaluations=None
            )
            grid = self.grid_settings if island.algorithm == "map_elites" else None
            kind = ALGORITHMS.get(island.algorithm)
            self.islands.append(
                kind(self.program, self.objectives, self.constraint, operators, self.variation.crossovers, settings,
                     self.rng, reference=self.reference, test_count=self.test_count, context=context, grid=grid)
            )  # fmt: skip

    # --- what the engine reads --------------------------------------------------------------

    @property
    def accounting(self) -> dict[str, dict[str, float]]:
        """Per operator, added up over the islands and the batches' own counts."""
        total: dict[str, dict[str, float]] = {}
        for part in (self.variation.accounting, *(island.variation.accounting for island in self.islands)):
            for operator, counts in part.items():
                row = total.setdefault(operator, {})
                for key, value in counts.items():
                    row[key] = row.get(key, 0) + value
        return total

    @accounting.setter
    def accounting(self, value: dict[str, dict[str, float]]) -> None:
        # A restored run takes each island's own counts from the search's state (`restore`).
        pass

    # --- breeding ---------------------------------------------------------------------------

    def batch(
        self,
        generation: int,
        on_candidate: Callable[[Candidate], None] | None = None,
        mutations: int | None = None,
        *,
        arrivals: bool = False,
    ) -> Batch:
        scale = (mutations or self.settings.population) / self.settings.population
        for island in self.islands:
            island.variation.start_generation(round(island.settings.population * scale))
        return super().batch(generation, on_candidate, mutations, arrivals=arrivals)

    def maker(self, generation: int) -> Callable[[], Offspring | None]:
        return self._bred_by(lambda island: island.maker(generation)())

    def initial_maker(self) -> Callable[[], Offspring | None]:
        # Each island's one-edit patches come from its own operators (and model modes).
        return self._bred_by(lambda island: island._one_edit())

    def _bred_by(self, make: Callable[[Search], Offspring | None]) -> Callable[[], Offspring | None]:
        """A maker of offspring from the island the selection chooses, each marked with it."""

        def made() -> Offspring | None:
            index = self.selection_strategy.choose(self.islands, self.rng)
            offspring = make(self.islands[index])
            return None if offspring is None else dataclasses.replace(offspring, island=index)

        return made

    def _seen(self) -> set[str]:
        return {member.tree_hash for island in self.islands for member in island.population}

    # --- survival and migration -------------------------------------------------------------

    def _survive(self, children: list[Individual]) -> None:
        # Each child goes to the island that bred it; the original starts on every island.
        original = [child for child in children if "island" not in child.extra and not child.patch.edits]
        for index, island in enumerate(self.islands):
            mine = [child for child in children if child.extra.get("island", 0) == index and child not in original]
            if self.initialising:
                mine = [*original, *mine]
            if mine:
                self._admit(island, mine, bred=True)
        self._gather()

    def _admit(self, island: Search, members: list[Individual], *, bred: bool) -> None:
        """Let members into an island: its survival and archive (and, for its own offspring,
        the credit of the operators that made them)."""
        island.generation = self.generation
        parents = {individual.id: individual for individual in (*island.population, *island.archive.members)}
        island._illuminate(members)
        island.initialising = self.initialising
        try:
            island._survive(members)
        finally:
            island.initialising = False
        island.archive.update(members)
        if bred:
            island._credit(members, parents)

    def _gather(self) -> None:
        """The search's population: every island's, each member once."""
        found: dict[str, Individual] = {}
        for island in self.islands:
            for member in island.population:
                found.setdefault(member.id, member)
        self.population = list(found.values())

    def generation_done(self) -> None:
        """Migrate every `interval` generations: each route's sender sends its best, chosen
        before any island takes in what it receives."""
        if self.generation <= 0 or self.generation % self.plan.interval:
            return
        moves = [
            (receiver, self.plan.migration.emigrants(self.islands[sender], self.plan.migrants, self.rng))
            for sender, receiver in self.plan.migration.routes(len(self.islands), self.rng)
        ]
        for receiver, migrants in moves:
            island = self.islands[receiver]
            present = {member.tree_hash for member in island.population}
            newcomers = [migrant for migrant in migrants if migrant.tree_hash not in present]
            if newcomers:
                self._admit(island, newcomers, bred=False)
        self._gather()

    # --- checkpoints ------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        return {
            **super().state(),
            "selection": self.selection_strategy.state(),
            "islands": [
                {
                    "population": [member.id for member in island.population],
                    "archive": [member.id for member in island.archive.members],
                    "state": island.state(),
                    "accounting": island.variation.accounting,
                }
                for island in self.islands
            ],
            "accounting": self.variation.accounting,
        }

    def stored_ids(self, state: Mapping[str, Any]) -> list[str]:
        named = super().stored_ids(state)
        for island in state.get("islands", []):
            named += [str(identifier) for identifier in (*island["population"], *island["archive"])]
            named += [str(identifier) for _, identifier in island["state"].get("grid", [])]
        return named

    def restore(
        self,
        generation: int,
        population: list[Individual],
        archive: list[Individual],
        state: Mapping[str, Any] | None = None,
        others: Mapping[str, Individual] | None = None,
    ) -> None:
        super().restore(generation, population, archive, state, others)
        state = dict(state or {})
        found = {**{i.id: i for i in (*population, *archive)}, **(others or {})}
        self.selection_strategy.restore(state.get("selection"))
        self.variation.accounting = dict(state.get("accounting", {}))
        for island, saved in zip(self.islands, state.get("islands", []), strict=False):
            island.restore(
                generation,
                [found[i] for i in saved["population"]],
                [found[i] for i in saved["archive"]],
                saved.get("state"),
                found,
            )
            island.variation.accounting = dict(saved.get("accounting", {}))
        self._gather()
