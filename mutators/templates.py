"""Fix templates, in the style of PAR's and TBar's: the shapes human fixes take.

Each template proposes one edit at a site chosen like any operator's (by fault
localisation when repairing): clamp a value, guard a statement, widen or narrow a
condition, or add an update statement that a sibling branch has and this one lacks.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import libcst as cst
import numpy as np

from gi.edits import Clamp, Edit, ExtendCondition, InsertGuard, InsertStatement, KeepOperand
from gi.patch import Patch
from gi.program import Location, Program, Site, SiteKind
from mutators.base import MutationContext, choose_site, register, statement_sites
from mutators.names import (
    ATTEMPTS,
    category,
    ingredient,
    is_condition_position,
    is_numeric,
    is_returned,
    pick,
    selection,
    targets,
)
from mutators.scopes import all_bound, bound_names, free_names


def is_bound(program: Program, site: Site) -> bool:
    """A value a clamp may bound by: a name, an attribute, an integer, or a `len(...)`."""
    node = program.node(site.location)
    if isinstance(node, cst.Call):
        return isinstance(node.func, cst.Name) and node.func.value == "len" and is_numeric(program, site)
    return isinstance(node, (cst.Name, cst.Attribute, cst.Integer)) and is_numeric(program, site)


@dataclass(frozen=True)
class ClampTemplate:
    name: str = "clamp"
    description: str = "wrap a value in `max(0, ...)`, `min(..., bound)` (a value of the program) or `abs(...)`"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        site = targets(program, rng, context, "numeric", lambda s: is_numeric(program, s))()
        if site is None:
            return None
        function = pick(("max", "min", "abs"), rng)
        if function == "abs":
            return Clamp(site.location, "abs")
        if function == "min":
            bound = ingredient(program, site, rng, "bound", lambda s: is_bound(program, s))
            if bound is not None and "\n" not in program.code(bound):
                return Clamp(site.location, "min", program.code(bound))
        return Clamp(site.location, "max", "0")


def _conditions(program: Program, site: Site) -> list[str]:
    """Guard conditions on the values a statement uses: `x is None`, `not x`, `x < 0`, and for
    each `seq[i]` in it the bounds check `i >= len(seq)`."""
    bound = bound_names(program, site.location)
    statement = program.node(site.location)
    used: list[str] = []
    checks: list[str] = []
    stack: list[cst.CSTNode] = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Name) and node.value in bound and isinstance(bound[node.value], (cst.Name, cst.Param)):
            used.append(node.value)
        if (
            isinstance(node, cst.Subscript)
            and isinstance(node.value, cst.Name)
            and len(node.slice) == 1
            and isinstance(node.slice[0].slice, cst.Index)
            and isinstance(node.slice[0].slice.value, cst.Name)
        ):
            checks.append(f"{node.slice[0].slice.value.value} >= len({node.value.value})")
        stack.extend(node.children)
    names = sorted(set(used))
    return [
        *(f"{name} is None" for name in names),
        *(f"not {name}" for name in names),
        *(f"{n} < 0" for n in names),
        *checks,
    ]


def _returned_values(program: Program, site: Site) -> list[str]:
    """What a guard may return at a statement: None, and each value its function returns
    elsewhere whose names are bound there."""
    values = {"None"}
    function = site.function
    for returned in selection(program, "returned", lambda s: is_returned(program, s)).get(site.location.file, ()):
        if returned.function == function:
            names = free_names(program, returned.location)
            one_line = "\n" not in program.code(returned.location)
            if one_line and names is not None and all_bound(program, names, site.location):
                values.add(program.code(returned.location))
    return sorted(values)


def _actions(program: Program, site: Site) -> list[str]:
    """What a guard may do before a statement, as the syntax there allows."""
    context = site.context
    assert context is not None
    actions = ["continue", "break"] if context.in_loop else []
    if context.in_function:
        plain_only = context.in_async_function and context.in_generator
        values = ["None"] if plain_only else _returned_values(program, site)
        actions += ["return" if value == "None" and plain_only else f"return {value}" for value in values]
    return actions


@dataclass(frozen=True)
class GuardTemplate:
    name: str = "guard"
    description: str = (
        "insert `if <check>: return/continue/break` before a statement (`if x is None`, a bounds check, ...)"
    )

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        def guardable(site: Site) -> bool:
            assert site.context is not None
            return not site.context.fixed_position and (site.context.in_function or site.context.in_loop)

        for _ in range(ATTEMPTS):
            site = choose_site(statement_sites(program), rng, context, guardable)
            if site is None:
                return None
            conditions = _conditions(program, site)
            if conditions:
                return InsertGuard(site.location, pick(conditions, rng), pick(_actions(program, site), rng))
        return None


@dataclass(frozen=True)
class ConditionDrop:
    name: str = "condition_drop"
    description: str = "keep one operand of `a and b` or `a or b` (widen or narrow a condition)"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        site = choose_site(program.sites_of(SiteKind.BOOLEAN_OPERATOR), rng, context)
        return KeepOperand(site.location, pick(("left", "right"), rng)) if site else None


def is_condition(program: Program, site: Site) -> bool:
    return category(program.node(site.location)) == "condition" or is_condition_position(program, site)


@dataclass(frozen=True)
class ConditionExtend:
    name: str = "condition_extend"
    description: str = (
        "widen a condition `a` to `a or c`, or narrow it to `a and c`, with `c` a condition of the program"
    )

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        choose = targets(program, rng, context, "condition_position", lambda s: is_condition_position(program, s))
        for _ in range(ATTEMPTS):
            site = choose()
            if site is None:
                return None
            found = ingredient(program, site, rng, "condition", lambda s: is_condition(program, s))
            if found is not None:
                return ExtendCondition(site.location, pick(("And", "Or"), rng), found)
        return None


_SIBLINGS: weakref.WeakKeyDictionary[Program, dict[Location, tuple[Location, ...]]] = weakref.WeakKeyDictionary()


def is_update(statement: cst.CSTNode) -> bool:
    """One assignment, augmented assignment or method call (`total += x`, `seen.add(x)`)."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    if isinstance(small, (cst.AugAssign, cst.Assign)):
        return True
    return (
        isinstance(small, cst.Expr)
        and isinstance(small.value, cst.Call)
        and isinstance(small.value.func, cst.Attribute)
    )


