"""The [search] tables of quality diversity: the MAP-Elites grid (`search.grid`) and the islands
(`search.islands`), and the strategies a config names by built-in name or dotted path.

A strategy named by dotted path ("module:Class" or "package.module.Class") is imported from the
config's folder first (as a user's objective is), and made with no arguments. An entry-point
group ("gi.strategies") would be looked up in `load_strategy` too, before the dotted path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from gi.algorithms import ALGORITHMS
from gi.algorithms.features import (
    DEFAULT_BINS,
    DEFAULT_FEATURES,
    EDIT_KIND,
    GridSettings,
    build_features,
    measure_feature,
)
from gi.algorithms.strategies import MIGRATIONS, SELECTIONS, IslandPlan, IslandSettings
from gi.fitness.measures import MEASURES
from gi.fitness.objectives import UserFunction, load_function
from gi.model.errors import ConfigError
from gi.model.patch import Variant
from gi.model.registry import suggest
from gi.model.results import Evaluation
from gi.mutators.llm import MODES
from gi.populations import DominationInsertion

#: A user's class or function: "module:Name" or "package.module.Name".
DOTTED = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$|^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
#: The grid's insertion rules a config names by a built-in name.
INSERTIONS: Mapping[str, Callable[[], Any]] = {"domination": DominationInsertion}


class _Table(BaseModel):
    """As every section of a config: unknown keys refused, frozen, defaults checked."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


def _strategy_name(value: str, builtins: Mapping[str, object], what: str) -> str:
    if value in builtins or DOTTED.match(value):
        return value
    raise PydanticCustomError(
        "unknown_name",
        "unknown {what} '{name}'.{hint} Built in: {known}; or a class of your own as 'module:Class'",
        {"what": what, "name": value, "hint": suggest(value, list(builtins)), "known": ", ".join(builtins)},
    )


class GridSection(_Table):
    """search.grid: the feature dimensions of the quality-diversity grid."""

    features: Annotated[
        list[str],
        Field(
            description="the grid's feature dimensions: measures (complexity, size, runtime, diff_lines, ...),"
            f" '{EDIT_KIND}' (the kind of edit a patch mostly makes) or a function of the variant as"
            " 'module:function'; empty: none, but map_elites takes complexity and size",
            examples=[["complexity", "edit_kind"]],
        ),
    ] = []
    bins: Annotated[
        Annotated[int, Field(ge=1, le=1000)] | dict[str, Annotated[int, Field(ge=1, le=1000)]],
        Field(description=f"bins per feature, or a table of bins by feature (others {DEFAULT_BINS})"),
    ] = DEFAULT_BINS
    ranges: Annotated[
        dict[str, tuple[float, float]],
        Field(
            description="[low, high] of a feature (values outside go to the end bins); by default size from 0 to"
            " search.max_edits, runtime 0 to 2, others 0 to twice the original's; a user's function needs one",
            examples=[{"complexity": [0, 40]}],
        ),
    ] = {}
    insertion: Annotated[
        str,
        Field(
            description="who keeps a cell: 'domination' (Deb's constrained domination, then the larger"
            " hypervolume) or a class of your own as 'module:Class' (gi.populations.grid.Insertion)"
        ),
    ] = "domination"

    @field_validator("features")
    @classmethod
    def _known(cls, names: list[str]) -> list[str]:
        for name in names:
            if name != EDIT_KIND and name not in MEASURES and not DOTTED.match(name):
                known = [*MEASURES.names(), EDIT_KIND]
                raise PydanticCustomError(
                    "unknown_name",
                    "unknown feature '{name}'.{hint} Known: {known}, or a function of your own as 'module:function'",
                    {"name": name, "hint": suggest(name, known), "known": ", ".join(known)},
                )
        if len(set(names)) != len(names):
            raise PydanticCustomError("repeated", "a feature is named twice", {})
        return names

    @field_validator("insertion")
    @classmethod
    def _insertion(cls, value: str) -> str:
        return _strategy_name(value, INSERTIONS, "insertion rule")

    @model_validator(mode="after")
    def _ranges(self) -> Any:
        for name, (low, high) in self.ranges.items():
            if name not in self.features:
                raise PydanticCustomError(
                    "range", "ranges.{name}: not one of the features ({features})",
                    {"name": name, "features": ", ".join(self.features) or "none"},
                )  # fmt: skip
            if not low < high:
                raise PydanticCustomError("range", "ranges.{name}: low must be below high", {"name": name})
        if isinstance(self.bins, dict):
            for name in self.bins:
                if name not in self.features:
                    raise PydanticCustomError("bins", "bins.{name}: not one of the features", {"name": name})
        for name in self.features:
            if DOTTED.match(name) and name not in self.ranges:
                raise PydanticCustomError(
                    "range", "feature '{name}' is a function of your own: give its [low, high] in ranges",
                    {"name": name},
                )  # fmt: skip
        return self


