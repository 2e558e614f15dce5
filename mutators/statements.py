"""Statement operators in the style of GenProg and PyGGI: delete, copy, replace, swap, move.

Copied statements ("ingredients") come from the original program, as in GenProg. Every
proposal respects the syntax at its destination: a `return` goes only into a function, a
`break` only into a loop, an `await` only into an async function.
"""

from __future__ import annotations

import bisect
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gi.model.edits import DeleteStatement, Edit, InsertStatement, MoveStatement, ReplaceStatement, SwapStatements
from gi.model.patch import Patch
from gi.model.program import Program
from gi.model.sites import Location, Site, StatementContext
from gi.mutators.base import BaseOperator, MutationContext, allowed_sites, choose_site, register, statement_sites

#: One flag per statement site of a program, in site order.
Mask = npt.NDArray[np.bool_]

#: How many random targets an operator tries before it gives up on finding a legal pair.
ATTEMPTS = 20


def _context(site: Site) -> StatementContext:
    assert site.context is not None
    return site.context


class _Statements:
    """A program's statement sites as arrays, so that the legal partners of a site are found by
    a few vectorised comparisons rather than a Python call per statement of the program (which
    took 5 ms a proposal on the real-world test modules). The partner lists, in site order, are
    those the pairwise rules give, so every random choice is what it was with them.

    Holds no reference to the program (the cache is keyed weakly by it)."""

    def __init__(self, sites: tuple[Site, ...]) -> None:
        self.sites = sites
        self.position = {site.location: index for index, site in enumerate(sites)}
        kinds: dict[StatementContext, int] = {}
        self.context = np.array([kinds.setdefault(_context(site), len(kinds)) for site in sites], dtype=np.intp)
        #: accepts[d, c]: a statement of context c may stand at a position of context d.
        self.accepts = np.array([[where.accepts(what) for what in kinds] for where in kinds], dtype=bool)
        self.removable = np.array([_context(site).removable for site in sites], dtype=bool)
        keys = [f"{site.location.file}\0{site.location.path}" for site in sites]
        self.order = np.array(sorted(range(len(sites)), key=keys.__getitem__), dtype=np.intp)
        self.sorted_keys = [keys[index] for index in self.order]
        #: Per site, a number equal for two sites exactly when their code is; -1 until needed.
        self._codes = np.full(len(sites), -1, dtype=np.intp)
        self._code_ids: dict[str, int] = {}

    def code_of(self, program: Program, index: int) -> int:
        """A number equal for two sites exactly when their code is."""
        if self._codes[index] < 0:
            text = program.code(self.sites[index].location)
            self._codes[index] = self._code_ids.setdefault(text, len(self._code_ids))
        return int(self._codes[index])

    def nearest_first(self, program: Program, index: int, mask: Mask, *, one_per_code: bool) -> list[int]:
        """The sites of `mask`, those of the file of the site `index` nearest to it first (by
        line, then in site order); with `one_per_code`, the nearest of each code only (for
        ingredients: a copy of either makes the same program)."""
        here = self.sites[index]

        def distance(other: int) -> tuple[bool, int, int]:
            site = self.sites[other]
            return (site.location.file != here.location.file, abs(site.line - here.line), other)

        ordered = sorted((int(i) for i in np.flatnonzero(mask)), key=distance)
        if not one_per_code:
            return ordered
        found: dict[int, int] = {}
        for other in ordered:
            found.setdefault(self.code_of(program, other), other)
        return list(found.values())

    def other_code(self, program: Program, first: int, mask: Mask) -> Mask:
        """`mask` without the sites whose code is that of `first`. Each site's code is worked out
        once, when it is first a candidate (a statement's code is its whole subtree's)."""
        wanted = np.flatnonzero(mask)
        wanted = np.append(wanted[self._codes[wanted] < 0], first)
        for index in wanted:
            if self._codes[index] < 0:
                text = program.code(self.sites[index].location)
                self._codes[index] = self._code_ids.setdefault(text, len(self._code_ids))
        kept: Mask = mask & (self._codes != self._codes[first])
        return kept

    def may_stand_at(self, destination: int) -> Mask:
        """The sites whose copy may stand where the site `destination` stands."""
        fits: Mask = self.accepts[self.context[destination], self.context]
        return fits

    def may_take(self, statement: int) -> Mask:
        """At which sites a copy of the site `statement` may stand."""
        fits: Mask = self.accepts[self.context, self.context[statement]]
        return fits

    def within(self, index: int) -> Mask:
        """The site `index` and every site inside it (`Location.contains`)."""
        mask = np.zeros(len(self.sites), dtype=bool)
        mask[index] = True
        location = self.sites[index].location
        for separator in ".[":
            prefix = f"{location.file}\0{location.path}{separator}"
            low = bisect.bisect_left(self.sorted_keys, prefix)
            high = bisect.bisect_left(self.sorted_keys, prefix[:-1] + chr(ord(separator) + 1))
            mask[self.order[low:high]] = True
        return mask

    def around(self, index: int) -> Mask:
        """The site `index` and every site holding it."""
        mask = np.zeros(len(self.sites), dtype=bool)
        mask[index] = True
        location = self.sites[index].location
        for end, char in enumerate(location.path):
            if char in ".[":
                holder = self.position.get(Location(location.file, location.path[:end]))
                if holder is not None:
                    mask[holder] = True
        return mask


