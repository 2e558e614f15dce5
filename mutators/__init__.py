"""Mutation operators and crossover: everything that proposes edits to a patch.

Importing this package registers every operator; `OPERATORS` and `CROSSOVERS` hold them, and
`CONFIGURED` the factories of operators built from a config section of their own (the model's,
which `mutators.llm` registers).
"""

from gi.mutators import (
    control,
    expressions,
    llm,
    names,
    statements,
    templates,
)
from gi.mutators.base import (
    CONFIGURED,
    OPERATORS,
    BaseOperator,
    Feedback,
    MutationContext,
    Operator,
    OperatorUsage,
    choose_site,
    register,
)
from gi.mutators.crossover import CROSSOVERS, Crossover

__all__ = [
    "CONFIGURED",
    "CROSSOVERS",
    "OPERATORS",
    "BaseOperator",
    "Crossover",
    "Feedback",
    "MutationContext",
    "Operator",
    "OperatorUsage",
    "choose_site",
    "control",
    "expressions",
    "llm",
    "names",
    "register",
    "statements",
    "templates",
]
