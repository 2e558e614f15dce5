"""The edit base: `Edit` (plain data, JSON round trip, registered by kind) and the
`RewritePlan` through which an edit says how it changes the tree."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import libcst as cst

from gi.model.errors import EditError
from gi.model.program import Program
from gi.model.sites import Location


class RewritePlan(Protocol):
    """What an edit may ask of `apply`; locations are sites of the original program."""

    def delete(self, target: Location) -> None: ...

    def insert_before(self, target: Location, statement: cst.BaseStatement) -> None: ...

    def insert_after(self, target: Location, statement: cst.BaseStatement) -> None: ...

    def replace(self, target: Location, statement: cst.BaseStatement) -> None: ...

    def rewrite(self, target: Location, change: Callable[[cst.CSTNode], cst.CSTNode]) -> None: ...


EDIT_KINDS: dict[str, type[Edit]] = {}


@dataclass(frozen=True, slots=True)
class Edit:
    """Base of all edits. Subclasses set `kind` and implement `contribute`.

    `removes()` names the subtrees whose original content the edit takes away (they block
    later edits inside them and void earlier ones); `rewrites()` names nodes rewritten in
    place, where the last rewrite wins; `supersedes()` names subtrees the edit writes anew
    whole, so that it takes effect even where an earlier edit removed exactly that subtree
    (a function rewritten again).
    """

    kind: ClassVar[str] = ""
    #: True for the edits of the classic operators, which only move, copy or recombine what the
    #: original program already has (statements and expressions by location, its names, an
    #: operator, a number): they reach nothing the original does not. The tamper guard judges
    #: the code of every other edit, a language model's, against the original's; an edit whose
    #: text a model chooses must keep this False.
    recombines: ClassVar[bool] = False
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

    def supersedes(self) -> tuple[Location, ...]:
        return ()

    def ingredients(self) -> tuple[Location, ...]:
        """Original statements the edit copies from."""
        return ()

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement contribute")

    def describe(self) -> str:
        """A one-line account for diffs and reports."""
        return f"{self.kind} at {self.target}"

    def words(self, program: Program) -> str:
        """What the edit does at its site, for a person, quoting the original source
        (`gi.model.describe.describe` puts file:line before it). Every edit class says its own;
        one that does not (a new operator's, or a subclass, which may change what its parent
        does) reads as its kind and the source of the site it edits."""
        from gi.model.edits.words import generic_words  # the words import the edit classes' base

        return generic_words(self, program)

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
