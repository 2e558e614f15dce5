"""Edits of operators and numbers: replace a binary, comparison, boolean or augmented
operator, remove a unary operator, replace a number."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from gi.model.edits.base import Edit, RewritePlan
from gi.model.edits.words import quote, quoted, source_line
from gi.model.errors import EditError
from gi.model.program import Program
from gi.model.sites import Location

# --- expressions --------------------------------------------------------------------------

_OPERATOR_FIELDS = ("whitespace_before", "whitespace_after")


def operator_node(name: str, like: cst.CSTNode | None = None) -> cst.CSTNode:
    """Build the libcst operator called `name`, keeping the spacing of `like` where it fits."""
    cls = getattr(cst, name, None)
    if not (isinstance(cls, type) and issubclass(cls, cst.CSTNode)):
        raise EditError(f"{name!r} is not a libcst operator")
    fields = {field.name for field in dataclasses.fields(cls)}
    spacing = {
        field: getattr(like, field)
        for field in _OPERATOR_FIELDS
        if like is not None and field in fields and hasattr(like, field)
    }
    if name in ("Not",) and "whitespace_after" in spacing:
        # `not` needs a space after it, `-` had none.
        spacing["whitespace_after"] = cst.SimpleWhitespace(" ")
    if name in ("And", "Or", "In", "NotIn", "Is", "IsNot"):
        spacing = {field: cst.SimpleWhitespace(" ") for field in spacing}
    return cls(**spacing)


_OPERATIONS = (cst.BinaryOperation, cst.AugAssign, cst.ComparisonTarget, cst.BooleanOperation, cst.UnaryOperation)


def operator_of(node: cst.CSTNode) -> cst.CSTNode:
    """The operator node of an operation site."""
    if not isinstance(node, _OPERATIONS):
        raise EditError(f"a {type(node).__name__} has no operator to replace")
    return node.operator


def operator_text(program: Program, location: Location) -> str:
    """The source of the operator at a site of the original, on its own."""
    node = program.node(location)
    return program.modules[location.file].code_for_node(operator_of(node)).strip()


def new_operator_text(name: str) -> str:
    """The source of the libcst operator called `name`, on its own."""
    return cst.Module(body=()).code_for_node(operator_node(name)).strip()


@dataclass(frozen=True, slots=True)
class ReplaceOperator(Edit):
    """Replace the operator of a binary, augmented, comparison, boolean or unary operation."""

    kind: ClassVar[str] = "replace_operator"
    recombines: ClassVar[bool] = True
    operator: str

    def rewrites(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        new = operator_node(self.operator, operator_of(program.node(self.target)))
        plan.rewrite(self.target, lambda node: node.with_changes(operator=new))

    def describe(self) -> str:
        return f"operator at {self.target} becomes {self.operator}"

    def words(self, program: Program) -> str:
        old, new = operator_text(program, self.target), new_operator_text(self.operator)
        return f"{old} becomes {new} in {source_line(program, self.target)}"


@dataclass(frozen=True, slots=True)
class RemoveUnary(Edit):
    """Drop a unary operator (`not x` becomes `x`, `-x` becomes `x`)."""

    kind: ClassVar[str] = "remove_unary"
    recombines: ClassVar[bool] = True

    def rewrites(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        def drop(node: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(node, cst.UnaryOperation)
            inner = node.expression
            if node.lpar and not inner.lpar:
                inner = inner.with_changes(lpar=node.lpar, rpar=node.rpar)
            return inner

        plan.rewrite(self.target, drop)

    def words(self, program: Program) -> str:
        node = program.node(self.target)
        assert isinstance(node, cst.UnaryOperation)
        inner = program.modules[self.target.file].code_for_node(node.expression)
        return f"{quote(program, self.target)} becomes {quoted(inner)} in {source_line(program, self.target)}"


def number_node(text: str) -> cst.BaseExpression:
    """Parse a numeric literal such as '-1', '0.5' or '2' into an expression node."""
    try:
        node = cst.parse_expression(text)
    except cst.ParserSyntaxError:
        raise EditError(f"{text!r} is not a numeric literal") from None
    inner = node.expression if isinstance(node, cst.UnaryOperation) else node
    if not isinstance(inner, (cst.Integer, cst.Float)):
        raise EditError(f"{text!r} is not a numeric literal")
    return node


@dataclass(frozen=True, slots=True)
class ReplaceNumber(Edit):
    """Replace a numeric constant with another value (given as source text)."""

    kind: ClassVar[str] = "replace_number"
    recombines: ClassVar[bool] = True
    value: str

    def __post_init__(self) -> None:
        number_node(self.value)

    def rewrites(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        new = number_node(self.value)
        plan.rewrite(self.target, lambda node: new)

    def describe(self) -> str:
        return f"constant at {self.target} becomes {self.value}"

    def words(self, program: Program) -> str:
        old = program.modules[self.target.file].code_for_node(program.node(self.target)).strip()
        return f"{old} becomes {self.value} in {source_line(program, self.target)}"
