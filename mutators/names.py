"""Expression-level operators, in the style of CapGen's and PAR's expression mutations.

Most one-line bugs sit in an expression: the wrong variable, swapped arguments, an
off-by-one, the wrong function, a missing `not`, the wrong value returned. These operators
change one expression and keep every name it reads bound (`gi.mutators.scopes`); copied
expressions come from the original program, as statement ingredients do.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import libcst as cst
import numpy as np

from gi.model.edits import (
    Edit,
    Negate,
    OffsetExpression,
    RemoveUnary,
    ReplaceExpression,
    ReplaceName,
    SwapArguments,
    parent_of,
)
from gi.model.patch import Patch
from gi.model.program import Program
from gi.model.sites import Location, Site, SiteKind
from gi.mutators.base import BaseOperator, MutationContext, allowed_sites, choose_site, register
from gi.mutators.scopes import BUILTINS, bound_names, movable, unbound_locals, walrus_reads_outside

#: How many weighted targets (and, per target, random ingredients) an operator tries.
ATTEMPTS = 20
_CONSTANT_NAMES = frozenset({"True", "False", "None", "__debug__"})
#: Node types an offset or a clamp may wrap: expressions that can hold an integer.
_NUMERIC = (cst.Name, cst.Integer, cst.Call, cst.BinaryOperation, cst.Subscript, cst.Attribute, cst.UnaryOperation)
#: Builtins that take the same arguments, and so may stand for each other in a call.
BUILTIN_FAMILIES = (("min", "max"), ("any", "all"), ("sorted", "reversed", "list"), ("int", "round"))
#: Builtins that compute a value from values, with the fewest and most positional arguments
#: they take: a call of a function of the program may stand for one of them (the inverse of
#: replacing `round(total, 2)` with a function of the program that takes two arguments).
VALUE_BUILTINS: dict[str, tuple[int, float]] = {
    "len": (1, 1),
    "abs": (1, 1),
    "round": (1, 2),
    "min": (1, float("inf")),
    "max": (1, float("inf")),
    "sum": (1, 2),
    "sorted": (1, 1),
}


def field_of(site: Site) -> str:
    """The field of its parent that a site stands in ("value", "left", "func", ...)."""
    return site.location.path.rpartition(".")[2].partition("[")[0]


def expression_sites(program: Program) -> tuple[Site, ...]:
    return program.sites_of(SiteKind.EXPRESSION)


def pick(options: list[str] | tuple[str, ...], rng: np.random.Generator) -> str:
    return options[int(rng.integers(len(options)))]


_SELECTIONS: weakref.WeakKeyDictionary[Program, dict[str, dict[str, tuple[Site, ...]]]] = weakref.WeakKeyDictionary()


def selection(program: Program, key: str, accept: Callable[[Site], bool]) -> dict[str, tuple[Site, ...]]:
    """The expression sites `accept` allows, by file; `key` names `accept` (computed once per program)."""
    per_program = _SELECTIONS.setdefault(program, {})
    found = per_program.get(key)
    if found is None:
        by_file: dict[str, list[Site]] = {}
        for site in expression_sites(program):
            if accept(site):
                by_file.setdefault(site.location.file, []).append(site)
        found = per_program[key] = {file: tuple(sites) for file, sites in by_file.items()}
    return found


def targets(
    program: Program,
    rng: np.random.Generator,
    context: MutationContext,
    key: str,
    accept: Callable[[Site], bool],
) -> Callable[[], Site | None]:
    """A chooser of weighted expression sites that `accept` allows (None when none does)."""
    sites = [site for sites in selection(program, key, accept).values() for site in sites]
    return lambda: choose_site(sites, rng, context)


def target_sites(program: Program, context: MutationContext, key: str, accept: Callable[[Site], bool]) -> list[Site]:
    """The expression sites `targets` can choose: those `accept` allows that the context allows."""
    return allowed_sites([site for sites in selection(program, key, accept).values() for site in sites], context)


def ingredient(
    program: Program, target: Site, rng: np.random.Generator, key: str, accept: Callable[[Site], bool]
) -> Location | None:
    """A uniformly drawn expression of the target's file that `accept` allows, whose code
    differs from the target's and whose names are bound at the target."""
    sites = selection(program, key, accept).get(target.location.file, ())
    code = program.code(target.location)
    for _ in range(ATTEMPTS if sites else 0):
        candidate = sites[int(rng.integers(len(sites)))]
        if program.code(candidate.location) != code and movable(program, candidate.location, target.location):
            return candidate.location
    return None


