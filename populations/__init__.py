"""Populations: individuals, NSGA-II selection (on DEAP), the Pareto archive, and the run store."""

from populations.archive import ParetoArchive, hypervolume
from populations.individual import Individual, ParetoFitness
from populations.selection import crowded_tournament, nsga2_survivors, rank_and_crowd
from populations.store import Checkpoint, IndividualRecord, RunStore

__all__ = [
    "Checkpoint",
    "Individual",
    "IndividualRecord",
    "ParetoArchive",
    "ParetoFitness",
    "RunStore",
    "crowded_tournament",
    "hypervolume",
    "nsga2_survivors",
    "rank_and_crowd",
]
