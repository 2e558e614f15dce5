"""Populations: individuals, NSGA-II selection (on DEAP), the Pareto archive and the MAP-Elites grid."""

from gi.populations.archive import ParetoArchive, hypervolume
from gi.populations.grid import DominationInsertion, Grid, Insertion
from gi.populations.individual import Individual, ParetoFitness
from gi.populations.selection import crowded_tournament, nsga2_survivors, rank_and_crowd

__all__ = [
    "DominationInsertion",
    "Grid",
    "Individual",
    "Insertion",
    "ParetoArchive",
    "ParetoFitness",
    "crowded_tournament",
    "hypervolume",
    "nsga2_survivors",
    "rank_and_crowd",
]