#: How many times more likely a nearby ingredient is drawn than one elsewhere in the file:
#: read in the target's own statement, or in its function (CapGen's context: a fix's
#: ingredients mostly come from the code around the fault).
NEAR_STATEMENT = 8.0
NEAR_FUNCTION = 3.0


_STATEMENTS: weakref.WeakKeyDictionary[Program, dict[Location, Location | None]] = weakref.WeakKeyDictionary()


def statement_of(program: Program, location: Location) -> Location | None:
    """The innermost statement that holds the site at `location` (None at none)."""
    known = _STATEMENTS.setdefault(program, {})
    if location not in known:
        found = None
        path = location.path
        while path and found is None:
            path = path.rpartition(".")[0]
            candidate = Location(location.file, path)
            if program.site(candidate, SiteKind.STATEMENT) is not None:
                found = candidate
        known[location] = found
    return known[location]


def nearness(program: Program, target: Site, candidate: Site) -> float:
    """The weight of drawing `candidate` for `target`: NEAR_STATEMENT in the same statement
    (for a statement target: inside it),
    NEAR_FUNCTION in the same function (not module level), 1 elsewhere in the file."""
    if target.kind is SiteKind.STATEMENT:
        if target.location.contains(candidate.location):
            return NEAR_STATEMENT
    elif statement_of(program, candidate.location) == statement_of(program, target.location):
        return NEAR_STATEMENT
    if target.function and candidate.function == target.function:
        return NEAR_FUNCTION
    return 1.0


def near_ingredient(
    program: Program, target: Site, rng: np.random.Generator, key: str, accept: Callable[[Site], bool]
) -> Location | None:
    """Like `ingredient`, but drawn weighted by `nearness` to the target, so an expression read
    in its statement or function comes first and any other of the file stays possible (never
    one that holds the target or lies inside it)."""
    sites = tuple(
        site
        for site in selection(program, key, accept).get(target.location.file, ())
        if not site.location.contains(target.location) and not target.location.contains(site.location)
    )
    if not sites:
        return None
    weights = np.array([nearness(program, target, site) for site in sites])
    code = program.code(target.location)
    for _ in range(ATTEMPTS):
        candidate = sites[int(rng.choice(len(sites), p=weights / weights.sum()))]
        if program.code(candidate.location) != code and movable(program, candidate.location, target.location):
            return candidate.location
    return None


def ingredients(
    program: Program,
    target: Site,
    key: str,
    accept: Callable[[Site], bool],
    *,
    apart: bool,
    same_function: bool = False,
) -> list[Location]:
    """Every expression `ingredient` (or, `apart`, `near_ingredient`) can draw for `target`: of
    its file (with `same_function`, of its function), allowed by `accept`, of other code than
    the target's, every name bound there (and, `apart`, neither holding the target nor inside
    it); the nearest first (by `nearness`, then by line), one of each code (a copy of either
    makes the same program)."""
    code = program.code(target.location)
    found: dict[str, tuple[tuple[float, int, int], Location]] = {}
    for order, site in enumerate(selection(program, key, accept).get(target.location.file, ())):
        if same_function and site.function != target.function:
            continue
        if apart and (site.location.contains(target.location) or target.location.contains(site.location)):
            continue
        text = program.code(site.location)
        if text == code or not movable(program, site.location, target.location):
            continue
        rank = (-nearness(program, target, site), abs(site.line - target.line), order)
        if text not in found or rank < found[text][0]:
            found[text] = (rank, site.location)
    return [location for _, location in sorted(found.values(), key=lambda entry: entry[0])]


