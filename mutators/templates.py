"""Fix templates, in the style of PAR's and TBar's: the shapes human fixes take.

Each template proposes one edit at a site chosen like any operator's (by fault
localisation when repairing): clamp a value, guard a statement, widen or narrow a
condition, or add an update statement that a sibling branch has and this one lacks.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst
import libcst.metadata as meta
import numpy as np

from gi.model.edits import AddCheck, Clamp, Edit, ExtendCondition, InsertGuard, InsertStatement, KeepOperand
from gi.model.patch import Patch
from gi.model.program import Program
from gi.model.sites import Location, Site, SiteKind
from gi.mutators.base import BaseOperator, MutationContext, allowed_sites, choose_site, register, statement_sites
from gi.mutators.names import (
    ATTEMPTS,
    NEAR_FUNCTION,
    category,
    ingredients,
    is_condition_position,
    is_numeric,
    is_returned,
    near_ingredient,
    nearness,
    pick,
    selection,
    target_sites,
    targets,
)
from gi.mutators.scopes import all_bound, bound_names, file_scopes, free_names, movable, walrus_reads_outside


def is_bound(program: Program, site: Site) -> bool:
    """A value a clamp may bound by: a name, an attribute, an integer, or a `len(...)`."""
    node = program.node(site.location)
    if isinstance(node, cst.Call):
        return isinstance(node.func, cst.Name) and node.func.value == "len" and is_numeric(program, site)
    return isinstance(node, (cst.Name, cst.Attribute, cst.Integer)) and is_numeric(program, site)


def clamp_bound(program: Program, site: Site, rng: np.random.Generator) -> str | None:
    """A bound for `max(b, e)` or `min(e, b)` at `site`: a value of the file (a name,
    attribute, integer or `len(...)` whose names are bound there) or a variable of the
    site's function bound there, drawn weighted by nearness: what its own statement reads
    first, then what its function reads or binds, then the rest of the file."""
    values = list(selection(program, "bound", lambda s: is_bound(program, s)).get(site.location.file, ()))
    local = sorted(
        name
        for name, binder in bound_names(program, site.location).items()
        if isinstance(binder, (cst.Name, cst.Param)) and binder in _own_bindings(program, site)
    )
    code = program.code(site.location)
    weights = np.array([nearness(program, site, value) for value in values] + [NEAR_FUNCTION] * len(local))
    for _ in range(ATTEMPTS if len(weights) else 0):
        index = int(rng.choice(len(weights), p=weights / weights.sum()))
        if index >= len(values):
            if local[index - len(values)] != code:
                return local[index - len(values)]
            continue
        found = values[index].location
        text = program.code(found)
        if text != code and "\n" not in text and movable(program, found, site.location):
            return text
    return None


def clamp_bounds(program: Program, site: Site) -> list[str]:
    """Every bound `clamp_bound` can draw at `site`, the likeliest first (by nearness, then by
    line; the function's own variables at NEAR_FUNCTION, in name order)."""
    values = selection(program, "bound", lambda s: is_bound(program, s)).get(site.location.file, ())
    code = program.code(site.location)
    ranked: dict[str, tuple[float, int, int]] = {}
    for order, value in enumerate(values):
        text = program.code(value.location)
        if text != code and "\n" not in text and movable(program, value.location, site.location):
            rank = (-nearness(program, site, value), abs(value.line - site.line), order)
            ranked[text] = min(ranked.get(text, rank), rank)
    local = sorted(
        name
        for name, binder in bound_names(program, site.location).items()
        if isinstance(binder, (cst.Name, cst.Param)) and binder in _own_bindings(program, site)
    )
    for order, name in enumerate(local):
        if name != code:
            rank = (-NEAR_FUNCTION, 0, len(values) + order)
            ranked[name] = min(ranked.get(name, rank), rank)
    return sorted(ranked, key=ranked.__getitem__)


def _own_bindings(program: Program, site: Site) -> frozenset[cst.CSTNode]:
    """The nodes that bind names in the scope of `site` itself (its function's parameters and
    assignments), not in an enclosing one."""
    analysis = file_scopes(program, site.location.file)
    scope = analysis.scopes.get(program.node(site.location))
    if scope is None:
        return frozenset()
    return frozenset(a.node for a in scope.assignments if isinstance(a, meta.Assignment))


@dataclass(frozen=True)
class ClampTemplate(BaseOperator):
    name: str = "clamp"
    description: str = (
        "wrap a value in `max(0, ...)`, `max(b, ...)`, `min(..., b)` or `abs(...)`, `b` a value read or bound nearby"
    )

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        site = targets(program, rng, context, "numeric", lambda s: is_numeric(program, s))()
        if site is None:
            return None
        # Four shapes, as likely each: max(0, e), abs(e), max(b, e), min(e, b).
        function = pick(("max0", "abs", "max", "min"), rng)
        if function == "abs":
            return Clamp(site.location, "abs")
        if function == "max0":
            return Clamp(site.location, "max", "0")
        bound = clamp_bound(program, site, rng)
        return Clamp(site.location, function, bound) if bound is not None else Clamp(site.location, "max", "0")

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        return target_sites(program, context, "numeric", lambda s: is_numeric(program, s))

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        yield Clamp(site.location, "max", "0")
        yield Clamp(site.location, "abs")
        for bound in clamp_bounds(program, site):
            if bound != "0":  # max(0, e) came first
                yield Clamp(site.location, "max", bound)
            yield Clamp(site.location, "min", bound)


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


def is_raise(program: Program, site: Site) -> bool:
    """A one-line `raise E(...)` statement (not a bare re-raise, which needs an `except`)."""
    node = program.node(site.location)
    return (
        isinstance(node, cst.SimpleStatementLine)
        and len(node.body) == 1
        and isinstance(node.body[0], cst.Raise)
        and node.body[0].exc is not None
        and node.body[0].cause is None
        and "\n" not in program.code(site.location).strip()
    )


def _raises(program: Program, site: Site) -> tuple[list[str], list[float]]:
    """The `raise` statements of the file a guard may copy before a statement (every name
    they read bound there), each with its weight: its nearness to the statement."""
    found: dict[str, float] = {}
    module = program.modules[site.location.file]
    for other in statement_sites(program):
        if other.location.file != site.location.file or not is_raise(program, other):
            continue
        names = free_names(program, other.location)
        if names is None or not all_bound(program, names, site.location):
            continue
        node = program.node(other.location)
        assert isinstance(node, cst.SimpleStatementLine)
        text = module.code_for_node(node.body[0]).strip()
        found[text] = max(found.get(text, 0.0), nearness(program, site, other))
    return list(found), list(found.values())


def _action_kinds(program: Program, site: Site) -> list[tuple[list[str], list[float]]]:
    """The kinds of action a guard may take before `site`, each with its options and their weights."""
    context = site.context
    assert context is not None
    kinds: list[tuple[list[str], list[float]]] = []
    if context.in_loop:
        kinds.append((["continue", "break"], [1.0, 1.0]))
    if context.in_function:
        plain_only = context.in_async_function and context.in_generator
        values = ["None"] if plain_only else _returned_values(program, site)
        returns = ["return" if value == "None" and plain_only else f"return {value}" for value in values]
        kinds.append((returns, [1.0] * len(returns)))
        raises = _raises(program, site)
        if raises[0]:
            kinds.append(raises)
    return kinds


def guard_actions(program: Program, site: Site) -> list[str]:
    """Every action `_actions` can draw at `site`: each kind's options in turn, the likeliest of
    each kind first."""
    ranked = [
        sorted(zip(options, weights, strict=True), key=lambda entry: -entry[1])
        for options, weights in _action_kinds(program, site)
    ]
    found: list[str] = []
    for position in range(max((len(kind) for kind in ranked), default=0)):
        found += [kind[position][0] for kind in ranked if position < len(kind)]
    return found


def guard_conditions(program: Program, site: Site) -> list[str]:
    """Every condition `guard_condition` can draw at `site`: the checks on the values the
    statement uses, then the file's conditions bound there, the nearest first."""
    copied = [
        program.code(location)
        for location in ingredients(
            program, site, "copyable_condition", lambda s: is_copyable_condition(program, s), apart=True
        )
    ]
    return list(dict.fromkeys([*_conditions(program, site), *copied]))


def _actions(program: Program, site: Site, rng: np.random.Generator) -> str | None:
    """What a guard does before a statement, as the syntax there allows: `continue` or
    `break` in a loop; in a function, `return` None or a value the function returns
    elsewhere, or `raise` a copy of a raise statement of the file (one nearby first). Each
    kind of action is as likely as another."""
    kinds = _action_kinds(program, site)
    if not kinds:
        return None
    options, weights = kinds[int(rng.integers(len(kinds)))]
    chances = np.array(weights)
    return options[int(rng.choice(len(options), p=chances / chances.sum()))]


def is_copyable_condition(program: Program, site: Site) -> bool:
    """A comparison, `and`/`or` or `not` of the program on one line: a guard may copy it."""
    return category(program.node(site.location)) == "condition" and "\n" not in program.code(site.location)


def guard_condition(program: Program, site: Site, rng: np.random.Generator) -> str | None:
    """A guard's condition before a statement: half the time a check on a value the statement
    uses (`_conditions`), half the time a copy of a condition of the file whose names are
    bound there, one of the statement's own function first; either when the other has none."""
    made = _conditions(program, site)
    if made and rng.random() < 0.5:
        return pick(made, rng)
    copied = near_ingredient(program, site, rng, "copyable_condition", lambda s: is_copyable_condition(program, s))
    if copied is not None:
        return program.code(copied)
    return pick(made, rng) if made else None


@dataclass(frozen=True)
class GuardTemplate(BaseOperator):
    name: str = "guard"
    description: str = (
        "insert `if <check>: return/continue/break/raise` before a statement (`if x is None`, a bounds check,"
        " a condition of the program)"
    )

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        for _ in range(ATTEMPTS):
            site = choose_site(statement_sites(program), rng, context, guardable)
            if site is None:
                return None
            condition = guard_condition(program, site, rng)
            action = _actions(program, site, rng)
            if condition is not None and action is not None:
                return InsertGuard(site.location, condition, action)
        return None

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        return allowed_sites(statement_sites(program), context, guardable)

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        """Each condition with each action, conditions in turn (the checks first, then copies,
        nearest first), so the likeliest of both come early."""
        actions = guard_actions(program, site)
        for condition in guard_conditions(program, site):
            for action in actions:
                yield InsertGuard(site.location, condition, action)


def guardable(site: Site) -> bool:
    """A statement before which a guard may stand: not one whose position is fixed, inside a
    function or a loop."""
    assert site.context is not None
    return not site.context.fixed_position and (site.context.in_function or site.context.in_loop)


@dataclass(frozen=True)
class ConditionDrop(BaseOperator):
    name: str = "condition_drop"
    description: str = "keep one operand of `a and b` or `a or b` (widen or narrow a condition)"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        site = choose_site(
            program.sites_of(SiteKind.BOOLEAN_OPERATOR), rng, context, lambda s: bool(droppable(program, s))
        )
        return KeepOperand(site.location, pick(droppable(program, site), rng)) if site else None

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        return allowed_sites(
            program.sites_of(SiteKind.BOOLEAN_OPERATOR), context, lambda s: bool(droppable(program, s))
        )

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        for side in droppable(program, site):
            yield KeepOperand(site.location, side)


def droppable(program: Program, site: Site) -> tuple[str, ...]:
    """The sides of `a and b` / `a or b` that may be kept: dropping the other must not drop
    a `:=` binding that is read outside it (`(ch := s[i]).isspace() or ch in ")#"` keeps
    only its left operand)."""
    return tuple(
        side
        for side, dropped in (("left", "right"), ("right", "left"))
        if not walrus_reads_outside(program, Location(site.location.file, f"{site.location.path}.{dropped}"))
    )


def is_condition(program: Program, site: Site) -> bool:
    return category(program.node(site.location)) == "condition" or is_condition_position(program, site)


def checks(program: Program, site: Site) -> list[str]:
    """Checks a condition may be extended with: `x`, `not x`, `x is None` and `x is not None`
    for each variable the condition reads that is bound there (TBar's added null and
    emptiness checks: `start <= merged[-1][1]` may need `merged and` before it)."""
    bound = bound_names(program, site.location)
    analysis = file_scopes(program, site.location.file)
    used = sorted(
        {
            node.value
            for node in _walk(program.node(site.location))
            if isinstance(node, cst.Name)
            and node in analysis.reads
            and isinstance(bound.get(node.value), (cst.Name, cst.Param))
        }
    )
    return [check for name in used for check in (name, f"not {name}", f"{name} is None", f"{name} is not None")]


def _walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    """`node` and everything inside it, not entering lambdas and comprehensions."""
    found: list[cst.CSTNode] = []
    stack = [node]
    while stack:
        current = stack.pop()
        found.append(current)
        if not isinstance(current, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            stack.extend(current.children)
    return found


@dataclass(frozen=True)
class ConditionExtend(BaseOperator):
    name: str = "condition_extend"
    description: str = (
        "widen a condition `a` to `a or c`, or narrow it to `a and c`: `c` a condition of the program"
        " (one nearby first), or a check (`x`, `not x`, `x is None`, `x is not None`) on a name `a` reads,"
        " before or after `a`"
    )

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        choose = targets(program, rng, context, "condition_position", lambda s: is_condition_position(program, s))
        for _ in range(ATTEMPTS):
            site = choose()
            if site is None:
                return None
            operator = pick(("And", "Or"), rng)
            made = checks(program, site)
            if made and rng.random() < 0.5:
                return AddCheck(site.location, operator, pick(made, rng), first=bool(rng.random() < 0.5))
            found = near_ingredient(program, site, rng, "condition", lambda s: is_condition(program, s))
            if found is not None:
                return ExtendCondition(site.location, operator, found)
            if made:
                return AddCheck(site.location, operator, pick(made, rng), first=bool(rng.random() < 0.5))
        return None

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        return target_sites(program, context, "condition_position", lambda s: is_condition_position(program, s))

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        """The checks on the names the condition reads (`a and x`, `x and a`, `a or x`, `x or a`),
        then the conditions of the program, nearest first, with `and`, then with `or`."""
        for check in checks(program, site):
            for operator in ("And", "Or"):
                yield AddCheck(site.location, operator, check, first=False)
                yield AddCheck(site.location, operator, check, first=True)
        for location in self._conditions(program, site):
            for operator in ("And", "Or"):
                yield ExtendCondition(site.location, operator, location)

    @staticmethod
    def _conditions(program: Program, site: Site) -> list[Location]:
        return ingredients(program, site, "condition", lambda s: is_condition(program, s), apart=True)


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


def _names_bound(program: Program, statement: Location, position: Location) -> bool:
    """Is every name a copy of `statement` reads bound before `position`?"""
    names = free_names(program, statement)
    return names is not None and all_bound(program, names, position)


def sibling_updates(program: Program) -> dict[Location, tuple[Location, ...]]:
    """For each statement in a branch of an `if` chain, the update statements of the other
    branches that its own branch lacks (by code), which may stand before it: the syntax
    allows them there and every name they read is bound there."""
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
                fitting = tuple(
                    u.location
                    for u in updates
                    if u.context is not None
                    and where.accepts(u.context)
                    and _names_bound(program, u.location, position.location)
                )
                if fitting:
                    found[position.location] = fitting
    _SIBLINGS[program] = found
    return found


@dataclass(frozen=True)
class SiblingUpdate(BaseOperator):
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

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        updates = sibling_updates(program)
        return allowed_sites(statement_sites(program), context, lambda s: s.location in updates)

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        seen: set[str] = set()
        for update in sibling_updates(program).get(site.location, ()):
            code = program.code(update)
            if code not in seen:  # two branches with the same update: one copy
                seen.add(code)
                yield InsertStatement(site.location, update)


for _operator in (ClampTemplate(), GuardTemplate(), ConditionDrop(), ConditionExtend(), SiblingUpdate()):
    register(_operator)
