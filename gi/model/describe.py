"""Edits in words a person reads: file:line and what changes, quoting the original source.

`describe(edit, program)` turns an edit, which names sites by syntax-tree paths, into a line
such as `grading.py:23 delete "if score < 0: raise ..."`. It knows the edit classes of
`gi.model.edits`; any other edit class (a new operator's) gets file:line, its kind and the source of
the site it touches, so every edit reads as something.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from gi.model.edits import (
    AddCheck,
    Clamp,
    DeleteStatement,
    Edit,
    ExtendCondition,
    InsertControl,
    InsertGuard,
    InsertStatement,
    KeepOperand,
    MoveStatement,
    Negate,
    OffsetExpression,
    RemoveUnary,
    ReplaceExpression,
    ReplaceFunction,
    ReplaceName,
    ReplaceNumber,
    ReplaceOperator,
    ReplaceStatement,
    SwapArguments,
    SwapStatements,
    operator_node,
    operator_of,
)
from gi.model.errors import EditError
from gi.model.patch import Patch
from gi.model.program import Program
from gi.model.sites import Location, SiteKind

#: The longest quote of source in a description; longer code is cut and ends in "...".
QUOTE_LENGTH = 40


def line_of(program: Program, location: Location) -> int | None:
    """The first line of the original node at a site, or None for a location that is no site."""
    for kind in SiteKind:
        site = program.site(location, kind)
        if site is not None:
            return site.line
    return None


def where(program: Program, location: Location) -> str:
    """`file:line`, or `file:path` when the location is no site of the program."""
    line = line_of(program, location)
    return f"{location.file}:{line}" if line is not None else str(location)


def quote(program: Program, location: Location, *, length: int = QUOTE_LENGTH) -> str:
    """The original source at a site on one line, cut to `length` characters, in quotes."""
    try:
        code = program.code(location)
    except KeyError:
        return "(no such site)"
    return _quoted(code, length)


def _quoted(code: str, length: int = QUOTE_LENGTH) -> str:
    """Source on one line, inline comments left out, cut to `length`, in quotes it does not hold."""
    stripped = (line.split("  #")[0].strip() for line in code.strip().splitlines())
    lines = [line for line in stripped if line and not line.startswith("#")]
    text = " ".join(lines[:2]) if lines else ""
    cut = len(lines) > 2 or len(text) > length
    if len(text) > length:
        text = text[: length - 3].rstrip()
    text += " ..." if cut else ""
    mark = '"' if '"' not in text else "'" if "'" not in text else "`"
    return f"{mark}{text}{mark}"


def _source_line(program: Program, location: Location) -> str:
    """The original line a site starts on, quoted: the context of an operator or a number,
    whose own source says little."""
    line = line_of(program, location)
    if line is None:
        return quote(program, location)
    text = program.sources[location.file].splitlines()[line - 1]
    return _quoted(text)


def _line(program: Program, location: Location) -> str:
    """`line 30`, or `file.py:30` when the location is in another file than the edit's target."""
    line = line_of(program, location)
    return f"line {line}" if line is not None else str(location)


def _other(program: Program, edit: Edit, location: Location) -> str:
    if location.file != edit.target.file:
        return where(program, location)
    return _line(program, location)


def _operator_text(program: Program, location: Location) -> str:
    node = program.node(location)
    return program.modules[location.file].code_for_node(operator_of(node)).strip()


def _new_operator_text(name: str) -> str:
    return cst.Module(body=()).code_for_node(operator_node(name)).strip()


def _delete(edit: DeleteStatement, program: Program) -> str:
    return f"delete {quote(program, edit.target)}"


def _insert(edit: InsertStatement, program: Program) -> str:
    return (
        f"insert a copy of {quote(program, edit.ingredient)} ({_other(program, edit, edit.ingredient)}) "
        f"before {quote(program, edit.target)}"
    )


def _replace(edit: ReplaceStatement, program: Program) -> str:
    return (
        f"replace {quote(program, edit.target)} with a copy of {quote(program, edit.ingredient)} "
        f"({_other(program, edit, edit.ingredient)})"
    )


def _swap(edit: SwapStatements, program: Program) -> str:
    return f"swap {quote(program, edit.target)} with {quote(program, edit.other)} ({_other(program, edit, edit.other)})"


def _move(edit: MoveStatement, program: Program) -> str:
    return (
        f"move {quote(program, edit.target)} before {quote(program, edit.destination)} "
        f"({_other(program, edit, edit.destination)})"
    )


def _control(edit: InsertControl, program: Program) -> str:
    return f"insert {edit.keyword} before {quote(program, edit.target)}"


def _operator(edit: ReplaceOperator, program: Program) -> str:
    old, new = _operator_text(program, edit.target), _new_operator_text(edit.operator)
    return f"{old} becomes {new} in {_source_line(program, edit.target)}"


def _unary(edit: RemoveUnary, program: Program) -> str:
    node = program.node(edit.target)
    assert isinstance(node, cst.UnaryOperation)
    inner = program.modules[edit.target.file].code_for_node(node.expression)
    return f"{quote(program, edit.target)} becomes {_quoted(inner)} in {_source_line(program, edit.target)}"


def _number(edit: ReplaceNumber, program: Program) -> str:
    old = program.modules[edit.target.file].code_for_node(program.node(edit.target)).strip()
    return f"{old} becomes {edit.value} in {_source_line(program, edit.target)}"