class IslandSection(_Table):
    """One island of search.islands."""

    algorithm: Annotated[str, Field(description="the island's algorithm (any but 'islands')")] = "nsga2"
    population: Annotated[
        int | None,
        Field(ge=2, le=10000, description="its population; default: search.population over the islands", examples=[10]),
    ] = None
    operators: Annotated[
        list[str] | None,
        Field(
            description="the run's operators it uses ('llm' for the model); default: all",
            examples=[["llm", "statement_delete", "statement_swap"]],
        ),
    ] = None
    modes: Annotated[
        dict[str, float] | None,
        Field(
            description="the weights of the model's modes on this island (rewrite, diff, crossover)",
            examples=[{"diff": 1.0}],
        ),
    ] = None

    @field_validator("algorithm")
    @classmethod
    def _algorithm(cls, name: str) -> str:
        if name == "islands" or name not in ALGORITHMS:
            known = [known for known in ALGORITHMS.names() if known != "islands"]
            raise PydanticCustomError(
                "unknown_name",
                "an island's algorithm is one of {known}, not '{name}'",
                {"known": ", ".join(known), "name": name},
            )
        return name

    @field_validator("modes")
    @classmethod
    def _modes(cls, modes: dict[str, float] | None) -> dict[str, float] | None:
        return None if modes is None else checked_modes(modes)


def checked_modes(modes: dict[str, float]) -> dict[str, float]:
    """The weights of the model's modes (llm.modes, an island's modes): of the known modes, none
    negative, not all 0."""
    unknown = sorted(set(modes) - set(MODES))
    if unknown or not any(weight > 0 for weight in modes.values()) or any(w < 0 for w in modes.values()):
        raise PydanticCustomError(
            "modes",
            "modes are weights, not all 0 and none negative, of {known}; got {modes}",
            {"known": ", ".join(MODES), "modes": modes},
        )
    return modes


class IslandsSection(_Table):
    """search.islands: the islands algorithm's islands and how they exchange members."""

    count: Annotated[
        int, Field(ge=1, le=64, description="islands alike (NSGA-II, every operator) when `island` names none")
    ] = 4
    island: Annotated[
        list[IslandSection],
        Field(description="each island's algorithm, population, operators and model modes ([[search.islands.island]])"),
    ] = []
    interval: Annotated[int, Field(ge=1, le=10000, description="generations between migrations")] = 3
    migrants: Annotated[int, Field(ge=1, le=1000, description="the most members an island sends at once")] = 2
    migration: Annotated[
        str,
        Field(
            description="where migrants go: 'ring' (island i to i + 1), 'random', or a class of your own as"
            " 'module:Class' (gi.algorithms.strategies.Migration)"
        ),
    ] = "ring"
    selection: Annotated[
        str,
        Field(
            description="which island breeds each offspring: 'round_robin', 'random', or a class of your own as"
            " 'module:Class' (gi.algorithms.strategies.IslandSelection)"
        ),
    ] = "round_robin"

    @field_validator("migration")
    @classmethod
    def _migration(cls, value: str) -> str:
        return _strategy_name(value, MIGRATIONS, "migration")

    @field_validator("selection")
    @classmethod
    def _selection(cls, value: str) -> str:
        return _strategy_name(value, SELECTIONS, "island selection")


