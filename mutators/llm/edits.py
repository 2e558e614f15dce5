"""The edits an accepted proposal makes to a patch: its imports and helpers, each an edit of
its own kind, and the function's change as statement edits where it is local, else a rewrite."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import libcst as cst

from gi.model.edits import (
    AddDefinition,
    AddImport,
    AppendCode,
    DeleteStatement,
    Edit,
    InsertCode,
    ReplaceFunction,
    WriteStatement,
    WrittenCode,
)
from gi.model.errors import EditError
from gi.model.patch import Patch
from gi.model.program import Program
from gi.model.sites import Location
from gi.mutators.llm.chain import same_tree
from gi.mutators.llm.local import Change, local_changes
from gi.mutators.llm.proposals import Made, Proposal

#: The function at a location as the program a patch makes has it (None if gone).
VersionOf = Callable[[Program, Patch, Location], "str | None"]


def proposal_edits(program: Program, patch: Patch, proposal: Proposal, version_of: VersionOf) -> list[Edit]:
    """The edits `proposal` makes to `patch`: its imports and helpers, each an edit of its own,
    then the function's change as statement edits where it is local (checked: with them the
    patch makes exactly the proposed function), else as a rewrite of the whole function. The
    reply's tokens are carried by the first edit of written code; [] when none can be made."""
    site, code = proposal.site, proposal.code
    origin: dict[str, Any] = {"model": proposal.model, "prompt_hash": proposal.prompt_hash, "mode": proposal.mode}
    try:
        added: list[Edit] = [AddImport(_import_position(program, site.file), line, **origin)
                             for line in code.imports]  # fmt: skip
        top = Location(site.file, site.path.split(".")[0])
        added += [AddDefinition(top, definition, **origin) for definition in code.definitions]
        function = _function_edits(program, Patch((*patch.edits, *added)), proposal, origin, version_of)
    except EditError:
        return []
    made = [*added, *function]
    carrier = next((i for i, edit in enumerate(made) if isinstance(edit, WrittenCode | ReplaceFunction)), None)
    if carrier is not None:  # (a change that only deletes statements carries no code)
        made[carrier] = _with_tokens(made[carrier], proposal.prompt_tokens, proposal.completion_tokens)
    return made


def _with_tokens(edit: Edit, prompt_tokens: int, completion_tokens: int) -> Edit:
    """The edit carrying what its reply cost (an edit of model-written code)."""
    assert isinstance(edit, WrittenCode | ReplaceFunction)
    return dataclasses.replace(edit, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


def one_rewrite(edits: Sequence[Edit], made: Made) -> ReplaceFunction | None:
    """A proposal's statement edits as one rewrite of the function (its new version), for a
    caller that takes one edit; None when the proposal adds imports or helpers."""
    if not all(isinstance(edit, WrittenCode | DeleteStatement) for edit in edits) or any(
        isinstance(edit, AddImport | AddDefinition) for edit in edits
    ):
        return None
    carrier = next(edit for edit in edits if isinstance(edit, WrittenCode))
    return ReplaceFunction(
        made.site, made.version, model=made.model, mode=made.mode,
        prompt_tokens=carrier.prompt_tokens, completion_tokens=carrier.completion_tokens,
    )  # fmt: skip


def _function_edits(
    program: Program, patch: Patch, proposal: Proposal, origin: dict[str, Any], version_of: VersionOf
) -> list[Edit]:
    """The edits that give the function its new version after `patch`."""
    site, source = proposal.site, proposal.code.function
    current = version_of(program, patch, site)
    if current is not None and same_tree(current, source):
        return []  # only imports or helpers changed
    changes = local_changes(program, site, source)
    if changes:
        local = [_change_edit(change, origin) for change in changes]
        made = version_of(program, Patch((*patch.edits, *local)), site)
        if made is not None and same_tree(made, source):
            return local
    return [ReplaceFunction(site, source, **origin)]


def _change_edit(change: Change, origin: dict[str, Any]) -> Edit:
    """The edit that makes one local change, carrying where the code came from."""
    if change.action == "delete":
        return DeleteStatement(change.target)
    kind = {"write": WriteStatement, "insert": InsertCode, "append": AppendCode}[change.action]
    return kind(change.target, change.source, **origin)


def _import_position(program: Program, file: str) -> Location:
    """Where an added import goes: before the file's first statement that is neither its
    docstring nor a `from __future__` import."""
    body = program.modules[file].body
    for index, statement in enumerate(body):
        if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
            small = statement.body[0]
            if index == 0 and isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString):
                continue
            module = small.module if isinstance(small, cst.ImportFrom) else None
            if isinstance(module, cst.Name) and module.value == "__future__":
                continue
        return Location(file, f"body[{index}]")
    raise EditError(f"{file} has no statement an import could go before")