def _function(edit: ReplaceFunction, program: Program) -> str:
    node = program.node(edit.target)
    name = node.name.value if isinstance(node, cst.FunctionDef) else str(edit.target)
    by = f" by {edit.model}" if edit.model else " by the language model"
    return f"rewrite function {name}(){by}"


class _Rewritten:
    """A `RewritePlan` that keeps what one expression edit asks for, so its wording can quote
    the expression as the edit makes it (exactly as `apply` would print it)."""

    def __init__(self) -> None:
        self.changes: list[Callable[[cst.CSTNode], cst.CSTNode]] = []
        self.inserted: list[cst.BaseStatement] = []

    def delete(self, target: Location) -> None:
        raise EditError("an expression edit deletes no statement")

    def insert_before(self, target: Location, statement: cst.BaseStatement) -> None:
        self.inserted.append(statement)

    def replace(self, target: Location, statement: cst.BaseStatement) -> None:
        raise EditError("an expression edit replaces no statement")

    def rewrite(self, target: Location, change: Callable[[cst.CSTNode], cst.CSTNode]) -> None:
        self.changes.append(change)


def _new_code(edit: Edit, program: Program) -> str:
    """The source of the expression at the edit's target after the edit, on its own."""
    plan = _Rewritten()
    edit.contribute(plan, program)
    node = program.node(edit.target)
    for change in plan.changes:
        node = change(node)
    return program.modules[edit.target.file].code_for_node(node)


def _becomes(edit: Edit, program: Program) -> str:
    """`"old" becomes "new" in "<line>"`: an expression and what the edit makes of it."""
    text = f"{quote(program, edit.target)} becomes {_quoted(_new_code(edit, program))}"
    line = _source_line(program, edit.target)
    return text if line == quote(program, edit.target) else f"{text} in {line}"


def _name(edit: ReplaceName, program: Program) -> str:
    old = program.node(edit.target)
    assert isinstance(old, cst.Name)
    return f"{old.value} becomes {edit.name} in {_source_line(program, edit.target)}"


def _arguments(edit: SwapArguments, program: Program) -> str:
    call = program.node(edit.target)
    assert isinstance(call, cst.Call)
    which = "the arguments" if len(call.args) == 2 else f"arguments {edit.first + 1} and {edit.second + 1}"
    return f"swap {which} of {quote(program, edit.target)}"


def _expression(edit: ReplaceExpression, program: Program) -> str:
    return f"{_becomes(edit, program)} (a copy from {_other(program, edit, edit.ingredient)})"


def _clamp(edit: Clamp, program: Program) -> str:
    if edit.function == "max":
        shape = f"max({edit.bound}, ...)"
    elif edit.function == "min":
        shape = f"min(..., {edit.bound})"
    else:
        shape = "abs(...)"
    return f"wrap {quote(program, edit.target)} in {shape}"


def _keep(edit: KeepOperand, program: Program) -> str:
    kept = Location(edit.target.file, f"{edit.target.path}.{edit.side}")
    return f"keep {quote(program, kept)} of {quote(program, edit.target)}"


def _extend(edit: ExtendCondition, program: Program) -> str:
    return f"{_becomes(edit, program)} (a copy from {_other(program, edit, edit.ingredient)})"


def _guard(edit: InsertGuard, program: Program) -> str:
    guard = cst.Module(body=[edit.statement()]).code
    return f"insert {_quoted(guard)} before {quote(program, edit.target)}"


def _generic(edit: Edit, program: Program) -> str:
    """Any edit class without its own wording: its kind and the source of the site it edits,
    and for a part of a statement, the line it stands on."""
    kind = (edit.kind or type(edit).__name__).replace("_", " ")
    text = f"{kind} at {quote(program, edit.target)}"
    if not isinstance(program.node(edit.target), cst.BaseStatement):
        line = _source_line(program, edit.target)
        if line != quote(program, edit.target):
            text += f" in {line}"
    return text


#: The wording of each edit class of gi.model.edits (each function takes that class).
_WORDINGS: dict[type[Edit], Callable[..., str]] = {
    DeleteStatement: _delete,
    InsertStatement: _insert,
    ReplaceStatement: _replace,
    SwapStatements: _swap,
    MoveStatement: _move,
    InsertControl: _control,
    ReplaceOperator: _operator,
    RemoveUnary: _unary,
    ReplaceNumber: _number,
    ReplaceFunction: _function,
    ReplaceName: _name,
    SwapArguments: _arguments,
    ReplaceExpression: _expression,
    OffsetExpression: _becomes,
    Negate: _becomes,
    Clamp: _clamp,
    KeepOperand: _keep,
    ExtendCondition: _extend,
    AddCheck: _becomes,
    InsertGuard: _guard,
}


def describe(edit: Edit, program: Program) -> str:
    """One line for a person: `file:line` of the edit's site, then what the edit does there,
    quoting the original source. Exact classes only: a subclass of a known edit may change
    what it does, so it gets the generic wording."""
    wording = _WORDINGS.get(type(edit), _generic)
    try:
        text = wording(edit, program)
    except (KeyError, AssertionError, AttributeError, EditError):
        # A location that is no site of this program: say what is known without the source.
        text = f"{(edit.kind or type(edit).__name__).replace('_', ' ')} at {edit.target.path}"
    return f"{where(program, edit.target)} {text}"


def describe_patch(patch: Patch, program: Program) -> list[str]:
    """One line per edit of a patch, in order."""
    return [describe(edit, program) for edit in patch.edits]
