"""Where a model's new version of a function differs from the original: statement by statement.

A diff (or a rewrite) that changes two lines of a forty-line function should not become one
edit that replaces the function: crossover could not mix it with other edits, minimisation
could not keep one of its changes without the other, and classic operators could no longer
reach the lines it left alone. `local_changes` aligns the original function's statements with
the new version's, block by block (difflib on their headers, descending into compound
statements whose header is unchanged), and says what changed at which original statement:
deleted, written anew, or new statements put before one or after the last of a block. It gives
None when the change is not local: the function's own header changed (name, parameters,
decorators), every statement of its body changed, or more than `limit` changes were needed.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import libcst as cst

from gi.model.program import Program
from gi.model.sites import Location, SiteKind

#: Changes beyond which a new version counts as a rewrite of the whole function.
LIMIT = 4


@dataclass(frozen=True)
class Change:
    """One change at an original statement: `delete` it, `write` `source` in its place, `insert`
    `source` before it, or `append` `source` after it (the last statement of its block)."""

    action: Literal["delete", "write", "insert", "append"]
    target: Location
    source: str = ""


def _code(module: cst.Module, node: cst.CSTNode) -> str:
    if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        node = node.with_changes(leading_lines=())
    return module.code_for_node(node)


_PASS = cst.IndentedBlock(body=[cst.SimpleStatementLine([cst.Pass()])])


def _hollow(node: cst.CSTNode) -> cst.CSTNode:
    """A compound statement with each of its blocks emptied to `pass`: its header lines (the
    `if`, `elif`, `else:`, `except` and `finally:` lines) and nothing else."""
    changes: dict[str, object] = {}
    if isinstance(getattr(node, "body", None), cst.BaseSuite):
        changes["body"] = _PASS
    for name in ("orelse", "finalbody"):
        value = getattr(node, name, None)
        if isinstance(value, cst.CSTNode):
            changes[name] = _hollow(value)
    handlers = getattr(node, "handlers", None)
    if handlers:
        changes["handlers"] = [_hollow(handler) for handler in handlers]
    return node.with_changes(**changes) if changes else node


def _blocks(node: cst.CSTNode) -> list[tuple[str, cst.BaseSuite]]:
    """The statement blocks of a compound statement, each with its path from the statement."""
    found: list[tuple[str, cst.BaseSuite]] = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(node, name, None)
        if isinstance(value, cst.BaseSuite):
            found.append((f"{name}", value))
        elif isinstance(value, (cst.Else, cst.Finally)):
            found.append((f"{name}.body", value.body))
        elif isinstance(value, cst.If):  # elif: its own blocks, further down the same path
            found.extend((f"{name}.{path}", block) for path, block in _blocks(value))
    for index, handler in enumerate(getattr(node, "handlers", ()) or ()):
        found.append((f"handlers[{index}].body", handler.body))
    return found


class _Aligner:
    def __init__(self, program: Program, module: cst.Module, new_module: cst.Module, limit: int) -> None:
        self.program = program
        self.module = module
        self.new_module = new_module
        self.limit = limit
        self.changes: list[Change] = []
        self.statements = {id(program.node(s.location)): s.location for s in program.sites_of(SiteKind.STATEMENT)}

    def block(self, old: Sequence[cst.CSTNode], new: Sequence[cst.CSTNode]) -> bool:
        """Align two blocks of statements by their headers (a simple statement's header is
        itself); False when the change is not local."""
        found = [self.statements.get(id(statement)) for statement in old]
        locations = [location for location in found if location is not None]
        if not old or len(locations) != len(old):
            return False
        headers = [_code(self.module, _hollow(s)) for s in old]
        new_headers = [_code(self.new_module, _hollow(s)) for s in new]
        new_code = [_code(self.new_module, s) for s in new]
        matcher = difflib.SequenceMatcher(None, headers, new_headers, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            written = "".join(new_code[j1:j2])
            if tag == "equal":
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                    if _code(self.module, old[i]) != new_code[j] and not self._inside(old[i], new[j]):
                        self.changes.append(Change("write", locations[i], new_code[j]))
            elif tag == "delete":
                self.changes.extend(Change("delete", location) for location in locations[i1:i2])
            elif tag == "insert" and i1 < len(old):
                self.changes.append(Change("insert", locations[i1], written))
            elif tag == "insert":
                self.changes.append(Change("append", locations[-1], written))
            else:
                self.changes.append(Change("write", locations[i1], written))
                self.changes.extend(Change("delete", location) for location in locations[i1 + 1 : i2])
            if len(self.changes) > self.limit:
                return False
        return True

    def _inside(self, old: cst.CSTNode, new: cst.CSTNode) -> bool:
        """Whether two compound statements share their header, and align their blocks if so."""
        if type(old) is not type(new) or not isinstance(old, cst.BaseCompoundStatement):
            return False
        if isinstance(old, (cst.FunctionDef, cst.ClassDef)):
            return False  # a nested definition changed: written anew as a whole
        old_blocks, new_blocks = _blocks(old), _blocks(new)
        if [path for path, _ in old_blocks] != [path for path, _ in new_blocks]:
            return False
        if _code(self.module, _hollow(old)) != _code(self.new_module, _hollow(new)):
            return False
        before = len(self.changes)
        for (_, old_block), (_, new_block) in zip(old_blocks, new_blocks, strict=True):
            if not (
                isinstance(old_block, cst.IndentedBlock)
                and isinstance(new_block, cst.IndentedBlock)
                and self.block(old_block.body, new_block.body)
            ):
                del self.changes[before:]
                return False
        return True


def local_changes(program: Program, location: Location, source: str, limit: int = LIMIT) -> list[Change] | None:
    """The statement changes that turn the original function at `location` into `source` (one
    function), or None when the change is not local."""
    original = program.node(location)
    assert isinstance(original, cst.FunctionDef)
    module = program.modules[location.file]
    new_module = cst.parse_module(source)
    new = new_module.body[0]
    if not isinstance(new, cst.FunctionDef) or not isinstance(original.body, cst.IndentedBlock):
        return None
    if not isinstance(new.body, cst.IndentedBlock):
        return None
    if _code(module, _hollow(original)) != _code(new_module, _hollow(new)):
        return None  # the name, parameters, annotations or decorators changed
    aligner = _Aligner(program, module, new_module, limit)
    if not aligner.block(original.body.body, new.body.body) or not aligner.changes:
        return None
    touched = {change.target for change in aligner.changes if change.action in ("write", "delete")}
    if all(any(t.contains(aligner.statements[id(s)]) for t in touched) for s in original.body.body):
        return None  # every statement of the body changed: a rewrite of the whole function
    return aligner.changes