def is_variable(program: Program, site: Site) -> bool:
    """A name that is read as a value (not the function a call calls)."""
    node = program.node(site.location)
    return isinstance(node, cst.Name) and node.value not in _CONSTANT_NAMES and field_of(site) != "func"


def is_numeric(program: Program, site: Site) -> bool:
    """An expression that may hold an integer, where adding to it or wrapping it is a value
    change (not a called function, nor the object of `.attr` or `[...]`)."""
    node = program.node(site.location)
    if not isinstance(node, _NUMERIC) or field_of(site) == "func":
        return False
    if isinstance(node, cst.Name) and node.value in _CONSTANT_NAMES:
        return False
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        return False
    return not (
        field_of(site) == "value" and isinstance(parent_of(program, site.location), (cst.Attribute, cst.Subscript))
    )


def is_condition_position(program: Program, site: Site) -> bool:
    """A site whose value is used as a truth value (an `if`/`while`/`assert` test, an
    operand of `and`/`or`, a conditional expression's test)."""
    parent = parent_of(program, site.location)
    field = field_of(site)
    if isinstance(parent, (cst.If, cst.While, cst.Assert, cst.IfExp)):
        return field == "test"
    return isinstance(parent, cst.BooleanOperation)


@dataclass(frozen=True)
class NameReplacement(BaseOperator):
    name: str = "name_replace"
    description: str = "replace a variable that is read with another of the program's names bound there"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        choose = targets(program, rng, context, "variable", lambda s: is_variable(program, s))
        for _ in range(ATTEMPTS):
            site = choose()
            if site is None:
                return None
            options = self._options(program, site)
            if options:
                return ReplaceName(site.location, pick(options, rng))
        return None

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        return [
            site
            for site in target_sites(program, context, "variable", lambda s: is_variable(program, s))
            if self._options(program, site)
        ]

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        for name in self._options(program, site):
            yield ReplaceName(site.location, name)

    @staticmethod
    def _options(program: Program, site: Site) -> list[str]:
        """The variables bound at `site` other than the one it reads, in name order."""
        current = program.node(site.location)
        assert isinstance(current, cst.Name)
        return sorted(
            name
            for name, binder in bound_names(program, site.location).items()
            if name != current.value and isinstance(binder, (cst.Name, cst.Param))
        )


def _walk_args(call: cst.Call) -> list[cst.CSTNode]:
    """Every node inside a call's arguments."""
    stack: list[cst.CSTNode] = [arg.value for arg in call.args]
    found = []
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(node.children)
    return found


def _positional(call: cst.Call) -> bool:
    return all(arg.keyword is None and not arg.star for arg in call.args)


@dataclass(frozen=True)
class ArgumentSwap(BaseOperator):
    name: str = "argument_swap"
    description: str = "swap two positional arguments of a call (`divmod(b, a)` becomes `divmod(a, b)`)"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        site = targets(program, rng, context, "swappable", self._swappable(program))()
        if site is None:
            return None
        call = program.node(site.location)
        assert isinstance(call, cst.Call)
        first, second = sorted(int(i) for i in rng.choice(len(call.args), size=2, replace=False))
        return SwapArguments(site.location, first, second)

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        return target_sites(program, context, "swappable", self._swappable(program))

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        call = program.node(site.location)
        assert isinstance(call, cst.Call)
        module = program.modules[site.location.file]
        codes = [module.code_for_node(argument.value) for argument in call.args]
        seen: set[tuple[str, str]] = set()
        for first in range(len(call.args)):
            for second in range(first + 1, len(call.args)):
                pair = (codes[first], codes[second])
                if pair[0] != pair[1] and pair not in seen:  # swapping equal arguments changes nothing
                    seen.add(pair)
                    yield SwapArguments(site.location, first, second)

    @staticmethod
    def _swappable(program: Program) -> Callable[[Site], bool]:
        def swappable(site: Site) -> bool:
            node = program.node(site.location)
            # An argument binding a name with `:=` that another reads must stay first.
            return (
                isinstance(node, cst.Call)
                and len(node.args) >= 2
                and _positional(node)
                and not walrus_reads_outside(program, site.location)
                and not any(isinstance(n, cst.NamedExpr) for n in _walk_args(node))
            )

        return swappable