def load_strategy(spec: str, builtins: Mapping[str, Callable[[], Any]], folder: Path, key: str) -> Callable[[], Any]:
    """The maker of the strategy a config names: a built-in by name, else a user's class by its
    dotted path, imported from `folder` (ConfigError naming `key` when it cannot be)."""
    if spec in builtins:
        return builtins[spec]
    try:
        found = load_function(_function_spec(spec), folder)
    except ValueError as error:
        raise ConfigError(f"{key}: {error}") from None
    if not isinstance(found, type):
        raise ConfigError(f"{key}: {spec} is not a class (a strategy is made with no arguments)")
    return found


def check_strategy(made: object, methods: tuple[str, ...], spec: str, key: str) -> None:
    """A strategy must have the interface's methods (ConfigError naming the missing ones)."""
    missing = [name for name in methods if not callable(getattr(made, name, None))]
    if missing:
        raise ConfigError(f"{key}: {spec} lacks {', '.join(missing)} (see gi.algorithms.strategies)")


def island_plan(section: IslandsSection, population: int, folder: Path, source: Path) -> IslandPlan:
    """The islands a config's search.islands table describes, its strategies loaded."""
    entries: list[IslandSection | None] = list(section.island) or [None] * section.count
    default = max(2, population // len(entries))
    islands = tuple(
        IslandSettings(population=default)
        if entry is None
        else IslandSettings(
            entry.algorithm,
            entry.population or default,
            None if entry.operators is None else tuple(entry.operators),
            entry.modes,
        )
        for entry in entries
    )
    migration_maker = load_strategy(section.migration, MIGRATIONS, folder, f"{source}: search.islands.migration")
    migration = migration_maker()
    check_strategy(migration, ("routes", "emigrants"), section.migration, f"{source}: search.islands.migration")
    selection = load_strategy(section.selection, SELECTIONS, folder, f"{source}: search.islands.selection")
    key = f"{source}: search.islands.selection"
    check_strategy(selection(), ("choose", "state", "restore"), section.selection, key)
    return IslandPlan(islands, section.interval, section.migrants, migration, selection)


def _function_spec(spec: str) -> str:
    """A dotted path as load_function takes it: "module:name"."""
    return spec if ":" in spec else ":".join(spec.rsplit(".", 1))


def grid_features(search: Any) -> list[str]:
    """The grid's features a [search] section asks for: its own, else complexity and patch size
    when MAP-Elites runs (alone or on an island); none otherwise."""
    if search.grid.features:
        return list(search.grid.features)
    islands = [island.algorithm for island in search.islands.island] if search.algorithm == "islands" else []
    return list(DEFAULT_FEATURES) if "map_elites" in (search.algorithm, *islands) else []


def grid_settings(
    search: Any, original: Variant, baseline: Evaluation, unit: float, folder: Path, source: Path
) -> GridSettings | None:
    """The grid a run keeps (None: none): its features, with ranges from the original's measures
    where the config gives none, the original's hypervolume as the unit, the insertion rule."""
    names = grid_features(search)
    if not names:
        return None
    user: dict[str, Callable[[Variant], float | None]] = {}
    for name in names:
        if DOTTED.match(name):
            try:
                user[name] = UserFunction(name, load_function(_function_spec(name), folder))
            except ValueError as error:
                raise ConfigError(f"{source}: search.grid.features: {error}") from None
    measured = {}
    for name in names:
        if name in MEASURES:
            value = measure_feature(name)(original, baseline)
            measured[name] = 0.0 if value is None else value
    try:
        features = build_features(
            names, bins=search.grid.bins, ranges=search.grid.ranges, original=measured,
            max_edits=search.max_edits, user=user,
        )  # fmt: skip
    except ValueError as error:
        raise ConfigError(f"{source}: search.grid: {error}") from None
    key = f"{source}: search.grid.insertion"
    insertion = load_strategy(search.grid.insertion, INSERTIONS, folder, key)()
    check_strategy(insertion, ("replaces",), search.grid.insertion, key)
    return GridSettings(features, unit, insertion)
