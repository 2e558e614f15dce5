"""Mutation operators and crossover: everything that proposes edits to a patch.

Importing this package registers every operator; `OPERATORS` and `CROSSOVERS` hold them.
"""

from mutators import control, expressions, names, statements, templates
from mutators.base import OPERATORS, Feedback, MutationContext, Operator, choose_site, register
from mutators.crossover import CROSSOVERS, Crossover

__all__ = [
    "CROSSOVERS",
    "OPERATORS",
    "Crossover",
    "Feedback",
    "MutationContext",
    "Operator",
    "choose_site",
    "control",
    "expressions",
    "names",
    "register",
    "statements",
    "templates",
]
