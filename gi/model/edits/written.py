"""Edits that carry code a language model wrote, at the sites its change touches.

A model's new version of a function becomes, where the change is local, edits at the original
statements it changed (gi.mutators.llm.local): a statement written anew, statements put before
one or after the last of a block; and what the reply adds beside the function becomes edits
of their own kinds: an import, a helper function or class. Each is an edit like any other, so
crossover mixes them, minimisation and ablation weigh them one by one, and classic operators
still reach every statement the model left alone. Each carries its source and, for the record,
the model, the mode that asked for it, a hash of the prompt and (on one edit of a reply) the
tokens the reply cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from gi.model.edits.base import Edit, RewritePlan
from gi.model.edits.paths import _in_place_of, _statement
from gi.model.edits.words import quote, quoted
from gi.model.errors import EditError
from gi.model.program import Program
from gi.model.sites import Location


def parse_statements(source: str) -> list[cst.BaseStatement]:
    """The statements of `source` (raises EditError when it does not parse or holds none)."""
    try:
        body: list[cst.BaseStatement] = list(cst.parse_module(source).body)
    except cst.ParserSyntaxError as error:
        raise EditError(f"the new code does not parse: {error.message}") from None
    if not body:
        raise EditError("the new code holds no statement")
    return body


@dataclass(frozen=True, slots=True)
class WrittenCode(Edit):
    """Base of the edits that carry new code: its source and where it came from."""

    source: str
    model: str = ""
    prompt_hash: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    mode: str = ""

    def __post_init__(self) -> None:
        self.statements()

    def statements(self) -> list[cst.BaseStatement]:
        return parse_statements(self.source)

    def by(self) -> str:
        return f" by {self.model}" if self.model else " by the language model"


@dataclass(frozen=True, slots=True)
class WriteStatement(WrittenCode):
    """Put new code (one statement or several) in place of a statement."""

    kind: ClassVar[str] = "write_statement"

    def removes(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        *first, last = self.statements()
        if first:
            first[0] = _in_place_of(_statement(program, self.target), first[0])
        else:
            last = _in_place_of(_statement(program, self.target), last)
        for statement in first:
            plan.insert_before(self.target, statement)
        plan.replace(self.target, last)

    def words(self, program: Program) -> str:
        return f"{quote(program, self.target)} becomes {quoted(self.source)}{self.by()}"


@dataclass(frozen=True, slots=True)
class _PutBeside(WrittenCode):
    """New code put beside a statement (`target`): it may be gone, its block may not."""

    def anchors(self) -> tuple[Location, ...]:
        return ()

    def positions(self) -> tuple[Location, ...]:
        return (self.target,)


@dataclass(frozen=True, slots=True)
class InsertCode(_PutBeside):
    """Put new statements before a statement."""

    kind: ClassVar[str] = "insert_code"

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        for statement in self.statements():
            plan.insert_before(self.target, statement)

    def words(self, program: Program) -> str:
        return f"insert {quoted(self.source)} before {quote(program, self.target)}{self.by()}"


@dataclass(frozen=True, slots=True)
class AppendCode(_PutBeside):
    """Put new statements after a statement (the last of its block)."""

    kind: ClassVar[str] = "append_code"

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        for statement in self.statements():
            plan.insert_after(self.target, statement)

    def words(self, program: Program) -> str:
        return f"insert {quoted(self.source)} after {quote(program, self.target)}{self.by()}"


def _is_import(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


@dataclass(frozen=True, slots=True)
class AddImport(_PutBeside):
    """Add an import to a file, before the module-level statement `target` (the first after
    the docstring and `from __future__` imports)."""

    kind: ClassVar[str] = "add_import"

    def __post_init__(self) -> None:
        statements = self.statements()
        if not all(_is_import(statement) for statement in statements):
            raise EditError(f"an added import holds only imports: {self.source.strip()!r}")
        if "__future__" in self.source:
            raise EditError("a `from __future__` import cannot be added after other code")

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        first, *rest = self.statements()
        plan.insert_before(self.target, _in_place_of(_statement(program, self.target), first))
        for statement in rest:
            plan.insert_before(self.target, statement)

    def words(self, program: Program) -> str:
        return f"add {quoted(self.source)}{self.by()}"


@dataclass(frozen=True, slots=True)
class AddDefinition(_PutBeside):
    """Add a helper function or class to a file, before the module-level statement `target`
    (the one that holds the function whose new version needs it)."""

    kind: ClassVar[str] = "add_definition"

    def __post_init__(self) -> None:
        statements = self.statements()
        if len(statements) != 1 or not isinstance(statements[0], (cst.FunctionDef, cst.ClassDef)):
            raise EditError(f"an added definition is one function or class: {self.source.strip()[:60]!r}")

    @property
    def name(self) -> str:
        definition = self.statements()[0]
        assert isinstance(definition, (cst.FunctionDef, cst.ClassDef))
        return definition.name.value

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        [definition] = self.statements()
        assert isinstance(definition, (cst.FunctionDef, cst.ClassDef))
        two_blank_lines = [cst.EmptyLine(), cst.EmptyLine()] if self.target.path.count(".") == 0 else []
        plan.insert_before(self.target, definition.with_changes(leading_lines=two_blank_lines))

    def words(self, program: Program) -> str:
        [definition] = self.statements()
        what = f"class {self.name}" if isinstance(definition, cst.ClassDef) else f"helper {self.name}()"
        return f"add {what}{self.by()}"