def category(node: cst.CSTNode) -> str:
    """A coarse type of an expression: copies replace only expressions of their category."""
    if isinstance(node, (cst.Comparison, cst.BooleanOperation)) or (
        isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not)
    ):
        return "condition"
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return "string"
    if isinstance(node, (cst.List, cst.Tuple, cst.Dict, cst.Set)):
        return "container"
    if isinstance(node, cst.Name) and node.value in _CONSTANT_NAMES:
        return "constant"
    return "value"


def _of_category(program: Program, kind: str) -> Callable[[Site], bool]:
    return lambda site: field_of(site) != "func" and category(program.node(site.location)) == kind


@dataclass(frozen=True)
class ExpressionReplacement(BaseOperator):
    name: str = "expression_replace"
    description: str = "replace an expression with a copy of another expression of the program of its kind"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        choose = targets(program, rng, context, "replaceable", self._replaceable(program))
        for _ in range(ATTEMPTS):
            site = choose()
            if site is None:
                return None
            kind = category(program.node(site.location))
            found = ingredient(program, site, rng, f"category:{kind}", _of_category(program, kind))
            if found is not None:
                return ReplaceExpression(site.location, found)
        return None

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        return target_sites(program, context, "replaceable", self._replaceable(program))

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        for location in self._ingredients(program, site):
            yield ReplaceExpression(site.location, location)

    @staticmethod
    def _replaceable(program: Program) -> Callable[[Site], bool]:
        return lambda site: field_of(site) != "func" and not walrus_reads_outside(program, site.location)

    @staticmethod
    def _ingredients(program: Program, site: Site) -> list[Location]:
        kind = category(program.node(site.location))
        return ingredients(program, site, f"category:{kind}", _of_category(program, kind), apart=False)


@dataclass(frozen=True)
class IntegerOffset(BaseOperator):
    name: str = "integer_offset"
    description: str = "add 1 to or subtract 1 from an integer expression (`items[:n]` becomes `items[:n + 1]`)"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        site = targets(program, rng, context, "numeric", lambda s: is_numeric(program, s))()
        return OffsetExpression(site.location, 1 if rng.random() < 0.5 else -1) if site else None

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        return target_sites(program, context, "numeric", lambda s: is_numeric(program, s))

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        yield OffsetExpression(site.location, 1)
        yield OffsetExpression(site.location, -1)


def _arity(function: cst.FunctionDef) -> tuple[int, float]:
    """The fewest and most positional arguments a call of `function` may pass."""
    params = [*function.params.posonly_params, *function.params.params]
    required = sum(1 for param in params if param.default is None)
    most = float("inf") if isinstance(function.params.star_arg, cst.Param) else len(params)
    return required, most


