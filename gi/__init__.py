"""gi: genetic improvement of Python programs.

The model (layer 1) is importable from here: `Program`, `Location`, the edits, `Patch`,
`apply` and `Variant`, the result types and the errors. The engine (loop, evaluator,
config, command line) lives in the other modules of this package.
"""

from gi.model.edits import (
    DeleteStatement,
    Edit,
    InsertControl,
    InsertStatement,
    MoveStatement,
    RemoveUnary,
    ReplaceFunction,
    ReplaceNumber,
    ReplaceOperator,
    ReplaceStatement,
    SwapStatements,
)
from gi.model.errors import ConfigError, EditError, GIError, ProgramError, RegistryError, StoreError
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.model.results import Evaluation, ProcessOutcome, Status
from gi.model.sites import Location, Site, SiteKind

__all__ = [
    "ConfigError",
    "DeleteStatement",
    "Edit",
    "EditError",
    "Evaluation",
    "GIError",
    "InsertControl",
    "InsertStatement",
    "Location",
    "MoveStatement",
    "Patch",
    "ProcessOutcome",
    "Program",
    "ProgramError",
    "RegistryError",
    "RemoveUnary",
    "ReplaceFunction",
    "ReplaceNumber",
    "ReplaceOperator",
    "ReplaceStatement",
    "Site",
    "SiteKind",
    "Status",
    "StoreError",
    "SwapStatements",
    "Variant",
    "apply",
]
