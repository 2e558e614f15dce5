"""The protocol every mutation operator follows, its registry, and weighted site choice.

An operator looks at the original program (and the patch so far) and proposes one edit,
or None when it finds no legal place. Classic syntax operators and the language-model
operator come through the same door, so a config file can name any of them.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import libcst as cst
import libcst.metadata
import numpy as np

from gi.model.edits import Edit
from gi.model.patch import Patch, Variant
from gi.model.program import Program
from gi.model.registry import Registry
from gi.model.sites import Location, Site, SiteKind


@dataclass(frozen=True)
class Feedback:
    """What the search measured on the variant a patch makes: for prompts that learn from it."""

    objectives: Mapping[str, float]
    #: The failing training tests' output (never held-out tests), empty when all pass.
    failures: str = ""


@dataclass(frozen=True)
class FunctionSpan:
    """A function of the original program: its qualified name ("Class.method") and its lines."""

    name: str
    first: int
    last: int


_SPANS: weakref.WeakKeyDictionary[Program, dict[Location, FunctionSpan]] = weakref.WeakKeyDictionary()


def function_spans(program: Program) -> dict[Location, FunctionSpan]:
    """Every function site's qualified name and lines (from `def` to its last line), by
    location; worked out once per program."""
    spans = _SPANS.get(program)
    if spans is None:
        spans = {}
        positions: dict[str, Mapping[cst.CSTNode, libcst.metadata.CodeRange]] = {}
        for site in program.sites_of(SiteKind.FUNCTION):
            file = site.location.file
            if file not in positions:
                wrapper = libcst.metadata.MetadataWrapper(program.modules[file], unsafe_skip_copy=True)
                positions[file] = wrapper.resolve(libcst.metadata.PositionProvider)
            node = program.node(site.location)
            assert isinstance(node, cst.FunctionDef)
            name = f"{site.function}.{node.name.value}" if site.function else node.name.value
            spans[site.location] = FunctionSpan(name, site.line, positions[file][node].end.line)
        _SPANS[program] = spans
    return spans


class UnboundContextError(RuntimeError):
    """A context was asked about a function site or an exclusion before `bind` gave it the program."""


@dataclass(frozen=True)
class MutationContext:
    """What the search tells operators beyond the program and the patch: where to edit.

    `site_weights` maps a function's qualified name ("Class.method"; "" for module level)
    to a weight (other functions weigh `default_weight`); the engine fills it from a profile
    of the workload. `line_weights` maps (file, line) to a weight (other lines weigh
    `line_floor`); the engine fills it from fault localisation. A statement or expression
    weighs its enclosing function's weight times its line's; a function site its own
    weight times the highest weight of a line in it.

    No site inside a function named in `excluded_functions` (qualified names), nor that
    function's own site, nor a statement holding it, is ever chosen: the engine excludes
    the workload's entry point, whose edits would only fake a speed-up.

    Function sites and exclusions need the program: `bind` it first (the search does).
    """

    site_weights: Mapping[str, float] = field(default_factory=dict)
    default_weight: float = 1.0
    line_weights: Mapping[tuple[str, int], float] = field(default_factory=dict)
    line_floor: float = 0.0
    #: Looks up what the search measured on a variant (None: not measured).
    feedback: Callable[[Variant], Feedback | None] | None = None
    excluded_functions: frozenset[str] = frozenset()
    #: Set by `bind`: each function site's weight, and where the excluded functions are.
    function_weights: Mapping[Location, float] | None = None
    excluded_locations: tuple[Location, ...] = ()
    #: `site_table`'s answers, by the identity of the tuple of sites (kept with it).
    _tables: dict[int, tuple[tuple[Site, ...], list[int], np.ndarray]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def bind(self, program: Program) -> MutationContext:
        """This context, with the weights of `program`'s function sites and the locations of
        its excluded functions worked out."""
        weights: dict[Location, float] = {}
        for location, span in function_spans(program).items():
            weight = self.site_weights.get(span.name, self.default_weight)
            if self.line_weights:
                lines = [(location.file, line) for line in range(span.first, span.last + 1)]
                found = [self.line_weights[key] for key in lines if key in self.line_weights]
                weight *= max(found) if found else self.line_floor
            weights[location] = weight
        excluded = tuple(
            location for location, span in function_spans(program).items() if span.name in self.excluded_functions
        )
        return dataclasses.replace(self, function_weights=weights, excluded_locations=excluded)

    def weight(self, site: Site) -> float:
        """How strongly the search prefers editing at `site` over other sites."""
        if site.kind is SiteKind.FUNCTION:
            if self.function_weights is not None:
                return self.function_weights[site.location]
            if self.site_weights or self.line_weights:
                raise UnboundContextError("a function site's weight needs the program: bind the context first")
            return self.default_weight
        weight = self.site_weights.get(site.function, self.default_weight)
        if self.line_weights:
            weight *= self.line_weights.get((site.location.file, site.line), self.line_floor)
        return weight

    def site_table(self, sites: tuple[Site, ...] | list[Site]) -> tuple[list[int], np.ndarray]:
        """The positions of the `sites` this context allows, and their weights (NaN where a
        weight needs `bind`): the same at every proposal, so worked out once per tuple of sites
        (a program's site tuples live as long as it). Every proposal of a search asks it."""
        entry = self._tables.get(id(sites))
        if entry is not None and entry[0] is sites:
            return entry[1], entry[2]
        if self.excluded_locations or (self.excluded_functions and sites):
            allowed = [position for position, site in enumerate(sites) if self.allows(site)]
        else:
            allowed = list(range(len(sites)))
        if self.site_weights or self.line_weights or self.function_weights is not None:
            weights = np.array([self._weight_or_nan(sites[position]) for position in allowed], dtype=float)
        else:  # every site weighs the default
            weights = np.full(len(allowed), self.default_weight, dtype=float)
        if isinstance(sites, tuple):
            if len(self._tables) >= 64:  # a few tuples a program; a new program each search
                self._tables.clear()
            self._tables[id(sites)] = (sites, allowed, weights)
        return allowed, weights

    def _weight_or_nan(self, site: Site) -> float:
        try:
            return self.weight(site)
        except UnboundContextError:
            return float("nan")  # raised again if the site is ever a candidate

    def allows(self, site: Site) -> bool:
        """False for a site inside an excluded function, its own site, or a statement holding it."""
        if self.excluded_functions and self.function_weights is None:
            raise UnboundContextError("excluding functions needs the program: bind the context first")
        return not any(
            function.contains(site.location) or site.location.contains(function) for function in self.excluded_locations
        )


class Operator(Protocol):
    """A mutation operator: `propose` one edit for `patch`, or None."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None: ...


OPERATORS: Registry[Operator] = Registry("operator")


def register(operator: Operator) -> Operator:
    """Add an operator to the registry under its name."""
    return OPERATORS.add(operator.name, operator)


def choose_site(
    sites: tuple[Site, ...] | list[Site],
    rng: np.random.Generator,
    context: MutationContext,
    accept: Callable[[Site], bool] | None = None,
) -> Site | None:
    """Pick one site, weighted by the context, among those the context and `accept` allow."""
    allowed, weights = context.site_table(sites)
    if accept is not None:
        kept = [index for index, position in enumerate(allowed) if accept(sites[position])]
        allowed, weights = [allowed[index] for index in kept], weights[kept]
    if not allowed:
        return None
    if np.isnan(weights).any():
        raise UnboundContextError("a function site's weight needs the program: bind the context first")
    total = weights.sum()
    if total <= 0:
        return None
    return sites[allowed[int(rng.choice(len(allowed), p=weights / total))]]


def statement_sites(program: Program) -> tuple[Site, ...]:
    return program.sites_of(SiteKind.STATEMENT)
