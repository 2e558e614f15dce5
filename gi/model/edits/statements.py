"""Edits of statements and functions: delete, insert, replace, swap, move, insert a control
statement, replace a function's source."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal

import libcst as cst

from gi.model.edits.base import Edit, RewritePlan
from gi.model.edits.paths import _copy, _in_place_of, _statement
from gi.model.edits.words import other_place, quote
from gi.model.errors import EditError
from gi.model.program import Program
from gi.model.sites import Location

# --- statements ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeleteStatement(Edit):
    """Remove a statement (an emptied block gets `pass`)."""

    kind: ClassVar[str] = "delete_statement"
    recombines: ClassVar[bool] = True

    def removes(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        plan.delete(self.target)

    def words(self, program: Program) -> str:
        return f"delete {quote(program, self.target)}"


@dataclass(frozen=True, slots=True)
class InsertStatement(Edit):
    """Insert a copy of another original statement (`ingredient`) before `target`."""

    kind: ClassVar[str] = "insert_statement"
    recombines: ClassVar[bool] = True
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

    def words(self, program: Program) -> str:
        return (
            f"insert a copy of {quote(program, self.ingredient)} ({other_place(program, self, self.ingredient)}) "
            f"before {quote(program, self.target)}"
        )


@dataclass(frozen=True, slots=True)
class ReplaceStatement(Edit):
    """Replace a statement with a copy of another original statement."""

    kind: ClassVar[str] = "replace_statement"
    recombines: ClassVar[bool] = True
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

    def words(self, program: Program) -> str:
        return (
            f"replace {quote(program, self.target)} with a copy of {quote(program, self.ingredient)} "
            f"({other_place(program, self, self.ingredient)})"
        )


@dataclass(frozen=True, slots=True)
class SwapStatements(Edit):
    """Exchange two statements, neither inside the other."""

    kind: ClassVar[str] = "swap_statements"
    recombines: ClassVar[bool] = True
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

    def words(self, program: Program) -> str:
        where = other_place(program, self, self.other)
        return f"swap {quote(program, self.target)} with {quote(program, self.other)} ({where})"


@dataclass(frozen=True, slots=True)
class MoveStatement(Edit):
    """Move a statement so that it stands before `destination`."""

    kind: ClassVar[str] = "move_statement"
    recombines: ClassVar[bool] = True
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

    def words(self, program: Program) -> str:
        return (
            f"move {quote(program, self.target)} before {quote(program, self.destination)} "
            f"({other_place(program, self, self.destination)})"
        )


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
    recombines: ClassVar[bool] = True
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

    def words(self, program: Program) -> str:
        return f"insert {self.keyword} before {quote(program, self.target)}"


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
    """Replace a whole function with new source, as a language model wrote it (or a classic
    operator edited a rewritten one: `model` names it then).

    The edit carries everything needed to apply it again without the model: the source,
    and for the record the model's name, the mode that asked for it, a hash of the prompt
    and the tokens it cost. A later rewrite of the same function supersedes it.
    """

    kind: ClassVar[str] = "replace_function"
    source: str
    model: str = ""
    prompt_hash: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    mode: str = ""

    def __post_init__(self) -> None:
        parse_function(self.source)

    def removes(self) -> tuple[Location, ...]:
        return (self.target,)

    def supersedes(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        target = program.node(self.target)
        assert isinstance(target, cst.FunctionDef)
        new = parse_function(self.source)
        plan.replace(self.target, new.with_changes(leading_lines=target.leading_lines))

    def describe(self) -> str:
        return f"rewrite the function at {self.target} ({self.model or 'language model'})"

    def words(self, program: Program) -> str:
        node = program.node(self.target)
        name = node.name.value if isinstance(node, cst.FunctionDef) else str(self.target)
        if self.mode == "classic":  # a classic operator's edit inside a function the model rewrote
            return f"edit the rewritten function {name}() with {self.model}"
        by = f" by {self.model}" if self.model else " by the language model"
        return f"rewrite function {name}(){by}"
