"""Expression operators in the style of Magpie and Gin: operator replacement, constant tweaks.

Operators are replaced within their family (arithmetic with arithmetic, ordering
comparisons with ordering comparisons), so the variant stays well typed more often.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst
import numpy as np

from gi.model.edits import Edit, RemoveUnary, ReplaceNumber, ReplaceOperator, operator_of
from gi.model.patch import Patch
from gi.model.program import Program, compiler_warnings_ignored
from gi.model.sites import Location, Site, SiteKind
from gi.mutators.base import BaseOperator, MutationContext, allowed_sites, choose_site, register

ARITHMETIC = ("Add", "Subtract", "Multiply", "Divide", "FloorDivide", "Modulo", "Power")
BITWISE = ("LeftShift", "RightShift", "BitAnd", "BitOr", "BitXor")
ORDERING = ("LessThan", "LessThanEqual", "GreaterThan", "GreaterThanEqual", "Equal", "NotEqual")
IDENTITY = ("Is", "IsNot")
MEMBERSHIP = ("In", "NotIn")
BOOLEAN = ("And", "Or")
SIGNS = ("Minus", "Plus", "BitInvert")

_BINARY_FAMILIES = (ARITHMETIC, BITWISE)
_AUGMENTED_FAMILIES = tuple(tuple(f"{name}Assign" for name in family) for family in _BINARY_FAMILIES)
_COMPARISON_FAMILIES = (ORDERING, IDENTITY, MEMBERSHIP)


def _alternatives(current: str, families: tuple[tuple[str, ...], ...]) -> tuple[str, ...]:
    for family in families:
        if current in family:
            return tuple(name for name in family if name != current)
    return ()


def _operator_name(program: Program, location: Location) -> str:
    return type(operator_of(program.node(location))).__name__


@dataclass(frozen=True)
class OperatorReplacement(BaseOperator):
    """Replace an operator at one kind of site with another of its family."""

    name: str
    description: str
    kinds: tuple[SiteKind, ...]
    families: tuple[tuple[str, ...], ...]

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        sites = [site for kind in self.kinds for site in program.sites_of(kind)]
        site = choose_site(
            sites, rng, context, lambda s: bool(_alternatives(_operator_name(program, s.location), self.families))
        )
        if site is None:
            return None
        options = _alternatives(_operator_name(program, site.location), self.families)
        return ReplaceOperator(site.location, options[int(rng.integers(len(options)))])

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        sites = [site for kind in self.kinds for site in program.sites_of(kind)]
        return allowed_sites(
            sites, context, lambda s: bool(_alternatives(_operator_name(program, s.location), self.families))
        )

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        for option in _alternatives(_operator_name(program, site.location), self.families):
            yield ReplaceOperator(site.location, option)


@dataclass(frozen=True)
class UnaryOperatorChange(BaseOperator):
    name: str = "unary_operator"
    description: str = "swap `-`, `+` and `~`, or drop a unary operator (`not x` becomes `x`)"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        site = choose_site(program.sites_of(SiteKind.UNARY_OPERATOR), rng, context)
        if site is None:
            return None
        options: list[str | None] = [None, *_alternatives(_operator_name(program, site.location), (SIGNS,))]
        choice = options[int(rng.integers(len(options)))]
        return RemoveUnary(site.location) if choice is None else ReplaceOperator(site.location, choice)

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        return allowed_sites(program.sites_of(SiteKind.UNARY_OPERATOR), context)

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        yield RemoveUnary(site.location)
        for option in _alternatives(_operator_name(program, site.location), (SIGNS,)):
            yield ReplaceOperator(site.location, option)


def number_tweaks(value: int | float) -> list[str]:
    """The values a constant may become: -1, 0, 1, +1, -1, x2, /2 (without repeats or itself)."""
    if isinstance(value, int):
        candidates: list[int | float] = [-1, 0, 1, value + 1, value - 1, value * 2, value // 2]
    else:
        candidates = [-1.0, 0.0, 1.0, value + 1, value - 1, value * 2, value / 2]
    seen: list[str] = []
    for candidate in candidates:
        if candidate == value or (isinstance(candidate, float) and not math.isfinite(candidate)):
            continue
        text = repr(candidate)
        if text not in seen:
            seen.append(text)
    return seen


@dataclass(frozen=True)
class ConstantTweak(BaseOperator):
    name: str = "constant"
    description: str = "set a numeric constant to -1, 0 or 1, or add 1, subtract 1, double or halve it"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        site = choose_site(program.sites_of(SiteKind.NUMBER), rng, context)
        if site is None:
            return None
        options = _tweaks(program, site)
        return ReplaceNumber(site.location, options[int(rng.integers(len(options)))]) if options else None

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        return allowed_sites(program.sites_of(SiteKind.NUMBER), context)

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        for option in _tweaks(program, site):
            yield ReplaceNumber(site.location, option)


def _tweaks(program: Program, site: Site) -> list[str]:
    """The values the constant at `site` may become (none for one Python cannot evaluate)."""
    node = program.node(site.location)
    assert isinstance(node, (cst.Integer, cst.Float))
    try:
        # ast.literal_eval, under gi's one lock on building ASTs (see gi.fitness.complexity).
        with compiler_warnings_ignored():
            value = node.evaluated_value
    except (ValueError, OverflowError):
        return []
    return number_tweaks(value)


for _operator in (
    OperatorReplacement(
        "binary_operator",
        "replace an arithmetic or bitwise operator (also in `x += y`) with another of its family",
        (SiteKind.BINARY_OPERATOR, SiteKind.AUGMENTED_ASSIGNMENT),
        _BINARY_FAMILIES + _AUGMENTED_FAMILIES,
    ),
    OperatorReplacement(
        "comparison_operator",
        "replace a comparison (`<` `<=` `>` `>=` `==` `!=`, `is`/`is not`, `in`/`not in`) within its family",
        (SiteKind.COMPARISON,),
        _COMPARISON_FAMILIES,
    ),
    OperatorReplacement(
        "boolean_operator", "replace `and` with `or` or the reverse", (SiteKind.BOOLEAN_OPERATOR,), (BOOLEAN,)
    ),
    UnaryOperatorChange(),
    ConstantTweak(),
):
    register(_operator)
