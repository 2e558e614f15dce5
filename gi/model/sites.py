"""Sites and their locations: the places an edit can touch in the original program, found in
one walk over each file's tree (`SiteCollector`), addressed by stable `Location`s."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import libcst as cst

from gi.model.positions import line_spans


@dataclass(frozen=True, slots=True, order=True)
class Location:
    """Where a site is in the original program: a file and a field/index path."""

    file: str
    path: str

    def contains(self, other: Location, *, strictly: bool = False) -> bool:
        """True if `other` lies inside this location's subtree (or is it, unless strictly)."""
        if self.file != other.file:
            return False
        if self.path == other.path:
            return not strictly
        return other.path.startswith(self.path + ".") or other.path.startswith(self.path + "[")

    def to_json(self) -> dict[str, str]:
        return {"file": self.file, "path": self.path}

    @classmethod
    def from_json(cls, data: Any) -> Location:
        if not isinstance(data, dict) or not isinstance(data.get("file"), str) or not isinstance(data.get("path"), str):
            raise ValueError(f"a location is {{'file': str, 'path': str}}, got {data!r}")
        return cls(data["file"], data["path"])

    def __str__(self) -> str:
        return f"{self.file}:{self.path}"


class SiteKind(enum.StrEnum):
    """The kinds of places an operator can edit."""

    STATEMENT = "statement"
    FUNCTION = "function"
    BINARY_OPERATOR = "binary_operator"
    AUGMENTED_ASSIGNMENT = "augmented_assignment"
    COMPARISON = "comparison"
    BOOLEAN_OPERATOR = "boolean_operator"
    UNARY_OPERATOR = "unary_operator"
    NUMBER = "number"
    #: An expression whose value is read (not an assignment target, a keyword's name, a
    #: decorator, a default, an annotation, nor inside a lambda, comprehension or f-string).
    EXPRESSION = "expression"


@dataclass(frozen=True, slots=True)
class StatementContext:
    """What the syntax allows at a statement's position, and what the statement needs there.

    Operators use it so that every edit they propose keeps the file compilable: a `break`
    needs an enclosing loop, a `return` a function, an `await` an async function, a name a
    nested function declares `nonlocal` must keep its binding.
    """

    # Where the statement stands.
    in_function: bool = False
    in_async_function: bool = False
    in_generator: bool = False
    in_loop: bool = False
    #: Nothing may be inserted before it nor put in its place: a `from __future__` import,
    #: or a statement before a function's last global/nonlocal declaration.
    fixed_position: bool = False
    #: False when it binds a name that a nested function declares nonlocal.
    removable: bool = True
    # What the statement needs where a copy of it goes.
    needs_function: bool = False
    needs_async: bool = False
    needs_loop: bool = False
    yields: bool = False
    yields_from: bool = False
    returns_value: bool = False
    #: False for declarations, `from __future__` imports and functions declaring nonlocal names.
    movable: bool = True

    def accepts(self, other: StatementContext) -> bool:
        """Can a copy of the statement described by `other` stand at this position?"""
        if not other.movable or self.fixed_position:
            return False
        if other.needs_function and not self.in_function:
            return False
        if other.needs_async and not self.in_async_function:
            return False
        if other.needs_loop and not self.in_loop:
            return False
        # A yield would turn a plain function into a generator; async generators have more rules.
        if other.yields and not self.in_generator:
            return False
        return not (self.in_async_function and (other.yields_from or (other.returns_value and self.in_generator)))


@dataclass(frozen=True, slots=True)
class Site:
    """One editable place: its location, its kind, a short label, and for statements its context."""

    location: Location
    kind: SiteKind
    #: The enclosing function's qualified name ("Class.method"), or "" at module level.
    function: str
    line: int
    context: StatementContext | None = None
    #: The site's last line (its first is `line`): what coverage of its lines is read over.
    last_line: int = 0


_FIELDS: dict[type, tuple[str, ...]] = {}
_NODE_TYPES: dict[type, bool] = {}


def _field_names(node_type: type[cst.CSTNode]) -> tuple[str, ...]:
    names = _FIELDS.get(node_type)
    if names is None:
        names = _FIELDS[node_type] = tuple(field.name for field in dataclasses.fields(node_type))
    return names


def _children(node: cst.CSTNode) -> Iterator[tuple[str, cst.CSTNode]]:
    """Yield (path step, child) for every child node, in field order. Called for every node of
    every module, many times: field names are looked up once per node type, and a field's
    value is told apart by its concrete type (libcst keeps sequences in tuples and lists), not
    by abstract base classes, which cost most of the time on a large module."""
    for name in _field_names(type(node)):
        value = getattr(node, name)
        if _is_node(type(value)):
            yield name, value
        elif type(value) in (tuple, list):
            for index, item in enumerate(value):
                if _is_node(type(item)):
                    yield f"{name}[{index}]", item


