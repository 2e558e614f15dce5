"""Edits of expressions whose value is read: replace one with another, rename, swap
arguments, offset by one, negate."""

from __future__ import annotations

import keyword
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from gi.model.edits.base import Edit, RewritePlan
from gi.model.edits.paths import _copied, _expression, _parenthesised, fitted, parent_of
from gi.model.edits.words import becomes, other_place, quote, source_line
from gi.model.errors import EditError
from gi.model.program import Program
from gi.model.sites import Location


@dataclass(frozen=True, slots=True)
class ReplaceExpression(Edit):
    """Replace an expression with a copy of another expression of the original program."""

    kind: ClassVar[str] = "replace_expression"
    recombines: ClassVar[bool] = True
    ingredient: Location

    def removes(self) -> tuple[Location, ...]:
        return (self.target,)

    def ingredients(self) -> tuple[Location, ...]:
        return (self.ingredient,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        copy = _copied(program, self.ingredient)
        old = _expression(program, self.target)
        if not copy.lpar and old.lpar:
            copy = copy.with_changes(lpar=old.lpar, rpar=old.rpar)
        new = fitted(copy, parent_of(program, self.target))
        plan.rewrite(self.target, lambda node: new)

    def describe(self) -> str:
        return f"replace the expression at {self.target} with a copy of {self.ingredient}"

    def words(self, program: Program) -> str:
        return f"{becomes(self, program)} (a copy from {other_place(program, self, self.ingredient)})"


@dataclass(frozen=True, slots=True)
class ReplaceName(Edit):
    """Replace a name that is read (a variable, or the function a call calls) with another."""

    kind: ClassVar[str] = "replace_name"
    recombines: ClassVar[bool] = True
    name: str

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or keyword.iskeyword(self.name):
            raise EditError(f"replace_name needs an identifier, got {self.name!r}")

    def removes(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        if not isinstance(program.node(self.target), cst.Name):
            raise EditError(f"{self.target} is no name")
        plan.rewrite(self.target, lambda node: node.with_changes(value=self.name))

    def describe(self) -> str:
        return f"the name at {self.target} becomes {self.name}"

    def words(self, program: Program) -> str:
        old = program.node(self.target)
        assert isinstance(old, cst.Name)
        return f"{old.value} becomes {self.name} in {source_line(program, self.target)}"


@dataclass(frozen=True, slots=True)
class SwapArguments(Edit):
    """Exchange two positional arguments of a call (`divmod(b, a)` becomes `divmod(a, b)`)."""

    kind: ClassVar[str] = "swap_arguments"
    recombines: ClassVar[bool] = True
    first: int
    second: int

    def __post_init__(self) -> None:
        if not (0 <= self.first < self.second):
            raise EditError(
                f"swap_arguments needs argument indices 0 <= first < second, got {self.first}, {self.second}"
            )

    def rewrites(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        call = program.node(self.target)
        if not isinstance(call, cst.Call) or self.second >= len(call.args):
            raise EditError(f"{self.target} is no call with {self.second + 1} arguments")

        def swap(node: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(node, cst.Call)
            args = list(node.args)
            first, second = args[self.first], args[self.second]
            args[self.first] = first.with_changes(value=second.value)
            args[self.second] = second.with_changes(value=first.value)
            return node.with_changes(args=args)

        plan.rewrite(self.target, swap)

    def describe(self) -> str:
        return f"swap arguments {self.first + 1} and {self.second + 1} of the call at {self.target}"

    def words(self, program: Program) -> str:
        call = program.node(self.target)
        assert isinstance(call, cst.Call)
        which = "the arguments" if len(call.args) == 2 else f"arguments {self.first + 1} and {self.second + 1}"
        return f"swap {which} of {quote(program, self.target)}"


_ADDITIVE_OR_TIGHTER = (
    cst.Add,
    cst.Subtract,
    cst.Multiply,
    cst.Divide,
    cst.FloorDivide,
    cst.Modulo,
    cst.MatrixMultiply,
    cst.Power,
)


@dataclass(frozen=True, slots=True)
class OffsetExpression(Edit):
    """Add 1 to an integer expression or subtract 1 from it (`n` becomes `n + 1`)."""

    kind: ClassVar[str] = "offset_expression"
    recombines: ClassVar[bool] = True
    delta: int

    def __post_init__(self) -> None:
        if self.delta not in (1, -1):
            raise EditError(f"offset_expression adds 1 or -1, got {self.delta!r}")

    def rewrites(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        parent = parent_of(program, self.target)
        spaced = {"whitespace_before": cst.SimpleWhitespace(" "), "whitespace_after": cst.SimpleWhitespace(" ")}
        operator = cst.Add(**spaced) if self.delta > 0 else cst.Subtract(**spaced)

        def offset(node: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(node, cst.BaseExpression)
            additive = isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _ADDITIVE_OR_TIGHTER)
            inner = node if additive else _parenthesised(node)
            return fitted(cst.BinaryOperation(left=inner, operator=operator, right=cst.Integer("1")), parent)

        plan.rewrite(self.target, offset)

    def describe(self) -> str:
        return f"{'add 1 to' if self.delta > 0 else 'subtract 1 from'} the expression at {self.target}"

    def words(self, program: Program) -> str:
        return becomes(self, program)


@dataclass(frozen=True, slots=True)
class Negate(Edit):
    """Put `not` before a condition (`if x:` becomes `if not x:`)."""

    kind: ClassVar[str] = "negate"
    recombines: ClassVar[bool] = True

    def rewrites(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        parent = parent_of(program, self.target)

        def negate(node: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(node, cst.BaseExpression)
            inner = node if isinstance(node, cst.Comparison) else _parenthesised(node)
            not_ = cst.Not(whitespace_after=cst.SimpleWhitespace(" "))
            return fitted(cst.UnaryOperation(operator=not_, expression=inner), parent)

        plan.rewrite(self.target, negate)

    def words(self, program: Program) -> str:
        return becomes(self, program)
