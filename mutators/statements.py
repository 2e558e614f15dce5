"""Statement operators in the style of GenProg and PyGGI: delete, copy, replace, swap, move.

Copied statements ("ingredients") come from the original program, as in GenProg. Every
proposal respects the syntax at its destination: a `return` goes only into a function, a
`break` only into a loop, an `await` only into an async function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gi.edits import DeleteStatement, Edit, InsertStatement, MoveStatement, ReplaceStatement, SwapStatements
from gi.patch import Patch
from gi.program import Program, Site, StatementContext
from mutators.base import MutationContext, choose_site, register, statement_sites

#: How many random targets an operator tries before it gives up on finding a legal pair.
ATTEMPTS = 20


def _context(site: Site) -> StatementContext:
    assert site.context is not None
    return site.context


def _fits(destination: Site, statement: Site) -> bool:
    """May a copy of `statement` stand where `destination` stands?"""
    return _context(destination).accepts(_context(statement))


def _same_code(program: Program, first: Site, second: Site) -> bool:
    return program.code(first.location) == program.code(second.location)


def _pair(
    program: Program,
    rng: np.random.Generator,
    context: MutationContext,
    *,
    legal: Callable[[Site, Site], bool],
    second_edited: bool = False,
) -> tuple[Site, Site] | None:
    """Choose a weighted first site and a uniform second site such that `legal(first, second)`;
    the second, when it is edited too (swap, move), must be one the context allows."""
    sites = statement_sites(program)
    for _ in range(ATTEMPTS):
        first = choose_site(sites, rng, context)
        if first is None:
            return None
        options = [site for site in sites if legal(first, site) and (not second_edited or context.allows(site))]
        if options:
            return first, options[int(rng.integers(len(options)))]
    return None


@dataclass(frozen=True)
class DeleteStatementOperator:
    name: str = "statement_delete"
    description: str = "delete a statement (an emptied block becomes `pass`)"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        site = choose_site(statement_sites(program), rng, context, lambda s: _context(s).removable)
        return DeleteStatement(site.location) if site else None


@dataclass(frozen=True)
class CopyStatementOperator:
    name: str = "statement_copy"
    description: str = "insert a copy of another statement of the program before a statement"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        pair = _pair(program, rng, context, legal=_fits)
        return InsertStatement(pair[0].location, pair[1].location) if pair else None


@dataclass(frozen=True)
class ReplaceStatementOperator:
    name: str = "statement_replace"
    description: str = "replace a statement with a copy of another statement of the program"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        def legal(target: Site, ingredient: Site) -> bool:
            return (
                _context(target).removable and _fits(target, ingredient) and not _same_code(program, target, ingredient)
            )

        pair = _pair(program, rng, context, legal=legal)
        return ReplaceStatement(pair[0].location, pair[1].location) if pair else None


@dataclass(frozen=True)
class SwapStatementsOperator:
    name: str = "statement_swap"
    description: str = "exchange two statements (neither inside the other)"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        def legal(first: Site, second: Site) -> bool:
            return (
                not first.location.contains(second.location)
                and not second.location.contains(first.location)
                and _context(first).removable
                and _context(second).removable
                and _fits(first, second)
                and _fits(second, first)
                and not _same_code(program, first, second)
            )

        pair = _pair(program, rng, context, legal=legal, second_edited=True)
        return SwapStatements(pair[0].location, pair[1].location) if pair else None


@dataclass(frozen=True)
class MoveStatementOperator:
    name: str = "statement_move"
    description: str = "move a statement to stand before another statement"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        def legal(moved: Site, destination: Site) -> bool:
            return (
                not moved.location.contains(destination.location)
                and _context(moved).removable
                and _fits(destination, moved)
                and not _is_next(program, moved, destination)
            )

        pair = _pair(program, rng, context, legal=legal, second_edited=True)
        return MoveStatement(pair[0].location, pair[1].location) if pair else None


def _is_next(program: Program, moved: Site, destination: Site) -> bool:
    """Moving a statement before the one right after it changes nothing."""
    head, _, last = moved.location.path.rpartition("[")
    if moved.location.file != destination.location.file or not last.endswith("]"):
        return False
    return destination.location.path == f"{head}[{int(last[:-1]) + 1}]"


for _operator in (
    DeleteStatementOperator(),
    CopyStatementOperator(),
    ReplaceStatementOperator(),
    SwapStatementsOperator(),
    MoveStatementOperator(),
):
    register(_operator)
