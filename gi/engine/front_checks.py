"""What the summary adds about the front beyond each member's own entry: members whose extra
edits ride along on timing noise, and the plausible patches of a repair ranked against
overfitting.

Both read a finished search's store and services; neither steers the search.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gi.engine.held_out import HeldOut
from gi.engine.oracle import Oracle
from gi.engine.store import RunStore
from gi.engine.timing import OriginalTiming, riders
from gi.fitness.objectives import Objective
from gi.fitness.outcomes import test_counts
from gi.fitness.size import diff_lines, tokens_changed
from gi.fitness.tests import NOT_FAILING
from gi.model.describe import describe
from gi.model.patch import Patch, Variant, apply
from gi.model.plausible import Ranked, rank
from gi.model.program import Program
from gi.model.results import Evaluation, Status

#: Plausible patches summary.json lists (the first ranked), and those whose held-out tests it runs (the first ranked).
PLAUSIBLE_LISTED = 20
PLAUSIBLE_HELD_OUT = 3


def without_riders(
    front: list[dict[str, Any]], objectives: Sequence[Objective], timing: OriginalTiming, program: Program
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """With a timed objective: the front without the members whose extra edits ride along on
    timing noise (`gi.engine.timing.riders`: not significantly faster, side by side, than a
    member whose patch is part of theirs, and no better on any other objective), and those
    members, each with the one it does no better than."""
    if not timing.active:
        return front, []
    variants: list[Variant] = [entry["variant"] for entry in front]
    timed = {objective.name for objective in objectives if objective.name == "runtime"}

    def faster(i: int, j: int) -> bool:
        if not variants[j].changed_files:
            verdict = front[i].get("speedup") or {}
        else:
            verdict = timing.speedup_over(variants[j], variants[i])
        if "error" in verdict:
            return True  # not measured: no reason to drop it
        return bool(verdict.get("significant")) and float(verdict.get("value", 0)) > 1

    def better_elsewhere(i: int, j: int) -> bool:
        mine, theirs = front[i]["objectives"], front[j]["objectives"]
        return any(
            objective.minimised(mine[objective.name]) < objective.minimised(theirs[objective.name])
            for objective in objectives
            if objective.name not in timed and objective.name in mine and objective.name in theirs
        )

    found = riders([variant.patch for variant in variants], faster, better_elsewhere)
    riding = [
        {
            "id": front[i]["member"].id,
            "edits": [describe(edit, program) for edit in variants[i].patch.edits],
            "no_better_than": "original" if not variants[j].changed_files else front[j]["member"].id,
        }
        for i, j in sorted(found.items())
    ]
    return [entry for index, entry in enumerate(front) if index not in found], riding


def plausible_patches(
    program: Program,
    store: RunStore,
    held_out: HeldOut | None,
    baseline: Evaluation,
    suspicious: Mapping[tuple[str, int], float],
    confirm: Callable[[Sequence[Variant]], Sequence[Evaluation]] | None = None,
    oracle: Oracle | None = None,
) -> list[dict[str, Any]]:
    """When repairing: the programs the search found that pass every training test, each by the
    patch that first made it without the edits that took no effect, ranked against overfitting
    (gi.model.plausible: fewest anti-patterns, smallest diff, fewest edits, fewest tokens
    changed, the most suspicious line edited by `suspicious`, first found); the first
    PLAUSIBLE_LISTED ranked, the first of them checked on the held-out tests and by the
    behaviour `oracle` if there is one. A program whose evaluation ran only the tests selected
    by coverage is listed once every training test passed on it (`confirm`: the evaluation
    service's; without it, it is not listed)."""
    if not baseline.measures.get("failed_tests"):
        return []
    tests = baseline.measures.get("test_count")

    def passes(evaluation: Mapping[str, Any]) -> bool:
        measures = evaluation["measures"]
        ok = evaluation["status"] == Status.OK.value
        return bool(ok and measures.get("failed_tests") == 0 and measures.get("test_count") == tests)

    found: list[str] = []
    partial: set[str] = set()
    for _, individual, _, evaluation in store.evaluation_log():
        if individual != "baseline" and passes(evaluation):
            found.append(individual)
            if evaluation.get("partial"):
                partial.add(individual)
    variants = {}
    for record in store.individuals(found):
        variant = apply(program, Patch.from_json(record.patch))
        variants[record.id] = apply(program, variant.minimal())
    sizes = []
    for i in found:
        edited = {file: variants[i].sources[file] for file in variants[i].changed_files}
        sizes.append((variants[i].patch, int(diff_lines(variants[i].diff())), tokens_changed(program.sources, edited)))
    by_patch = {variants[i].patch: i for i in reversed(found)}
    ranked: list[Ranked] = []
    for entry in rank(program, sizes, suspicious):
        if len(ranked) >= PLAUSIBLE_LISTED:
            break
        unconfirmed = by_patch[entry.patch] in partial
        if unconfirmed and (confirm is None or not passes(confirm([apply(program, entry.patch)])[0].to_json())):
            continue
        ranked.append(entry)
    checked = [apply(program, entry.patch) for entry in ranked[:PLAUSIBLE_HELD_OUT]]
    held = held_out.outcomes(checked) if held_out is not None else []
    behaviours = oracle.check(checked) if oracle is not None else {}
    listed = []
    for place, entry in enumerate(ranked):
        row: dict[str, Any] = {
            "id": by_patch[entry.patch],
            "edits": [describe(edit, program) for edit in entry.patch.edits],
            "anti_patterns": list(entry.anti_patterns),
            "diff_lines": entry.diff_lines,
            "tokens": entry.tokens,
            "suspiciousness": round(entry.suspiciousness, 4),
        }
        if place < len(held):
            row["holdout"] = {**test_counts(held[place]), "failing": sorted(
                test for test, outcome in held[place].items() if outcome not in NOT_FAILING
            )}  # fmt: skip
        if place < len(checked) and checked[place].tree_hash in behaviours:
            row["behaviour"] = behaviours[checked[place].tree_hash].to_json()
        listed.append(row)
    return listed