def _is_node(value_type: type) -> bool:
    """Whether values of this type are libcst nodes (an ABC's isinstance is slow; this is not)."""
    known = _NODE_TYPES.get(value_type)
    if known is None:
        known = _NODE_TYPES[value_type] = issubclass(value_type, cst.CSTNode)
    return known


def _join(path: str, step: str) -> str:
    return f"{path}.{step}" if path else step


_LOOPS = (cst.For, cst.While)
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def _own_scope(node: cst.CSTNode) -> Iterator[tuple[cst.CSTNode, int]]:
    """Yield (node, loop depth) for `node` and its descendants, not entering nested scopes."""
    stack: list[tuple[cst.CSTNode, int]] = [(node, 0)]
    while stack:
        current, depth = stack.pop()
        yield current, depth
        loop = type(current) in _LOOPS
        for step, child in _children(current):
            if type(child) not in _SCOPES:  # concrete libcst classes: `type` is isinstance here, and fast
                inner = depth + 1 if loop and step == "body" else depth
                stack.append((child, inner))


def _is_future_import(statement: cst.CSTNode) -> bool:
    return type(statement) is cst.SimpleStatementLine and any(
        isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name) and small.module.value == "__future__"
        for small in statement.body
    )


#: The node types `_own_bits` looks at (concrete classes), to skip the rest fast.
_REQUIRING = frozenset({cst.Global, cst.Nonlocal, cst.Return, cst.Yield, cst.Await, cst.Break, cst.Continue, cst.For,
                        cst.With, cst.CompFor})  # fmt: skip

#: What a statement's own scope holds, as bits of `_Facts.bits`: a global or nonlocal declaration,
#: a return (with a value), a yield (from), an await, an async for/with/comprehension, and a break
#: or continue outside any loop of the statement's own.
_DECLARES, _RETURNS, _RETURNS_VALUE, _YIELDS, _YIELDS_FROM, _AWAITS, _ASYNC, _FREE_BREAK = (
    1 << bit for bit in range(8)
)


@dataclass(frozen=True, slots=True)
class _Facts:
    """What lies below one node (itself included), gathered once for the whole module bottom-up
    (`_gather_facts`), so that a statement's needs are read off, not walked again for each
    statement that encloses it (on a large module those walks were most of the indexing).

    `bits` and `declarations_end` cover the node's own scope (not entering nested functions,
    classes and lambdas); `nonlocal_names` every name declared nonlocal below it."""

    bits: int = 0
    #: The line of the last global/nonlocal declaration in the node's own scope (0: none).
    declarations_end: int = 0
    nonlocal_names: frozenset[str] = frozenset()


_NO_FACTS = _Facts()


def _own_bits(node: cst.CSTNode) -> int:
    """The `_Facts` bits of the node itself."""
    kind = type(node)
    if kind not in _REQUIRING:
        return 0
    if kind is cst.Global or kind is cst.Nonlocal:
        return _DECLARES
    if isinstance(node, cst.Return):
        return _RETURNS | (_RETURNS_VALUE if node.value is not None else 0)
    if isinstance(node, cst.Yield):
        return _YIELDS | (_YIELDS_FROM if isinstance(node.value, cst.From) else 0)
    if kind is cst.Await:
        return _AWAITS
    if kind is cst.Break or kind is cst.Continue:
        return _FREE_BREAK
    assert isinstance(node, (cst.For, cst.With, cst.CompFor))
    return _ASYNC if node.asynchronous is not None else 0


def _gather_facts(module: cst.Module, lines: dict[int, int]) -> dict[int, _Facts]:
    """The `_Facts` of every node of `module` that has any, by id(node) (the rest have none):
    one pass in post-order, without recursion (deeply nested expressions are legal)."""
    facts: dict[int, _Facts] = {}
    stack: list[tuple[cst.CSTNode, bool]] = [(module, False)]
    while stack:
        node, children_done = stack.pop()
        if not children_done:
            stack.append((node, True))
            stack.extend((child, False) for _, child in _children(node))
            continue
        bits = _own_bits(node)
        declared = lines.get(id(node), 0) if bits & _DECLARES else 0
        names = frozenset(item.name.value for item in node.names) if type(node) is cst.Nonlocal else frozenset()
        loop = type(node) in _LOOPS
        for step, child in _children(node):
            below = facts.get(id(child))
            if below is None:
                continue
            if below.nonlocal_names:
                names |= below.nonlocal_names
            if type(child) in _SCOPES:  # its own scope: only its nonlocal names reach out
                continue
            # A break in a loop's body belongs to that loop (the `else` block's does not).
            bits |= below.bits & ~_FREE_BREAK if loop and step == "body" else below.bits
            declared = max(declared, below.declarations_end)
        if bits or declared or names:
            facts[id(node)] = _Facts(bits, declared, names)
    return facts


