"""Tree-path helpers shared by the edit kinds: the node at a location, its parent, copies of
statements and expressions, and fitting a new expression into its parent (parentheses)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gi.model.errors import EditError
from gi.model.program import Program
from gi.model.sites import Location


def _statement(program: Program, location: Location) -> cst.BaseStatement:
    node = program.node(location)
    assert isinstance(node, cst.BaseStatement), location
    return node


def _copy(statement: cst.BaseStatement) -> cst.BaseStatement:
    """A fresh copy of an original statement, without the comments and blank lines above it."""
    copy = statement.deep_clone()
    if isinstance(copy, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        copy = copy.with_changes(leading_lines=())
    return copy


def _in_place_of(target: cst.BaseStatement, new: cst.BaseStatement) -> cst.BaseStatement:
    """`new`, carrying the comments and blank lines that stood above `target`."""
    if isinstance(new, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and isinstance(
        target, (cst.SimpleStatementLine, cst.BaseCompoundStatement)
    ):
        return new.with_changes(leading_lines=target.leading_lines)
    return new


# --- expression-level edits and fix templates ---------------------------------------------

#: Expressions that bind tighter than any operator: they never need parentheses where they go.
_ATOMS = (
    cst.Name,
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.Integer,
    cst.Float,
    cst.Imaginary,
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.FormattedString,
    cst.List,
    cst.Dict,
    cst.Set,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
    cst.GeneratorExp,
)
_NUMBERS = (cst.Integer, cst.Float, cst.Imaginary)
#: Parents where any expression but a bare tuple stands without parentheses.
_OPEN_PARENTS = (
    cst.Arg,
    cst.Return,
    cst.Assign,
    cst.AnnAssign,
    cst.AugAssign,
    cst.Expr,
    cst.Index,
    cst.Element,
    cst.DictElement,
    cst.If,
    cst.While,
    cst.Assert,
    cst.Slice,
    cst.WithItem,
    cst.Raise,
    cst.For,
)


def node_at(program: Program, location: Location) -> cst.CSTNode:
    """The original node at any field/index path of a file, site or not (KeyError if none)."""
    *_, node = path_nodes(program, location)
    return node


def path_nodes(program: Program, location: Location) -> Iterator[cst.CSTNode]:
    """The module of `location`'s file and each original node down to the one at its
    field/index path (KeyError if there is none)."""
    node: cst.CSTNode = program.modules[location.file]
    yield node
    for step in location.path.split(".") if location.path else ():
        name, _, index = step.partition("[")
        value = getattr(node, name, None)
        if index:
            if not isinstance(value, (list, tuple)) or int(index[:-1]) >= len(value):
                raise KeyError(f"{location} is no node of the program")
            value = value[int(index[:-1])]
        if not isinstance(value, cst.CSTNode):
            raise KeyError(f"{location} is no node of the program")
        node = value
        yield node


def parent_of(program: Program, location: Location) -> cst.CSTNode:
    """The original node holding the node at `location`."""
    path = location.path.rpartition(".")[0]
    return node_at(program, Location(location.file, path))


def _parenthesised(expression: cst.BaseExpression) -> cst.BaseExpression:
    if expression.lpar or isinstance(expression, _ATOMS):
        return expression
    return expression.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def fitted(expression: cst.BaseExpression, parent: cst.CSTNode) -> cst.BaseExpression:
    """`expression` ready to stand under `parent`: in parentheses unless it binds tighter
    than anything there could (so `a * b` with `c + d` for `b` stays `a * (c + d)`)."""
    bare_tuple = isinstance(expression, cst.Tuple) and not expression.lpar
    if isinstance(parent, _OPEN_PARENTS) and not bare_tuple:
        return expression
    if isinstance(parent, cst.Attribute) and isinstance(expression, _NUMBERS) and not expression.lpar:
        # `1.real` would read as a float literal.
        return expression.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return _parenthesised(expression)


def _expression(program: Program, location: Location) -> cst.BaseExpression:
    node = program.node(location)
    if not isinstance(node, cst.BaseExpression):
        raise EditError(f"{location} is no expression")
    return node


def _copied(program: Program, location: Location) -> cst.BaseExpression:
    """A fresh copy of an original expression; in parentheses when it spans lines, which
    only the brackets around it allowed."""
    copy = _expression(program, location).deep_clone()
    if "\n" in program.code(location) and not copy.lpar:
        copy = copy.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return copy


def _parse_expression(text: str, what: str) -> cst.BaseExpression:
    try:
        return cst.parse_expression(text)
    except cst.ParserSyntaxError:
        raise EditError(f"{what} {text!r} is not a Python expression") from None


def _operand(expression: cst.BaseExpression) -> cst.BaseExpression:
    """`expression` as an operand of `and`/`or`: parenthesised unless it binds tighter."""
    if isinstance(expression, (cst.Comparison, cst.UnaryOperation)):
        return expression
    return _parenthesised(expression)
