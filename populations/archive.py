"""The Pareto archive: the non-dominated variants of a whole run, and its hypervolume."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import moocore
import numpy as np
from deap import tools

from gi.populations.individual import Individual


class ParetoArchive:
    """Keeps the first front of every individual seen: one per program, one per objective vector."""

    def __init__(self, members: Iterable[Individual] = ()) -> None:
        self.members: list[Individual] = list(members)

    def update(self, candidates: Iterable[Individual]) -> None:
        """Merge `candidates`, keep the non-dominated ones, and of equal scores the earliest found."""
        pool: dict[str, Individual] = {member.tree_hash: member for member in self.members}
        for candidate in candidates:
            if not candidate.fitness.valid:
                continue
            kept = pool.setdefault(candidate.tree_hash, candidate)
            # One program, two patches: the shorter (or otherwise better-scoring) patch stands for it.
            if kept is not candidate and candidate.fitness.dominates(kept.fitness):
                pool[candidate.tree_hash] = candidate
        if not pool:
            return
        front: list[Individual] = tools.sortNondominated(list(pool.values()), len(pool), first_front_only=True)[0]
        order = {member.tree_hash: index for index, member in enumerate(pool.values())}
        members: list[Individual] = []
        for member in sorted(front, key=lambda member: order[member.tree_hash]):
            # Of several programs that score the same, the earliest found stands for them.
            if all(member.fitness != kept.fitness for kept in members):
                members.append(member)
        self.members = members

    def feasible(self) -> list[Individual]:
        return [member for member in self.members if member.fitness.feasible]

    def hypervolume(self, reference: Sequence[float], directions: Sequence[float]) -> float:
        """Hypervolume of the feasible members, in minimised form, against `reference`.

        `directions` holds the DEAP weights (-1 minimise, +1 maximise) of the objectives.
        """
        return hypervolume(
            [member.objectives for member in self.feasible() if member.objectives is not None],
            reference,
            directions,
        )


def hypervolume(points: Sequence[Sequence[float]], reference: Sequence[float], directions: Sequence[float]) -> float:
    """Hypervolume (moocore) of objective vectors given in their own directions."""
    signs = np.array([-1.0 if weight > 0 else 1.0 for weight in directions])
    ref = np.asarray(reference, dtype=float)
    if not points:
        return 0.0
    minimised = np.asarray(points, dtype=float) * signs
    inside = minimised[np.all(minimised < ref, axis=1)]
    if len(inside) == 0:
        return 0.0
    return float(moocore.hypervolume(inside, ref=ref))
