"""The fix templates' edits (PAR and Nopol style): clamp a value, keep one operand of a
boolean, extend a condition, add a check, insert a guard."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from gi.model.edits.base import Edit, RewritePlan
from gi.model.edits.paths import _copied, _operand, _parenthesised, _parse_expression, fitted, parent_of
from gi.model.edits.words import becomes, other_place, quote, quoted
from gi.model.errors import EditError
from gi.model.program import Program
from gi.model.sites import Location

CLAMPS = ("max", "min", "abs")


@dataclass(frozen=True, slots=True)
class Clamp(Edit):
    """Wrap an expression in `max(bound, e)`, `min(e, bound)` or `abs(e)` (a fix template);
    `bound` is source text, an expression the operator took from the program or `0`."""

    kind: ClassVar[str] = "clamp"
    recombines: ClassVar[bool] = True
    function: str
    bound: str = ""

    def __post_init__(self) -> None:
        if self.function not in CLAMPS:
            raise EditError(f"clamp's function must be one of {list(CLAMPS)}, got {self.function!r}")
        if (self.function == "abs") != (self.bound == ""):
            raise EditError("clamp: abs takes no bound, max and min take one")
        if self.bound:
            _parse_expression(self.bound, "clamp bound")

    def rewrites(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        bound = _parse_expression(self.bound, "clamp bound") if self.bound else None
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))

        def clamp(node: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(node, cst.BaseExpression)
            value = _parenthesised(node) if isinstance(node, cst.Tuple) else node
            if bound is None:
                args = [cst.Arg(value)]
            elif self.function == "max":
                args = [cst.Arg(bound, comma=comma), cst.Arg(value)]
            else:
                args = [cst.Arg(value, comma=comma), cst.Arg(bound)]
            return cst.Call(func=cst.Name(self.function), args=args)

        plan.rewrite(self.target, clamp)

    def describe(self) -> str:
        if self.function == "max":
            return f"wrap the expression at {self.target} in max({self.bound}, ...)"
        if self.function == "min":
            return f"wrap the expression at {self.target} in min(..., {self.bound})"
        return f"wrap the expression at {self.target} in abs(...)"

    def words(self, program: Program) -> str:
        if self.function == "max":
            shape = f"max({self.bound}, ...)"
        elif self.function == "min":
            shape = f"min(..., {self.bound})"
        else:
            shape = "abs(...)"
        return f"wrap {quote(program, self.target)} in {shape}"


BOOLEAN_SIDES = ("left", "right")


@dataclass(frozen=True, slots=True)
class KeepOperand(Edit):
    """Keep one operand of `a and b` / `a or b` (widening or narrowing the condition)."""

    kind: ClassVar[str] = "keep_operand"
    recombines: ClassVar[bool] = True
    side: str

    def __post_init__(self) -> None:
        if self.side not in BOOLEAN_SIDES:
            raise EditError(f"keep_operand's side must be 'left' or 'right', got {self.side!r}")

    def removes(self) -> tuple[Location, ...]:
        dropped = "right" if self.side == "left" else "left"
        return (Location(self.target.file, f"{self.target.path}.{dropped}"),)

    def rewrites(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        parent = parent_of(program, self.target)

        def keep(node: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(node, cst.BooleanOperation)
            operand: cst.BaseExpression = getattr(node, self.side)
            if node.lpar and not operand.lpar:
                operand = operand.with_changes(lpar=node.lpar, rpar=node.rpar)
            return fitted(operand, parent)

        plan.rewrite(self.target, keep)

    def describe(self) -> str:
        return f"keep only the {self.side} operand of the condition at {self.target}"

    def words(self, program: Program) -> str:
        kept = Location(self.target.file, f"{self.target.path}.{self.side}")
        return f"keep {quote(program, kept)} of {quote(program, self.target)}"


@dataclass(frozen=True, slots=True)
class ExtendCondition(Edit):
    """`a` becomes `a and c` or `a or c`, with `c` a copy of a condition of the program."""

    kind: ClassVar[str] = "extend_condition"
    recombines: ClassVar[bool] = True
    operator: str
    ingredient: Location

    def __post_init__(self) -> None:
        if self.operator not in ("And", "Or"):
            raise EditError(f"extend_condition's operator must be 'And' or 'Or', got {self.operator!r}")

    def rewrites(self) -> tuple[Location, ...]:
        return (self.target,)

    def ingredients(self) -> tuple[Location, ...]:
        return (self.ingredient,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        parent = parent_of(program, self.target)
        extra = _operand(_copied(program, self.ingredient))
        operator = cst.And() if self.operator == "And" else cst.Or()

        def extend(node: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(node, cst.BaseExpression)
            left = _operand(node)
            return fitted(cst.BooleanOperation(left=left, operator=operator, right=extra), parent)

        plan.rewrite(self.target, extend)

    def describe(self) -> str:
        word = "and" if self.operator == "And" else "or"
        return f"the condition at {self.target} becomes `... {word}` a copy of {self.ingredient}"

    def words(self, program: Program) -> str:
        return f"{becomes(self, program)} (a copy from {other_place(program, self, self.ingredient)})"


@dataclass(frozen=True, slots=True)
class AddCheck(Edit):
    """`a` becomes `c and a` or `c or a` (`first`: the check comes first, as in `x is not
    None and x.y`), or `a and c` / `a or c`, with `c` a check the template writes as source
    text (`x`, `not x`, `x is None`, `x is not None`, on a name `a` reads)."""

    kind: ClassVar[str] = "add_check"
    recombines: ClassVar[bool] = True
    operator: str
    check: str
    first: bool = True

    def __post_init__(self) -> None:
        if self.operator not in ("And", "Or"):
            raise EditError(f"add_check's operator must be 'And' or 'Or', got {self.operator!r}")
        _parse_expression(self.check, "add_check's check")

    def rewrites(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        parent = parent_of(program, self.target)
        check = _operand(_parse_expression(self.check, "add_check's check"))
        operator = cst.And() if self.operator == "And" else cst.Or()

        def add(node: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(node, cst.BaseExpression)
            left, right = (check, _operand(node)) if self.first else (_operand(node), check)
            return fitted(cst.BooleanOperation(left=left, operator=operator, right=right), parent)

        plan.rewrite(self.target, add)

    def describe(self) -> str:
        word = "and" if self.operator == "And" else "or"
        shape = f"`{self.check} {word} ...`" if self.first else f"`... {word} {self.check}`"
        return f"the condition at {self.target} becomes {shape}"

    def words(self, program: Program) -> str:
        return becomes(self, program)


GUARD_ACTIONS = ("return", "continue", "break", "raise")


@dataclass(frozen=True, slots=True)
class InsertGuard(Edit):
    """Insert `if <condition>: <action>` before a statement (a fix template): `action` is
    `return <value>`, `continue`, `break` or `raise <exception>`; all of it source text."""

    kind: ClassVar[str] = "insert_guard"
    recombines: ClassVar[bool] = True
    condition: str
    action: str

    def __post_init__(self) -> None:
        self.statement()

    def statement(self) -> cst.If:
        """The guard as a statement (raises EditError when condition or action is not one)."""
        _parse_expression(self.condition, "guard condition")
        if self.action.split(" ", 1)[0] not in GUARD_ACTIONS:
            raise EditError(f"a guard's action is return, continue, break or raise, got {self.action!r}")
        try:
            statement = cst.parse_statement(f"if {self.condition}:\n    {self.action}\n")
        except cst.ParserSyntaxError:
            raise EditError(f"guard `if {self.condition}: {self.action}` does not parse") from None
        assert isinstance(statement, cst.If)
        return statement.with_changes(body=statement.body.with_changes(indent=None))

    def anchors(self) -> tuple[Location, ...]:
        return ()

    def positions(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        plan.insert_before(self.target, self.statement())

    def describe(self) -> str:
        return f"insert `if {self.condition}: {self.action}` before {self.target}"

    def words(self, program: Program) -> str:
        guard = cst.Module(body=[self.statement()]).code
        return f"insert {quoted(guard)} before {quote(program, self.target)}"
