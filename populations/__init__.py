"""Populations: individuals, NSGA-II selection (on DEAP), and the Pareto archive."""

from gi.populations.archive import ParetoArchive, hypervolume
from gi.populations.individual import Individual, ParetoFitness
from gi.populations.selection import crowded_tournament, nsga2_survivors, rank_and_crowd

__all__ = [
    "Individual",
    "ParetoArchive",
    "ParetoFitness",
    "crowded_tournament",
    "hypervolume",
    "nsga2_survivors",
    "rank_and_crowd",
]