def _requirements(statement: cst.CSTNode, facts: _Facts) -> StatementContext:
    """Work out what a statement needs from the position a copy of it is placed at."""
    movable = not _is_future_import(statement) and not facts.nonlocal_names
    if isinstance(statement, _SCOPES):
        return StatementContext(movable=movable)
    bits = facts.bits
    return StatementContext(
        movable=movable and not bits & _DECLARES,
        needs_function=bool(bits & (_RETURNS | _YIELDS | _AWAITS | _ASYNC)),
        needs_async=bool(bits & (_AWAITS | _ASYNC)),
        needs_loop=bool(bits & _FREE_BREAK),
        yields=bool(bits & _YIELDS),
        yields_from=bool(bits & _YIELDS_FROM),
        returns_value=bool(bits & _RETURNS_VALUE),
    )


_EXPRESSION_KINDS: tuple[tuple[type[cst.CSTNode], SiteKind], ...] = (
    (cst.BinaryOperation, SiteKind.BINARY_OPERATOR),
    (cst.AugAssign, SiteKind.AUGMENTED_ASSIGNMENT),
    (cst.ComparisonTarget, SiteKind.COMPARISON),
    (cst.BooleanOperation, SiteKind.BOOLEAN_OPERATOR),
    (cst.UnaryOperation, SiteKind.UNARY_OPERATOR),
    (cst.Integer, SiteKind.NUMBER),
    (cst.Float, SiteKind.NUMBER),
)


#: The fields of each node type that hold an expression whose value is read.
_LOAD_FIELDS: dict[type[cst.CSTNode], frozenset[str]] = {
    node_type: frozenset(fields)
    for node_type, fields in (
        (cst.Arg, ("value",)),
        (cst.Return, ("value",)),
        (cst.Assign, ("value",)),
        (cst.AnnAssign, ("value",)),
        (cst.AugAssign, ("value",)),
        (cst.Expr, ("value",)),
        (cst.BinaryOperation, ("left", "right")),
        (cst.UnaryOperation, ("expression",)),
        (cst.BooleanOperation, ("left", "right")),
        (cst.Comparison, ("left",)),
        (cst.ComparisonTarget, ("comparator",)),
        (cst.Call, ("func",)),
        (cst.Attribute, ("value",)),
        (cst.Subscript, ("value",)),
        (cst.Index, ("value",)),
        (cst.Slice, ("lower", "upper", "step")),
        (cst.If, ("test",)),
        (cst.While, ("test",)),
        (cst.IfExp, ("test", "body", "orelse")),
        (cst.Assert, ("test", "msg")),
        (cst.DictElement, ("key", "value")),
        (cst.For, ("iter",)),
        (cst.Raise, ("exc",)),
        (cst.WithItem, ("item",)),
    )
}
_CONTAINERS = (cst.List, cst.Tuple, cst.Set)
#: Expressions never offered as sites: replacing or wrapping them changes what the syntax allows.
_NOT_EXPRESSION_SITES = (cst.Yield, cst.Await, cst.NamedExpr, cst.Ellipsis)
#: Nodes with no expression site inside: an annotation or a decorator is no value the code
#: computes there, an f-string's fields take no copy with its quotes (before Python 3.12),
#: and a lambda's or comprehension's names live in a scope of their own.
_NO_EXPRESSIONS_INSIDE = (
    cst.Annotation,
    cst.Decorator,
    cst.FormattedStringExpression,
    cst.Lambda,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
    cst.GeneratorExp,
)


def _reads(node: cst.CSTNode, step: str, reading: bool) -> bool:
    """Does the child of `node` at `step` stand where a value is read? (`reading`: does `node`.)
    Node types are told by their concrete class: an isinstance of libcst's (ABC) classes is slow."""
    kind = type(node)
    if kind in _CONTAINERS:
        return reading and step.startswith("elements[")
    if kind is cst.Element:
        return reading and step == "value"
    fields = _LOAD_FIELDS.get(kind)
    return fields is not None and step.partition("[")[0] in fields


@dataclass
class _Scope:
    in_function: bool = False
    in_async_function: bool = False
    in_generator: bool = False
    in_loop: bool = False
    function: str = ""
    #: Names that functions nested in this one declare nonlocal: their bindings must stay.
    nonlocal_names: frozenset[str] = frozenset()
    #: The line of this function's last global/nonlocal declaration (0: none).
    declarations_end: int = 0


@dataclass(frozen=True, slots=True)
class _NodeType:
    """What the site collector needs to know of a node type, worked out once per type (many of
    libcst's base classes are ABCs, whose isinstance is slow on millions of nodes)."""

    statement: bool
    #: Whether a node of this type, where a value is read, is an expression site.
    expression: bool
    pattern: bool
    #: The operator and number site kinds of this type.
    kinds: tuple[SiteKind, ...]
    #: Whether nothing inside it is an expression site (`_NO_EXPRESSIONS_INSIDE`).
    seals: bool
    #: Whether its `body[i]` children are statements of a block (a module's, an indented block's).
    holds_statements: bool


