"""Patches (the genome), and `apply`: a pure function from program and patch to a variant.

`apply` resolves every edit against the *original* trees, then rewrites each touched file
in one libcst pass, so formatting and comments outside the edited nodes survive byte for
byte. An edit whose site an earlier edit removed is a no-op; an edit whose work a later
edit removes or overwrites has no effect either. The variant records which edits took
effect: they are what the patch-size objective counts.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import libcst as cst

from gi.model.edits import Edit, path_nodes
from gi.model.errors import EditError
from gi.model.program import Program, compile_quietly, normalised_dump, tree_hash
from gi.model.sites import Location


@dataclass(frozen=True, slots=True)
class Patch:
    """An ordered tuple of edits against the original program."""

    edits: tuple[Edit, ...] = ()

    def __len__(self) -> int:
        return len(self.edits)

    def __iter__(self) -> Iterator[Edit]:
        return iter(self.edits)

    def __add__(self, other: Patch) -> Patch:
        return Patch(self.edits + other.edits)

    def appended(self, edit: Edit) -> Patch:
        return Patch((*self.edits, edit))

    def to_json(self) -> list[dict[str, Any]]:
        return [edit.to_json() for edit in self.edits]

    @classmethod
    def from_json(cls, data: Any) -> Patch:
        if not isinstance(data, list):
            raise EditError(f"a patch is a JSON list of edits, got {type(data).__name__}")
        return cls(tuple(Edit.from_json(item) for item in data))

    def key(self) -> str:
        """A content hash of the patch, used as its identity in the run store."""
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def check(self, program: Program) -> None:
        """Raise EditError if an edit names a location that is no site of `program`."""
        for edit in self.edits:
            for location in (*edit.anchors(), *edit.positions(), *edit.ingredients()):
                if not program.has_site(location):
                    raise EditError(f"{edit.describe()}: {location} is no site of the program")


@dataclass
class _StatementAction:
    before: list[cst.BaseStatement] = field(default_factory=list)
    deleted: bool = False
    replacement: cst.BaseStatement | None = None


class _Plan:
    """Collects what the effective edits ask for, keyed by original node, file by file."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.statements: dict[str, dict[cst.CSTNode, _StatementAction]] = {}
        self.rewrites: dict[str, dict[cst.CSTNode, Callable[[cst.CSTNode], cst.CSTNode]]] = {}
        #: The paths of the nodes changed in each file.
        self.targets: dict[str, set[str]] = {}

    def _action(self, target: Location) -> _StatementAction:
        self.targets.setdefault(target.file, set()).add(target.path)
        node = self.program.node(target)
        return self.statements.setdefault(target.file, {}).setdefault(node, _StatementAction())

    def delete(self, target: Location) -> None:
        action = self._action(target)
        action.deleted, action.replacement = True, None

    def insert_before(self, target: Location, statement: cst.BaseStatement) -> None:
        self._action(target).before.append(statement)

    def replace(self, target: Location, statement: cst.BaseStatement) -> None:
        self._action(target).replacement = statement

    def rewrite(self, target: Location, change: Callable[[cst.CSTNode], cst.CSTNode]) -> None:
        self.targets.setdefault(target.file, set()).add(target.path)
        self.rewrites.setdefault(target.file, {})[self.program.node(target)] = change

    def files(self) -> set[str]:
        return set(self.statements) | set(self.rewrites)

    def on_paths(self, file: str) -> set[cst.CSTNode]:
        """The changed nodes of `file` and every node above them: the only ones a rewrite visits."""
        return {node for path in self.targets.get(file, ()) for node in path_nodes(self.program, Location(file, path))}


class _Rewriter(cst.CSTTransformer):
    """One pass over a file that carries out the plan at the original nodes. It descends only
    into the nodes on the way to a change (`on_paths`): the rest of the tree is kept as it is,
    which on a large module is most of the time an apply takes."""

    def __init__(
        self,
        statements: dict[cst.CSTNode, _StatementAction],
        rewrites: dict[cst.CSTNode, Callable[[cst.CSTNode], cst.CSTNode]],
        on_paths: set[cst.CSTNode] | None = None,
    ) -> None:
        super().__init__()
        self.statements = statements
        self.rewrites = rewrites
        self.on_paths = on_paths

    def on_visit(self, node: cst.CSTNode) -> bool:
        return self.on_paths is None or node in self.on_paths

    def on_leave(  # type: ignore[override]
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]:
        change = self.rewrites.get(original_node)
        if change is not None:
            updated_node = change(updated_node)
        action = self.statements.get(original_node)
        if action is not None:
            kept: list[cst.CSTNode] = list(action.before)
            if not action.deleted:
                kept.append(action.replacement if action.replacement is not None else updated_node)
            if not kept:
                return cst.RemovalSentinel.REMOVE
            return kept[0] if len(kept) == 1 else cst.FlattenSentinel(kept)
        if isinstance(updated_node, cst.IndentedBlock) and not updated_node.body:
            return updated_node.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        return updated_node