@dataclass(frozen=True)
class CallReplacement(BaseOperator):
    name: str = "call_replace"
    description: str = (
        "call another function bound there that takes as many arguments: a function of the program,"
        " a builtin of the called builtin's family, or for a function of the program a common builtin"
    )

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        choose = targets(program, rng, context, "called_name", self._called_name(program))
        for _ in range(ATTEMPTS):
            site = choose()
            if site is None:
                return None
            options = self._options(program, site)
            if options:
                return ReplaceName(site.location, pick(options, rng))
        return None

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        return [
            site
            for site in target_sites(program, context, "called_name", self._called_name(program))
            if self._options(program, site)
        ]

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        for name in self._options(program, site):
            yield ReplaceName(site.location, name)

    @staticmethod
    def _called_name(program: Program) -> Callable[[Site], bool]:
        def called_name(site: Site) -> bool:
            if field_of(site) != "func" or not isinstance(program.node(site.location), cst.Name):
                return False
            call = parent_of(program, site.location)
            return isinstance(call, cst.Call) and _positional(call)

        return called_name

    @staticmethod
    def _options(program: Program, site: Site) -> list[str]:
        current = program.node(site.location)
        call = parent_of(program, site.location)
        assert isinstance(current, cst.Name) and isinstance(call, cst.Call)
        bound = bound_names(program, site.location)
        options = []
        for name, binder in bound.items():
            if name != current.value and isinstance(binder, cst.FunctionDef):
                fewest, most = _arity(binder)
                if fewest <= len(call.args) <= most:
                    options.append(name)
        shadowed = bound.keys() | unbound_locals(program, site.location)
        if current.value in BUILTINS and current.value not in shadowed:
            for family in BUILTIN_FAMILIES:
                if current.value in family:
                    options.extend(name for name in family if name != current.value and name not in shadowed)
        elif isinstance(bound.get(current.value), cst.FunctionDef):
            options.extend(
                name
                for name, (fewest, most) in VALUE_BUILTINS.items()
                if fewest <= len(call.args) <= most and name not in shadowed
            )
        return sorted(options)


@dataclass(frozen=True)
class Negation(BaseOperator):
    name: str = "negate"
    description: str = "insert `not` before a condition, or drop the `not` of one"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        site = targets(program, rng, context, "condition_position", lambda s: is_condition_position(program, s))()
        return None if site is None else self._edit(program, site)

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        return target_sites(program, context, "condition_position", lambda s: is_condition_position(program, s))

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        yield self._edit(program, site)

    @staticmethod
    def _edit(program: Program, site: Site) -> Edit:
        node = program.node(site.location)
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            return RemoveUnary(site.location)
        return Negate(site.location)


def is_returned(program: Program, site: Site) -> bool:
    return field_of(site) == "value" and isinstance(parent_of(program, site.location), cst.Return)


@dataclass(frozen=True)
class ReturnReplacement(BaseOperator):
    name: str = "return_replace"
    description: str = (
        "return a copy of a value the program returns elsewhere (`return 0` for `return 1`),"
        " or a variable the function reads, instead"
    )

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        choose = targets(program, rng, context, "returned_replaceable", self._replaceable(program))
        for _ in range(ATTEMPTS):
            site = choose()
            if site is None:
                return None
            options = self._ingredients(program, site)
            if options:
                return ReplaceExpression(site.location, options[int(rng.integers(len(options)))])
        return None

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        return target_sites(program, context, "returned_replaceable", self._replaceable(program))

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        for location in self._ingredients(program, site):
            yield ReplaceExpression(site.location, location)

    @staticmethod
    def _replaceable(program: Program) -> Callable[[Site], bool]:
        return lambda site: is_returned(program, site) and not walrus_reads_outside(program, site.location)

    @staticmethod
    def _ingredients(program: Program, site: Site) -> list[Location]:
        """The values returned elsewhere in the file, then the variables the function reads (one
        of each name, the nearest: returning the local a function builds is a common fix)."""
        known = _RETURN_INGREDIENTS.setdefault(program, {})
        if site.location not in known:
            found = ingredients(program, site, "returned", lambda s: is_returned(program, s), apart=False)
            codes = {program.code(location) for location in found}
            if site.function:
                variables = ingredients(
                    program, site, "variable", lambda s: is_variable(program, s), apart=False, same_function=True
                )
                found += [location for location in variables if program.code(location) not in codes]
            known[site.location] = found
        return known[site.location]


_RETURN_INGREDIENTS: weakref.WeakKeyDictionary[Program, dict[Location, list[Location]]] = weakref.WeakKeyDictionary()


for _operator in (
    NameReplacement(),
    ArgumentSwap(),
    ExpressionReplacement(),
    IntegerOffset(),
    CallReplacement(),
    Negation(),
    ReturnReplacement(),
):
    register(_operator)