def branches(node: cst.If, path: str) -> list[str]:
    """The paths of the blocks of an `if`/`elif`/`else` chain."""
    blocks = [f"{path}.body"]
    orelse = node.orelse
    if isinstance(orelse, cst.If):
        blocks += branches(orelse, f"{path}.orelse")
    elif isinstance(orelse, cst.Else):
        blocks.append(f"{path}.orelse.body")
    return blocks


def sibling_updates(program: Program) -> dict[Location, tuple[Location, ...]]:
    """For each statement in a branch of an `if` chain, the update statements of the other
    branches that its own branch lacks (by code), which may stand before it."""
    found = _SIBLINGS.get(program)
    if found is not None:
        return found
    by_block: dict[tuple[str, str], list[Site]] = {}
    for site in statement_sites(program):
        by_block.setdefault((site.location.file, site.location.path.rpartition(".")[0]), []).append(site)
    found = {}
    for site in statement_sites(program):
        node = program.node(site.location)
        if not isinstance(node, cst.If):
            continue
        blocks = [by_block.get((site.location.file, path), []) for path in branches(node, site.location.path)]
        for index, block in enumerate(blocks):
            codes = {program.code(s.location) for s in block}
            updates = [
                s
                for other, sibling in enumerate(blocks)
                if other != index
                for s in sibling
                if is_update(program.node(s.location)) and program.code(s.location) not in codes
            ]
            for position in block:
                where = position.context
                assert where is not None
                fitting = tuple(u.location for u in updates if u.context is not None and where.accepts(u.context))
                if fitting:
                    found[position.location] = fitting
    _SIBLINGS[program] = found
    return found


@dataclass(frozen=True)
class SiblingUpdate:
    name: str = "sibling_update"
    description: str = (
        "copy an update (`x += ...`, `x = ...`, `items.append(...)`) that a sibling branch of an `if`"
        " has and this branch lacks, before one of its statements"
    )

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        updates = sibling_updates(program)
        site = choose_site(statement_sites(program), rng, context, lambda s: s.location in updates)
        if site is None:
            return None
        options = updates[site.location]
        return InsertStatement(site.location, options[int(rng.integers(len(options)))])


for _operator in (ClampTemplate(), GuardTemplate(), ConditionDrop(), ConditionExtend(), SiblingUpdate()):
    register(_operator)
