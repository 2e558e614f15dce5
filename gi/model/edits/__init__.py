"""Edits: atomic, frozen, hashable changes at sites of the original program.

Every edit is plain data (locations, operator names, source text) and round-trips through
JSON. How an edit changes the tree is said through a small `RewritePlan` interface that
`gi.model.patch.apply` implements, so the kinds of edit stay in one place and `apply` stays one
generic pass over each file. The kinds live in this package's modules by what they touch
(statements, operators, expressions, the fix templates); importing the package registers
them all (`EDIT_KINDS`), so `Edit.from_json` knows every kind.
"""

from __future__ import annotations

from gi.model.edits.base import EDIT_KINDS, Edit, RewritePlan
from gi.model.edits.expressions import Negate, OffsetExpression, ReplaceExpression, ReplaceName, SwapArguments
from gi.model.edits.operators import (
    RemoveUnary,
    ReplaceNumber,
    ReplaceOperator,
    number_node,
    operator_node,
    operator_of,
)
from gi.model.edits.paths import fitted, node_at, parent_of, path_nodes
from gi.model.edits.statements import (
    ControlKeyword,
    DeleteStatement,
    InsertControl,
    InsertStatement,
    MoveStatement,
    ReplaceFunction,
    ReplaceStatement,
    SwapStatements,
    parse_function,
)
from gi.model.edits.templates import (
    BOOLEAN_SIDES,
    CLAMPS,
    GUARD_ACTIONS,
    AddCheck,
    Clamp,
    ExtendCondition,
    InsertGuard,
    KeepOperand,
)

__all__ = [
    "BOOLEAN_SIDES",
    "CLAMPS",
    "EDIT_KINDS",
    "GUARD_ACTIONS",
    "AddCheck",
    "Clamp",
    "ControlKeyword",
    "DeleteStatement",
    "Edit",
    "ExtendCondition",
    "InsertControl",
    "InsertGuard",
    "InsertStatement",
    "KeepOperand",
    "MoveStatement",
    "Negate",
    "OffsetExpression",
    "RemoveUnary",
    "ReplaceExpression",
    "ReplaceFunction",
    "ReplaceName",
    "ReplaceNumber",
    "ReplaceOperator",
    "ReplaceStatement",
    "RewritePlan",
    "SwapArguments",
    "SwapStatements",
    "fitted",
    "node_at",
    "number_node",
    "operator_node",
    "operator_of",
    "parent_of",
    "parse_function",
    "path_nodes",
]
