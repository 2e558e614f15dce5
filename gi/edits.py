"""Edits: atomic, frozen, hashable changes at sites of the original program.

Every edit is plain data (locations, operator names, source text) and round-trips through
JSON. How an edit changes the tree is said through a small `RewritePlan` interface that
`gi.patch.apply` implements, so the kinds of edit stay in one place and `apply` stays one
generic pass over each file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol

import libcst as cst

from gi.errors import EditError
from gi.program import Location, Program


class RewritePlan(Protocol):
    """What an edit may ask of `apply`; locations are sites of the original program."""

    def delete(self, target: Location) -> None: ...

    def insert_before(self, target: Location, statement: cst.BaseStatement) -> None: ...

    def replace(self, target: Location, statement: cst.BaseStatement) -> None: ...

    def rewrite(self, target: Location, change: Callable[[cst.CSTNode], cst.CSTNode]) -> None: ...


EDIT_KINDS: dict[str, type[Edit]] = {}


@dataclass(frozen=True, slots=True)
class Edit:
    """Base of all edits. Subclasses set `kind` and implement `contribute`.

    `removes()` names the subtrees whose original content the edit takes away (they block
    later edits inside them and void earlier ones); `rewrites()` names nodes rewritten in
    place, where the last rewrite wins.
    """

    kind: ClassVar[str] = ""
    target: Location

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # No zero-argument super() here: slots=True rebuilds the class, which breaks it.
        if cls.kind:
            EDIT_KINDS[cls.kind] = cls

    def anchors(self) -> tuple[Location, ...]:
        """Sites that must still exist for the edit to take effect."""
        return (self.target,)

    def positions(self) -> tuple[Location, ...]:
        """Statements before which the edit inserts: they may be gone, their parent may not."""
        return ()

    def removes(self) -> tuple[Location, ...]:
        return ()

    def rewrites(self) -> tuple[Location, ...]:
        return ()

    def ingredients(self) -> tuple[Location, ...]:
        """Original statements the edit copies from."""
        return ()

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement contribute")

    def describe(self) -> str:
        """A one-line account for diffs and reports."""
        return f"{self.kind} at {self.target}"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            data[field.name] = value.to_json() if isinstance(value, Location) else value
        return data

    @staticmethod
    def from_json(data: Any) -> Edit:
        """Rebuild an edit from `to_json` output; raises EditError naming what is wrong."""
        if not isinstance(data, dict) or "kind" not in data:
            raise EditError(f"an edit is a JSON object with a 'kind', got {data!r}")
        cls = EDIT_KINDS.get(data["kind"])
        if cls is None:
            raise EditError(f"unknown edit kind {data['kind']!r}; known kinds: {sorted(EDIT_KINDS)}")
        values: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            if field.name not in data:
                if field.default is not dataclasses.MISSING:
                    continue
                raise EditError(f"edit {data['kind']!r} lacks the field {field.name!r}: {data!r}")
            raw = data[field.name]
            try:
                values[field.name] = Location.from_json(raw) if field.type == "Location" else raw
            except ValueError as error:
                raise EditError(f"edit {data['kind']!r}, field {field.name!r}: {error}") from None
        extra = set(data) - {"kind"} - set(values)
        if extra:
            raise EditError(f"edit {data['kind']!r} has unknown fields {sorted(extra)}")
        return cls(**values)


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


# --- statements ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeleteStatement(Edit):
    """Remove a statement (an emptied block gets `pass`)."""

    kind: ClassVar[str] = "delete_statement"

    def removes(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        plan.delete(self.target)


@dataclass(frozen=True, slots=True)
class InsertStatement(Edit):
    """Insert a copy of another original statement (`ingredient`) before `target`."""

    kind: ClassVar[str] = "insert_statement"
    ingredient: Location

    def anchors(self) -> tuple[Location, ...]:
        return ()

    def positions(self) -> tuple[Location, ...]:
        return (self.target,)

    def ingredients(self) -> tuple[Location, ...]:
        return (self.ingredient,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        plan.insert_before(self.target, _copy(_statement(program, self.ingredient)))

    def describe(self) -> str:
        return f"insert a copy of {self.ingredient} before {self.target}"


@dataclass(frozen=True, slots=True)
class ReplaceStatement(Edit):
    """Replace a statement with a copy of another original statement."""

    kind: ClassVar[str] = "replace_statement"
    ingredient: Location

    def removes(self) -> tuple[Location, ...]:
        return (self.target,)

    def ingredients(self) -> tuple[Location, ...]:
        return (self.ingredient,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        new = _copy(_statement(program, self.ingredient))
        plan.replace(self.target, _in_place_of(_statement(program, self.target), new))

    def describe(self) -> str:
        return f"replace {self.target} with a copy of {self.ingredient}"


@dataclass(frozen=True, slots=True)
class SwapStatements(Edit):
    """Exchange two statements, neither inside the other."""

    kind: ClassVar[str] = "swap_statements"
    other: Location

    def anchors(self) -> tuple[Location, ...]:
        return (self.target, self.other)

    def removes(self) -> tuple[Location, ...]:
        return (self.target, self.other)

    def ingredients(self) -> tuple[Location, ...]:
        return (self.target, self.other)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        first, second = _statement(program, self.target), _statement(program, self.other)
        plan.replace(self.target, _in_place_of(first, _copy(second)))
        plan.replace(self.other, _in_place_of(second, _copy(first)))

    def describe(self) -> str:
        return f"swap {self.target} with {self.other}"


@dataclass(frozen=True, slots=True)
class MoveStatement(Edit):
    """Move a statement so that it stands before `destination`."""

    kind: ClassVar[str] = "move_statement"
    destination: Location

    def positions(self) -> tuple[Location, ...]:
        return (self.destination,)

    def removes(self) -> tuple[Location, ...]:
        return (self.target,)

    def ingredients(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        plan.insert_before(self.destination, _copy(_statement(program, self.target)))
        plan.delete(self.target)

    def describe(self) -> str:
        return f"move {self.target} before {self.destination}"


ControlKeyword = Literal["break", "continue", "return"]
_CONTROL: dict[str, Callable[[], cst.BaseSmallStatement]] = {
    "break": cst.Break,
    "continue": cst.Continue,
    "return": lambda: cst.Return(value=None),
}


@dataclass(frozen=True, slots=True)
class InsertControl(Edit):
    """Insert `break`, `continue` or `return` before a statement where the syntax allows it."""

    kind: ClassVar[str] = "insert_control"
    keyword: str

    def __post_init__(self) -> None:
        if self.keyword not in _CONTROL:
            raise EditError(f"insert_control keyword must be one of {sorted(_CONTROL)}, got {self.keyword!r}")

    def anchors(self) -> tuple[Location, ...]:
        return ()

    def positions(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        plan.insert_before(self.target, cst.SimpleStatementLine(body=[_CONTROL[self.keyword]()]))

    def describe(self) -> str:
        return f"insert {self.keyword} before {self.target}"


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


@dataclass(frozen=True, slots=True)
class ReplaceOperator(Edit):
    """Replace the operator of a binary, augmented, comparison, boolean or unary operation."""

    kind: ClassVar[str] = "replace_operator"
    operator: str

    def rewrites(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        new = operator_node(self.operator, operator_of(program.node(self.target)))
        plan.rewrite(self.target, lambda node: node.with_changes(operator=new))

    def describe(self) -> str:
        return f"operator at {self.target} becomes {self.operator}"


@dataclass(frozen=True, slots=True)
class RemoveUnary(Edit):
    """Drop a unary operator (`not x` becomes `x`, `-x` becomes `x`)."""

    kind: ClassVar[str] = "remove_unary"

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


# --- rewrites proposed by a language model ------------------------------------------------


def parse_function(source: str) -> cst.FunctionDef:
    """Parse the source of one function definition (raises EditError otherwise)."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        raise EditError(f"the new source does not parse: {error.message}") from None
    functions = [node for node in module.body if isinstance(node, cst.FunctionDef)]
    if len(module.body) != 1 or len(functions) != 1:
        raise EditError("the new source must be exactly one function definition")
    return functions[0]


@dataclass(frozen=True, slots=True)
class ReplaceFunction(Edit):
    """Replace a whole function with new source, as a language model wrote it.

    The edit carries everything needed to apply it again without the model: the source,
    and for the record the model's name, a hash of the prompt and the tokens it cost.
    """

    kind: ClassVar[str] = "replace_function"
    source: str
    model: str = ""
    prompt_hash: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __post_init__(self) -> None:
        parse_function(self.source)

    def removes(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        target = program.node(self.target)
        assert isinstance(target, cst.FunctionDef)
        new = parse_function(self.source)
        plan.replace(self.target, new.with_changes(leading_lines=target.leading_lines))

    def describe(self) -> str:
        return f"rewrite the function at {self.target} ({self.model or 'language model'})"
