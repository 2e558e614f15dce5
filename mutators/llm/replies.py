"""Reading a model's reply: the code it holds, checked, or the reason it cannot be used.

A rewrite or crossover reply is a fenced block (or bare code) holding the new function and,
above or below it, the imports, helper functions and classes it needs; a diff reply is
SEARCH/REPLACE blocks applied to the function as the model was shown it (gi.mutators.llm.diff);
a completion continues the function's `def` line. Each becomes `NewCode`, or a `RejectionError`
whose kind is counted and whose message goes back to the model in a retry.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import Literal

import libcst as cst

from gi.mutators.llm.diff import DiffError, apply_blocks, parse_blocks

FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL)

RejectionKind = Literal[
    "unparseable", "not_applied", "wrong_kind", "tampering", "no_op", "not_novel", "reviewer", "failed_tests"
]
#: What a rejection of each kind is counted as.
REJECTIONS: tuple[RejectionKind, ...] = (
    "unparseable", "not_applied", "wrong_kind", "tampering", "no_op", "not_novel", "reviewer", "failed_tests",
)  # fmt: skip


class RejectionError(Exception):
    """Why a reply gives no edit; the message is written for the model to read in a retry."""

    def __init__(self, kind: RejectionKind, message: str) -> None:
        super().__init__(message)
        self.kind: RejectionKind = kind


@dataclass(frozen=True)
class NewCode:
    """What a reply proposes: the function's new source and what it adds beside it."""

    function: str
    #: Import statements the file lacks, each one line.
    imports: tuple[str, ...] = ()
    #: Helper functions and classes, each a top-level definition the file lacks.
    definitions: tuple[str, ...] = ()


def extract_function(reply: str, name: str, def_line: str | None = None) -> str:
    """The code in a reply: the first fenced block defining `name`, else the reply itself.

    For a completion (`def_line` given: the `def ...:` line, maybe several) the reply
    continues the def line, and ends where the code returns to column 0.
    """
    if def_line is not None:
        lines = (def_line + reply).splitlines()
        head = def_line.count("\n") + 1
        kept = lines[:head]
        for line in lines[head:]:
            if line.strip() and not line[0].isspace():
                break
            kept.append(line)
        return textwrap.dedent("\n".join(kept)).strip() + "\n"
    blocks = FENCE.findall(reply) or [reply]
    chosen = next((block for block in blocks if re.search(rf"\bdef {re.escape(name)}\b", block)), blocks[0])
    return textwrap.dedent(chosen).strip() + "\n"


def apply_diff(reply: str, code: str) -> str:
    """The function's code with the reply's SEARCH/REPLACE blocks applied."""
    try:
        return apply_blocks(code, parse_blocks(reply))[0]
    except DiffError as error:
        kind: RejectionKind = "unparseable" if "lacks its" in str(error) or "no SEARCH" in str(error) else "not_applied"
        raise RejectionError(kind, str(error)) from None


def _defined_name(statement: cst.CSTNode) -> str | None:
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        return statement.name.value
    return None


def _is_import(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def read_code(source: str, name: str, *, module: cst.Module, is_async: bool = False) -> NewCode:
    """Split `source` into the new version of function `name` and what it adds beside it;
    `module` is the file as the variant has it (what it already imports and defines)."""
    try:
        reply = cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        message = f"the code does not parse: {error.message} (line {error.raw_line})"
        raise RejectionError("unparseable", message) from None
    present_imports = {module.code_for_node(s).strip() for s in module.body if _is_import(s)}
    present_names = {found for s in module.body if (found := _defined_name(s)) is not None}
    function: cst.FunctionDef | None = None
    imports: list[str] = []
    definitions: list[str] = []
    for statement in reply.body:
        defined = _defined_name(statement)
        if isinstance(statement, cst.FunctionDef) and defined == name:
            if function is not None:
                raise RejectionError("wrong_kind", f"the code defines `{name}` twice; give one version of it")
            function = statement
        elif _is_import(statement):
            text = reply.code_for_node(statement.with_changes(leading_lines=())).strip()
            if text not in present_imports:
                imports.append(text)
        elif defined is not None:
            if defined in present_names:
                raise RejectionError(
                    "wrong_kind",
                    f"`{defined}` is already defined in the file; change only `{name}`, and give a helper a new name",
                )
            definitions.append(reply.code_for_node(statement.with_changes(leading_lines=())).strip() + "\n")
        else:
            first = reply.code_for_node(statement).strip().splitlines()[0]
            raise RejectionError(
                "wrong_kind",
                f"`{first}` stands beside the function; only imports, helper functions and classes may",
            )
    if function is None:
        raise RejectionError("wrong_kind", f"the code defines no function `{name}`; keep the function's name")
    if (function.asynchronous is not None) != is_async:
        raise RejectionError("wrong_kind", f"`{name}` must stay {'async ' if is_async else 'a plain '}function")
    text = reply.code_for_node(function.with_changes(leading_lines=())).strip() + "\n"
    return NewCode(text, tuple(dict.fromkeys(imports)), tuple(definitions))
