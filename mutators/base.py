"""The protocol every mutation operator follows, its registry, and weighted site choice.

An operator looks at the original program (and the patch so far) and proposes one edit,
or None when it finds no legal place. Classic syntax operators and the language-model
operator come through the same door, so a config file can name any of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from gi.edits import Edit
from gi.patch import Patch, Variant
from gi.program import Program, Site, SiteKind
from gi.registry import Registry


@dataclass(frozen=True)
class Feedback:
    """What the search measured on the variant a patch makes: for prompts that learn from it."""

    objectives: Mapping[str, float]
    #: The failing training tests' output (never held-out tests), empty when all pass.
    failures: str = ""


@dataclass(frozen=True)
class MutationContext:
    """What the search tells operators beyond the program and the patch: where to edit.

    `site_weights` maps an enclosing function's name ("" for module level, "Class.method")
    to a weight (sites in other functions weigh `default_weight`); the engine fills it from
    a profile of the workload. `line_weights` maps (file, line) to a weight (sites on other
    lines weigh `line_floor`); the engine fills it from fault localisation. A site's weight
    is the product of the two.
    """

    site_weights: Mapping[str, float] = field(default_factory=dict)
    default_weight: float = 1.0
    line_weights: Mapping[tuple[str, int], float] = field(default_factory=dict)
    line_floor: float = 0.0
    #: Looks up what the search measured on a variant (None: not measured).
    feedback: Callable[[Variant], Feedback | None] | None = None

    def weight(self, site: Site) -> float:
        weight = self.site_weights.get(site.function, self.default_weight)
        if self.line_weights:
            weight *= self.line_weights.get((site.location.file, site.line), self.line_floor)
        return weight


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
    """Pick one site, weighted by the context, among those `accept` allows."""
    candidates = [site for site in sites if accept is None or accept(site)]
    if not candidates:
        return None
    weights = np.array([context.weight(site) for site in candidates], dtype=float)
    total = weights.sum()
    if total <= 0:
        return None
    return candidates[int(rng.choice(len(candidates), p=weights / total))]


def statement_sites(program: Program) -> tuple[Site, ...]:
    return program.sites_of(SiteKind.STATEMENT)
