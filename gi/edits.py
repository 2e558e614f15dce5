"""Edits: atomic, frozen, hashable changes at sites of the original program.

Every edit is plain data (locations, operator names, source text) and round-trips through
JSON. How an edit changes the tree is said through a small `RewritePlan` interface that
`gi.patch.apply` implements, so the kinds of edit stay in one place and `apply` stays one
generic pass over each file.
"""

from __future__ import annotations

import dataclasses
import keyword
from collections.abc import Callable, Iterator
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


@dataclass(frozen=True, slots=True)
class ReplaceExpression(Edit):
    """Replace an expression with a copy of another expression of the original program."""

    kind: ClassVar[str] = "replace_expression"
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


@dataclass(frozen=True, slots=True)
class ReplaceName(Edit):
    """Replace a name that is read (a variable, or the function a call calls) with another."""

    kind: ClassVar[str] = "replace_name"
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


@dataclass(frozen=True, slots=True)
class SwapArguments(Edit):
    """Exchange two positional arguments of a call (`divmod(b, a)` becomes `divmod(a, b)`)."""

    kind: ClassVar[str] = "swap_arguments"
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


@dataclass(frozen=True, slots=True)
class Negate(Edit):
    """Put `not` before a condition (`if x:` becomes `if not x:`)."""

    kind: ClassVar[str] = "negate"

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


CLAMPS = ("max", "min", "abs")


@dataclass(frozen=True, slots=True)
class Clamp(Edit):
    """Wrap an expression in `max(bound, e)`, `min(e, bound)` or `abs(e)` (a fix template);
    `bound` is source text, an expression the operator took from the program or `0`."""

    kind: ClassVar[str] = "clamp"
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


BOOLEAN_SIDES = ("left", "right")


@dataclass(frozen=True, slots=True)
class KeepOperand(Edit):
    """Keep one operand of `a and b` / `a or b` (widening or narrowing the condition)."""

    kind: ClassVar[str] = "keep_operand"
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


@dataclass(frozen=True, slots=True)
class ExtendCondition(Edit):
    """`a` becomes `a and c` or `a or c`, with `c` a copy of a condition of the program."""

    kind: ClassVar[str] = "extend_condition"
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


@dataclass(frozen=True, slots=True)
class AddCheck(Edit):
    """`a` becomes `c and a` or `c or a` (`first`: the check comes first, as in `x is not
    None and x.y`), or `a and c` / `a or c`, with `c` a check the template writes as source
    text (`x`, `not x`, `x is None`, `x is not None`, on a name `a` reads)."""

    kind: ClassVar[str] = "add_check"
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


def _operand(expression: cst.BaseExpression) -> cst.BaseExpression:
    """`expression` as an operand of `and`/`or`: parenthesised unless it binds tighter."""
    if isinstance(expression, (cst.Comparison, cst.UnaryOperation)):
        return expression
    return _parenthesised(expression)


GUARD_ACTIONS = ("return", "continue", "break", "raise")


@dataclass(frozen=True, slots=True)
class InsertGuard(Edit):
    """Insert `if <condition>: <action>` before a statement (a fix template): `action` is
    `return <value>`, `continue`, `break` or `raise <exception>`; all of it source text."""

    kind: ClassVar[str] = "insert_guard"
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
