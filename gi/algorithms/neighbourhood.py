"""The neighbourhood search: the rings of the original program first, then NSGA-II.

PraPR evaluates every first-order mutant and ranks them by fault localisation; TBar tries
its fix templates in order of suspiciousness. This search does the same within a budget:
every one-edit program in order of the site's suspiciousness (repair) or hotness (speed)
times the operator's prior, each once, with pairs of its partial repairs (or best
improvements) as soon as they are found (gi/algorithms/rings.py). When the rings are
exhausted and generations are left, NSGA-II breeds from what they found.
"""

from __future__ import annotations

from gi.algorithms.nsga2 import NSGA2


class Neighbourhood(NSGA2):
    """The rings of the original until they are exhausted, then NSGA-II."""

    name = "neighbourhood"
    description = (
        "every one-edit program best first (suspicious or hot sites, then operators), each once, and pairs of"
        " partial repairs or improvements; NSGA-II from what they found once they are exhausted"
    )

    @property
    def neighbourhood_share(self) -> float:
        return 1.0