_STATEMENTS: weakref.WeakKeyDictionary[Program, _Statements] = weakref.WeakKeyDictionary()


def _statements(program: Program) -> _Statements:
    table = _STATEMENTS.get(program)
    if table is None:
        table = _STATEMENTS[program] = _Statements(statement_sites(program))
    return table


#: The legal partners of a first site (its index), as a mask over the statement sites.
Partners = Callable[[_Statements, int], Mask]


def _paired_sites(
    program: Program, context: MutationContext, partners: Partners, *, second_edited: bool = False
) -> list[Site]:
    """The first sites `_pair` can choose: those the context allows with a legal partner (one
    it allows too, when the second site is edited as well)."""
    table = _statements(program)

    def paired(site: Site) -> bool:
        legal = np.flatnonzero(partners(table, table.position[site.location]))
        return any(not second_edited or context.allows(table.sites[index]) for index in legal)

    return allowed_sites(table.sites, context, paired)


def _partner_list(
    program: Program, context: MutationContext, first: Site, partners: Partners, *, ingredient: bool
) -> list[Site]:
    """The legal partners of `first`, nearest first: for an `ingredient` (a statement copied),
    one of each code; else (a statement that is edited too) only those the context allows."""
    table = _statements(program)
    index = table.position[first.location]
    found = table.nearest_first(program, index, partners(table, index), one_per_code=ingredient)
    return [table.sites[other] for other in found if ingredient or context.allows(table.sites[other])]


def _pair(
    program: Program,
    rng: np.random.Generator,
    context: MutationContext,
    *,
    partners: Partners,
    second_edited: bool = False,
) -> tuple[Site, Site] | None:
    """Choose a weighted first site and a uniform second site among its legal `partners`; the
    second, when it is edited too (swap, move), must be one the context allows."""
    table = _statements(program)
    sites = table.sites
    for _ in range(ATTEMPTS):
        first = choose_site(sites, rng, context)
        if first is None:
            return None
        legal = np.flatnonzero(partners(table, table.position[first.location]))
        options = [sites[index] for index in legal if not second_edited or context.allows(sites[index])]
        if options:
            return first, options[int(rng.integers(len(options)))]
    return None


@dataclass(frozen=True)
class DeleteStatementOperator(BaseOperator):
    name: str = "statement_delete"
    description: str = "delete a statement (an emptied block becomes `pass`)"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        site = choose_site(statement_sites(program), rng, context, lambda s: _context(s).removable)
        return DeleteStatement(site.location) if site else None

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        return allowed_sites(statement_sites(program), context, lambda s: _context(s).removable)

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        yield DeleteStatement(site.location)