def _blocked(location: Location, removed: Location, *, position: bool) -> bool:
    """Is `location` gone with the subtree `removed`? A position survives its own removal."""
    return removed.contains(location, strictly=position)


def effective_edits(patch: Patch) -> tuple[bool, ...]:
    """Which edits of `patch` change the program, following the rules in the module doc."""
    edits = patch.edits
    effective = [True] * len(edits)
    removed: list[tuple[int, Location]] = []
    for index, edit in enumerate(edits):
        if (
            any(_blocked(anchor, gone, position=False) for anchor in edit.anchors() for _, gone in removed)
            or any(_blocked(pos, gone, position=True) for pos in edit.positions() for _, gone in removed)
            or any(_blocked(target, gone, position=False) for target in edit.rewrites() for _, gone in removed)
        ):
            effective[index] = False
            continue
        removed.extend((index, location) for location in edit.removes())
    for index, edit in enumerate(edits):
        if not effective[index]:
            continue
        later_removals = [gone for by, gone in removed if by > index]
        later_rewrites = {
            target for by in range(index + 1, len(edits)) if effective[by] for target in edits[by].rewrites()
        }
        own_removals = set(edit.removes())
        voided = any(
            _blocked(location, gone, position=False)
            for location in (*edit.anchors(), *edit.rewrites())
            for gone in later_removals
        ) or any(
            _blocked(location, gone, position=True)
            for location in edit.positions()
            for gone in later_removals
            if location not in own_removals
        )
        if voided or any(target in later_rewrites for target in edit.rewrites()):
            effective[index] = False
    return tuple(effective)


def apply(program: Program, patch: Patch, *, whole_tree: bool = False) -> Variant:
    """Apply `patch` to `program` and return the variant; the program is not changed.
    `whole_tree` visits every node rather than only those on the way to a change (the same
    result, slower: the reference the tests compare with)."""
    effective = effective_edits(patch)
    plan = _Plan(program)
    for edit, takes_effect in zip(patch.edits, effective, strict=True):
        if takes_effect:
            edit.contribute(plan, program)
    sources = dict(program.sources)
    for file in sorted(plan.files()):
        rewriter = _Rewriter(
            plan.statements.get(file, {}), plan.rewrites.get(file, {}), None if whole_tree else plan.on_paths(file)
        )
        sources[file] = program.modules[file].visit(rewriter).code
    return Variant(program=program, patch=patch, sources=sources, effective=effective)


@dataclass(frozen=True)
class Variant:
    """A program with a patch applied: its sources, what took effect, its diff and tree hash."""

    program: Program
    patch: Patch
    sources: dict[str, str]
    effective: tuple[bool, ...]

    @property
    def changed_files(self) -> list[str]:
        return [f for f in self.program.files if self.sources[f] != self.program.sources[f]]

    @property
    def effective_size(self) -> int:
        return sum(self.effective)

    @cached_property
    def syntax_error(self) -> str | None:
        """The first compile error of an edited file as 'file:line: message', or None."""
        for file in self.changed_files:
            try:
                compile_quietly(self.sources[file], file)
            except SyntaxError as error:
                return f"{file}:{error.lineno}: {error.msg}"
        return None

    @cached_property
    def tree_hash(self) -> str:
        """Hash of the normalised trees; the program's own hash when nothing changed."""
        dumps = {}
        for file in self.program.files:
            source = self.sources[file]
            if source == self.program.sources[file]:
                dumps[file] = self.program.normalised(file)
                continue
            try:
                dumps[file] = normalised_dump(source, file)
            except SyntaxError:
                dumps[file] = "unparseable:" + source
        return tree_hash(dumps)

    def diff(self) -> str:
        """A unified diff against the original that `git apply` and `patch -p1` accept."""
        return unified_diff(self.program.sources, self.sources, self.changed_files)

    def minimal(self) -> Patch:
        """The patch without the edits that took no effect (it makes the same program)."""
        return Patch(tuple(e for e, took in zip(self.patch.edits, self.effective, strict=True) if took))


def unified_diff(before: Mapping[str, str], after: Mapping[str, str], files: Sequence[str]) -> str:
    """Unified diff of `files`, with a/ b/ prefixes and the no-newline marker where needed."""
    chunks: list[str] = []
    for file in files:
        lines = difflib.unified_diff(
            before[file].splitlines(keepends=True),
            after[file].splitlines(keepends=True),
            fromfile=f"a/{file}",
            tofile=f"b/{file}",
        )
        for line in lines:
            chunks.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(chunks)
