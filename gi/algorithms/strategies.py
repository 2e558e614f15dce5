"""The pluggable strategies of the islands and the grid: small interfaces a user can supply.

- `IslandSelection`: which island breeds the next offspring (search.islands.selection):
  `RoundRobin` (each in turn, the default) or `RandomIsland`.
- `Migration`: which islands send migrants to which, and whom (search.islands.migration):
  `RingMigration` (island i to i + 1, the default) or `RandomMigration`; both send the best,
  drawn from the sending island's feasible front.
- `Insertion` (gi.populations.grid): who keeps a cell of the MAP-Elites grid (search.grid.insertion).

A config names a built-in one by its name, or a user's class by its dotted path
("module:Class" or "package.module.Class", imported from the config's folder), made with no
arguments. Every random choice takes the search's generator; a strategy keeps what it needs
between generations in `state()` (JSON), so a resumed run continues exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from gi.populations import Individual


class Island(Protocol):
    """What a strategy may read of an island: its population and Pareto archive."""

    @property
    def population(self) -> list[Individual]: ...

    @property
    def front(self) -> list[Individual]: ...


@runtime_checkable
class IslandSelection(Protocol):
    """Chooses the island that breeds the next offspring."""

    def choose(self, islands: Sequence[Island], rng: np.random.Generator) -> int: ...

    def state(self) -> Any: ...

    def restore(self, state: Any) -> None: ...


@runtime_checkable
class Migration(Protocol):
    """Every `search.islands.interval` generations: the (sender, receiver) pairs, and whom each
    sender sends (at most `count` of its members)."""

    def routes(self, count: int, rng: np.random.Generator) -> list[tuple[int, int]]: ...

    def emigrants(self, island: Island, count: int, rng: np.random.Generator) -> list[Individual]: ...


class RoundRobin:
    """Each island in turn: every island breeds an equal share of the offspring."""

    def __init__(self) -> None:
        self.turn = 0

    def choose(self, islands: Sequence[Island], rng: np.random.Generator) -> int:
        chosen = self.turn % len(islands)
        self.turn = chosen + 1
        return chosen

    def state(self) -> Any:
        return {"turn": self.turn}

    def restore(self, state: Any) -> None:
        self.turn = int((state or {}).get("turn", 0))


class RandomIsland:
    """An island drawn uniformly for each offspring."""

    def choose(self, islands: Sequence[Island], rng: np.random.Generator) -> int:
        return int(rng.integers(len(islands)))

    def state(self) -> Any:
        return None

    def restore(self, state: Any) -> None:
        pass


class BestMigrants:
    """Sends the best: up to `count` members of the island's feasible front (its whole front if
    none is feasible), drawn uniformly when the front holds more."""

    def emigrants(self, island: Island, count: int, rng: np.random.Generator) -> list[Individual]:
        front = [member for member in island.front if member.fitness.feasible] or list(island.front)
        if len(front) <= count:
            return front
        chosen = sorted(int(index) for index in rng.choice(len(front), size=count, replace=False))
        return [front[index] for index in chosen]


class RingMigration(BestMigrants):
    """Island i sends to island i + 1 (the last to the first)."""

    def routes(self, count: int, rng: np.random.Generator) -> list[tuple[int, int]]:
        return [(index, (index + 1) % count) for index in range(count)] if count > 1 else []


class RandomMigration(BestMigrants):
    """Each island sends to another drawn uniformly."""

    def routes(self, count: int, rng: np.random.Generator) -> list[tuple[int, int]]:
        if count < 2:
            return []
        routes = []
        for index in range(count):
            other = int(rng.integers(count - 1))
            routes.append((index, other + (other >= index)))
        return routes


#: The strategies a config names by a built-in name.
SELECTIONS: Mapping[str, type[IslandSelection]] = {"round_robin": RoundRobin, "random": RandomIsland}
MIGRATIONS: Mapping[str, type[Migration]] = {"ring": RingMigration, "random": RandomMigration}


@dataclass(frozen=True)
class IslandSettings:
    """One island: its algorithm, population, operators (names; None: all the run's) and the
    weights of the model's modes on it (None: the [llm] section's)."""

    algorithm: str = "nsga2"
    population: int = 10
    operators: tuple[str, ...] | None = None
    modes: Mapping[str, float] | None = None


@dataclass(frozen=True)
class IslandPlan:
    """The islands of a search and how they exchange members."""

    islands: tuple[IslandSettings, ...]
    #: Generations between migrations, and the most members one island sends at once.
    interval: int = 3
    migrants: int = 2
    migration: Migration = field(default_factory=RingMigration)
    #: Makes the island selection, anew for each search (it keeps the turn).
    selection: Callable[[], IslandSelection] = RoundRobin
