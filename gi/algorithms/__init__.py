"""The search algorithms, each an ask/tell `Search` over patches (see gi/algorithms/base.py).

Variation (gi/algorithms/variation.py) and survival and archive pieces (populations/) are shared; each
algorithm is a small class that says how it picks parents or neighbours and what survives.
"""

from gi.algorithms.base import Evolutionary, Search, SearchSettings
from gi.algorithms.islands import Islands
from gi.algorithms.local_search import LocalSearch
from gi.algorithms.map_elites import MapElites
from gi.algorithms.neighbourhood import Neighbourhood
from gi.algorithms.nsga2 import NSGA2
from gi.algorithms.nsga3 import NSGA3
from gi.algorithms.random_search import RandomSearch
from gi.algorithms.spea2 import SPEA2
from gi.model.registry import Registry


def _installed_algorithm(name: str, item: object) -> type[Search]:
    """An installed package's algorithm (entry point `gi.algorithms`): a subclass of Search named
    as its entry point; ValueError says what is wrong with it."""
    if not (isinstance(item, type) and issubclass(item, Search)):
        raise ValueError("not an algorithm: give a subclass of gi.algorithms.Search (or Evolutionary)")
    if getattr(item, "name", None) != name:
        raise ValueError(f"the algorithm's name is {getattr(item, 'name', None)!r}, not {name!r}")
    return item


#: Every algorithm a config can name in `search.algorithm`: gi's, and those installed packages
#: declare in the entry-point group `gi.algorithms`.
ALGORITHMS: Registry[type[Search]] = Registry("algorithm", "gi.algorithms", _installed_algorithm, classes=True)
for _algorithm in (NSGA2, NSGA3, SPEA2, Neighbourhood, LocalSearch, RandomSearch, MapElites, Islands):
    ALGORITHMS.add(_algorithm.name, _algorithm)

__all__ = [
    "ALGORITHMS",
    "NSGA2",
    "NSGA3",
    "SPEA2",
    "Evolutionary",
    "Islands",
    "LocalSearch",
    "MapElites",
    "Neighbourhood",
    "RandomSearch",
    "Search",
    "SearchSettings",
]