_NODE_TYPE_FACTS: dict[type, _NodeType] = {}


def _node_type(node_type: type[cst.CSTNode]) -> _NodeType:
    known = _NODE_TYPE_FACTS.get(node_type)
    if known is None:
        known = _NODE_TYPE_FACTS[node_type] = _NodeType(
            statement=issubclass(node_type, cst.BaseStatement),
            expression=issubclass(node_type, cst.BaseExpression) and not issubclass(node_type, _NOT_EXPRESSION_SITES),
            pattern=issubclass(node_type, cst.MatchPattern),
            kinds=tuple(kind for kind_type, kind in _EXPRESSION_KINDS if issubclass(node_type, kind_type)),
            seals=issubclass(node_type, _NO_EXPRESSIONS_INSIDE),
            holds_statements=issubclass(node_type, (cst.Module, cst.IndentedBlock)),
        )
    return known


class _SiteCollector:
    """Walks one module, recording every site with its location and context."""

    def __init__(self, file: str, module: cst.Module) -> None:
        self.file = file
        self.module = module
        self.sites: list[Site] = []
        self.nodes: dict[Location, cst.CSTNode] = {}
        self._lines, self._ends = line_spans(module)
        self._facts = _gather_facts(module, self._lines)

    def collect(self) -> None:
        self._walk(self.module, "", _Scope(), in_body=False, reading=False)

    def _walk(
        self,
        node: cst.CSTNode,
        path: str,
        scope: _Scope,
        *,
        in_body: bool,
        reading: bool,
        pattern: bool = False,
        sealed: bool = False,
    ) -> None:
        node_type = _node_type(type(node))
        line = self._lines.get(id(node), 0)
        last = self._ends.get(id(node), line)
        if in_body and node_type.statement:
            needs = _requirements(node, self._facts.get(id(node), _NO_FACTS))
            context = dataclasses.replace(
                needs,
                in_function=scope.in_function,
                in_async_function=scope.in_async_function,
                in_generator=scope.in_generator,
                in_loop=scope.in_loop,
                fixed_position=_is_future_import(node) or line <= scope.declarations_end,
                removable=not (
                    scope.nonlocal_names
                    and any(
                        isinstance(inner, cst.Name) and inner.value in scope.nonlocal_names
                        for inner, _ in _own_scope(node)
                    )
                ),
            )
            self._add(Site(Location(self.file, path), SiteKind.STATEMENT, scope.function, line, context, last), node)
        if type(node) is cst.FunctionDef:
            self._add(Site(Location(self.file, path), SiteKind.FUNCTION, scope.function, line, last_line=last), node)
        # A `case` pattern is no expression: only its numbers may change (`case 1` to `case 2`).
        pattern = pattern or node_type.pattern
        for kind in node_type.kinds:
            if not pattern or kind is SiteKind.NUMBER:
                self._add(Site(Location(self.file, path), kind, scope.function, line, last_line=last), node)
        if reading and not sealed and node_type.expression:
            self._add(Site(Location(self.file, path), SiteKind.EXPRESSION, scope.function, line, last_line=last), node)
        # Nothing inside these is an expression site (nor is a parameter's default).
        inner_sealed = sealed or pattern or node_type.seals
        is_param = type(node) is cst.Param
        for step, child in _children(node):
            self._walk(
                child,
                _join(path, step),
                self._child_scope(node, step, scope),
                in_body=node_type.holds_statements and step.startswith("body["),
                reading=_reads(node, step, reading),
                pattern=pattern,
                sealed=inner_sealed or (is_param and step == "default"),
            )

    def _add(self, site: Site, node: cst.CSTNode) -> None:
        self.sites.append(site)
        self.nodes[site.location] = node

    def _child_scope(self, node: cst.CSTNode, step: str, scope: _Scope) -> _Scope:
        if step != "body":
            return scope
        if isinstance(node, cst.FunctionDef):
            name = f"{scope.function}.{node.name.value}" if scope.function else node.name.value
            body = self._facts.get(id(node.body), _NO_FACTS)
            return _Scope(
                in_function=True,
                in_async_function=node.asynchronous is not None,
                in_generator=bool(body.bits & _YIELDS),
                function=name,
                nonlocal_names=body.nonlocal_names,
                declarations_end=body.declarations_end,
            )
        if isinstance(node, cst.ClassDef):
            name = f"{scope.function}.{node.name.value}" if scope.function else node.name.value
            return _Scope(function=name)
        if type(node) in _LOOPS:
            return dataclasses.replace(scope, in_loop=True)
        return scope
