"""The search as ask/tell, by name: `ALGORITHMS` and `make_search`.

The algorithms live in gi/algorithms/ (one small class each over the shared `Search`
interface), variation in gi/variation.py, survival and the archive in populations/. This
module is where the engine picks one by the config's `search.algorithm`; it also keeps the
names older code imports from here.
"""

from __future__ import annotations

from gi.algorithms import ALGORITHMS, NSGA2, NSGA3, SPEA2, LocalSearch, RandomSearch, Search, SearchSettings
from gi.variation import BREEDING_TRIES, LLM_MARGIN, MUTATION_TRIES, Candidate, operator_of_label

__all__ = [
    "ALGORITHMS",
    "BREEDING_TRIES",
    "LLM_MARGIN",
    "MUTATION_TRIES",
    "NSGA2",
    "NSGA3",
    "SPEA2",
    "Candidate",
    "LocalSearch",
    "RandomSearch",
    "Search",
    "SearchSettings",
    "operator_of_label",
]