@dataclass(frozen=True)
class CopyStatementOperator(BaseOperator):
    name: str = "statement_copy"
    description: str = "insert a copy of another statement of the program before a statement"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        pair = _pair(program, rng, context, partners=_copy_partners)
        return InsertStatement(pair[0].location, pair[1].location) if pair else None

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        return _paired_sites(program, context, _copy_partners)

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        for partner in _partner_list(program, context, site, _copy_partners, ingredient=True):
            yield InsertStatement(site.location, partner.location)


def _copy_partners(table: _Statements, first: int) -> Mask:
    return table.may_stand_at(first)


@dataclass(frozen=True)
class ReplaceStatementOperator(BaseOperator):
    name: str = "statement_replace"
    description: str = "replace a statement with a copy of another statement of the program"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        pair = _pair(program, rng, context, partners=self._partners(program))
        return ReplaceStatement(pair[0].location, pair[1].location) if pair else None

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        return _paired_sites(program, context, self._partners(program))

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        for partner in _partner_list(program, context, site, self._partners(program), ingredient=True):
            yield ReplaceStatement(site.location, partner.location)

    @staticmethod
    def _partners(program: Program) -> Partners:
        def partners(table: _Statements, target: int) -> Mask:
            if not table.removable[target]:
                return np.zeros(len(table.sites), dtype=bool)
            return table.other_code(program, target, table.may_stand_at(target))

        return partners


@dataclass(frozen=True)
class SwapStatementsOperator(BaseOperator):
    name: str = "statement_swap"
    description: str = "exchange two statements (neither inside the other)"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        pair = _pair(program, rng, context, partners=self._partners(program), second_edited=True)
        return SwapStatements(pair[0].location, pair[1].location) if pair else None

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        return _paired_sites(program, context, self._partners(program), second_edited=True)

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        for partner in _partner_list(program, context, site, self._partners(program), ingredient=False):
            yield SwapStatements(site.location, partner.location)

    @staticmethod
    def _partners(program: Program) -> Partners:
        def partners(table: _Statements, first: int) -> Mask:
            if not table.removable[first]:
                return np.zeros(len(table.sites), dtype=bool)
            apart = ~table.within(first) & ~table.around(first)
            fit = table.may_stand_at(first) & table.may_take(first)
            return table.other_code(program, first, apart & table.removable & fit)

        return partners


@dataclass(frozen=True)
class MoveStatementOperator(BaseOperator):
    name: str = "statement_move"
    description: str = "move a statement to stand before another statement"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        pair = _pair(program, rng, context, partners=_move_partners, second_edited=True)
        return MoveStatement(pair[0].location, pair[1].location) if pair else None

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        return _paired_sites(program, context, _move_partners, second_edited=True)

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        for destination in _partner_list(program, context, site, _move_partners, ingredient=False):
            yield MoveStatement(site.location, destination.location)


def _move_partners(table: _Statements, moved: int) -> Mask:
    if not table.removable[moved]:
        return np.zeros(len(table.sites), dtype=bool)
    mask: Mask = ~table.within(moved) & table.may_take(moved)
    following = _following(table.sites[moved].location)
    if following is not None and following in table.position:
        mask[table.position[following]] = False  # moving it before the next one changes nothing
    return mask


def _following(location: Location) -> Location | None:
    """The location of the statement right after the one at `location` in its block, if it
    has an index there."""
    head, _, last = location.path.rpartition("[")
    if not last.endswith("]"):
        return None
    return Location(location.file, f"{head}[{int(last[:-1]) + 1}]")


for _operator in (
    DeleteStatementOperator(),
    CopyStatementOperator(),
    ReplaceStatementOperator(),
    SwapStatementsOperator(),
    MoveStatementOperator(),
):
    register(_operator)
