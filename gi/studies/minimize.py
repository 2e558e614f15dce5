"""Patch minimisation: the fewest edits of a front member that keep what it achieves.

Two named passes, each counting its evaluations, in the manner of a shrinker:

    ddmin      delta debugging (Zeller and Hildebrandt): try the patch's chunks and their
               complements at ever finer granularity, keep the first that keeps the member's
               objective values
    one-edit   remove single edits while one can go; the result is 1-minimal: removing any
               one of its edits changes an objective value (or the constraint's verdict)

"Keeps" means: the same constraint violation, and every objective value equal but the
patch's own size (`size`, `diff_lines`: lowering them is the point) and runtime. Runtime is
compared like with like: a smaller patch's screening ratio against the member's own, both
measured by the minimisation itself against the original timed again for it (never the search's
screening of the same program, taken at another time, nor the rigorous re-measurement, with
another spread). It keeps the member's speed when it is at most RUNTIME_TOLERANCE slower, or
as much slower as two screening measurements can differ by noise alone when that is more
(`runtime_tolerance`, from how far the original's own screening timings spread over the run),
and in any case closer to the member's ratio than to the original's (`runtime_limit`); a
faster one keeps it too (the edit it drops was costing time).
Before minimising, the member's own evaluation must keep its values; when it does not, the
result says so (`kept_itself` false) and the patch is left whole. Each round's patches are
evaluated as one batch, in parallel, through the run's evaluator and cache.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gi.engine.run_folder import PATCH_DIR, update_summary
from gi.model.describe import describe_patch
from gi.model.patch import Patch
from gi.studies.rerun import FinishedRun

T = TypeVar("T")

#: Objectives minimisation may change: the patch's own size is what it lowers.
PATCH_SIZE = frozenset({"size", "diff_lines"})
#: How much slower than the member's screening ratio a smaller patch's may be and still keep its
#: speed, at least: screening timings (a few processes, other evaluations running beside them)
#: vary by several percent from one measurement to the next, more on a busy machine.
RUNTIME_TOLERANCE = 0.1
#: The label minimisation's evaluations carry in the run store.
LABEL = "minimize"

#: Tells, for each candidate list of items, whether it keeps what the whole list achieves.
Judge = Callable[[Sequence[tuple[T, ...]]], list[bool]]


@dataclass(frozen=True)
class Kept:
    """What a smaller patch must keep of a member's scores; `runtime_limit` is the slowest
    screening ratio that keeps the member's speed (None: runtime must be equal, as any value)."""

    names: tuple[str, ...]
    values: tuple[float, ...]
    violation: float
    runtime_limit: float | None = None

    def __call__(self, values: Sequence[float], violation: float) -> bool:
        if violation != self.violation:
            return False
        for name, wanted, value in zip(self.names, self.values, values, strict=True):
            if name in PATCH_SIZE:
                continue
            if name == "runtime" and self.runtime_limit is not None:
                if not value <= self.runtime_limit:  # a NaN ratio keeps nothing
                    return False
            elif value != wanted:
                return False
        return True


def runtime_tolerance(timings: Iterable[Sequence[float]]) -> float:
    """How much slower than the member's screening ratio a smaller patch's may be, given the
    original's screening timings of the run (each generation's process means): the spread s of
    those means (slowest over fastest, less one) is how far one screening measurement of a
    program can be off, so the ratio of two can differ by (1 + s)^2 - 1 from noise alone; at
    least RUNTIME_TOLERANCE."""
    means = [float(mean) for timing in timings for mean in timing]
    if len(means) < 2 or min(means) <= 0:
        return RUNTIME_TOLERANCE
    spread = max(means) / min(means) - 1
    return max(RUNTIME_TOLERANCE, (1 + spread) ** 2 - 1)


def runtime_limit(runtime: float, tolerance: float) -> float:
    """The slowest screening ratio that keeps a member's speed: `tolerance` above its own, and,
    for a member faster than the original (whose ratio is 1), closer to its ratio than to the
    original's (below their geometric mean): however noisy the screening, a patch that is as
    slow as the original does not keep a speed-up."""
    limit = runtime * (1 + tolerance)
    if 0 < runtime < 1:
        limit = min(limit, math.sqrt(runtime))
    return limit


@dataclass
class Passes:
    """Evaluations each pass asked for (cache hits included)."""

    counts: dict[str, int] = field(default_factory=lambda: {"ddmin": 0, "one_edit": 0})


def _chunks(items: tuple[T, ...], n: int) -> list[tuple[T, ...]]:
    """`items` in `n` nearly equal, consecutive chunks."""
    size, extra = divmod(len(items), n)
    chunks, start = [], 0
    for index in range(n):
        end = start + size + (index < extra)
        chunks.append(items[start:end])
        start = end
    return chunks


def ddmin(items: tuple[T, ...], keeps: Judge[T], passes: Passes) -> tuple[T, ...]:
    """Delta debugging: a sublist of `items` (order kept) that still keeps, found by trying
    chunks, then their complements, at doubling granularity."""
    passes.counts["ddmin"] += 1
    if keeps([()])[0]:
        return ()
    n = 2
    while len(items) >= 2:
        chunks = _chunks(items, n)
        complements = [tuple(x for j, chunk in enumerate(chunks) if j != i for x in chunk) for i in range(n)]
        tried = chunks + (complements if n > 2 else [])
        passes.counts["ddmin"] += len(tried)
        verdicts = keeps(tried)
        if any(verdicts[:n]):
            items, n = chunks[verdicts.index(True)], 2
        elif any(verdicts[n:]):
            items, n = complements[verdicts[n:].index(True)], max(n - 1, 2)
        elif n >= len(items):
            break
        else:
            n = min(len(items), 2 * n)
    return items


def one_edit_removals(items: tuple[T, ...], keeps: Judge[T], passes: Passes) -> tuple[T, ...]:
    """Remove one item at a time while the rest keeps; the result is 1-minimal."""
    while items:
        tried = [items[:i] + items[i + 1 :] for i in range(len(items))]
        passes.counts["one_edit"] += len(tried)
        verdicts = keeps(tried)
        if not any(verdicts):
            break
        items = tried[verdicts.index(True)]
    return items


def minimize_patch(run: FinishedRun, patch: Patch, kept: Kept) -> tuple[Patch, Passes, bool]:
    """The patch reduced by ddmin, then single-edit removals, keeping `kept`; and whether the
    whole patch keeps `kept` at all (when it does not, nothing is removed: no smaller patch can
    be judged against values the member itself does not reach)."""
    passes = Passes()

    def keeps(subsets: Sequence[tuple[Any, ...]]) -> list[bool]:
        results = run.evaluate([Patch(tuple(subset)) for subset in subsets], LABEL)
        return [kept(*run.scores(evaluation)) for _, evaluation in results]

    if not keeps([patch.edits])[0]:
        return patch, passes, False
    edits = ddmin(patch.edits, keeps, passes)
    edits = one_edit_removals(edits, keeps, passes)
    return Patch(edits), passes, True


def kept_of(run: FinishedRun, patch: Patch) -> Kept:
    """What the member's patch achieves, as its scores in this run: its objective values (its
    screening runtime ratio among them) and constraint violation."""
    [(_, evaluation)] = run.evaluate([patch], LABEL)
    values, broken = run.scores(evaluation)
    scores = dict(zip(run.names, values, strict=True))
    limit = None
    if "runtime" in scores:
        timings = run.experiment.store.measurements("timing:").values()
        tolerance = runtime_tolerance(timing["process_means"] for timing in timings if "process_means" in timing)
        limit = runtime_limit(scores["runtime"], tolerance)
    return Kept(run.names, values, broken, limit)


#: What `minimal` says of a member whose own evaluation does not keep its values.
NOT_KEPT = (
    "not minimised: the member's own evaluation does not keep its objective values (a constraint"
    " violation or a value that is not a number), so no smaller patch can be judged against them"
)


def minimize_front(run: FinishedRun, member_id: str | None = None) -> dict[str, dict[str, Any]]:
    """Minimise the front's members (or one), store the results with the run, write
    patches/<id>.min.diff and the `minimal` entry of each member in summary.json."""
    done: dict[str, dict[str, Any]] = run.experiment.store.get_meta("minimised") or {}
    diffs: dict[str, str] = {}
    for member in run.members(member_id):
        patch = run.patch(member)
        kept = kept_of(run, patch)
        smaller, passes, kept_itself = minimize_patch(run, patch, kept)
        [(variant, evaluation)] = run.evaluate([smaller], LABEL)
        values, _ = run.scores(evaluation)
        diff = variant.diff()
        done[member["id"]] = {
            "edits": smaller.to_json(),
            "descriptions": describe_patch(smaller, run.program),
            "objectives": dict(zip(run.names, values, strict=True)),
            "diff": f"{PATCH_DIR}/{member['id']}.min.diff" if diff else None,
            "removed": len(patch) - len(smaller),
            "evaluations": passes.counts,
            "kept_itself": kept_itself,
            **({} if kept_itself else {"why": NOT_KEPT}),
            **({"runtime_limit": round(kept.runtime_limit, 6)} if kept.runtime_limit is not None else {}),
            "of_edits": patch.to_json(),
        }
        diffs[member["id"]] = diff
    run.experiment.store.set_meta("minimised", done)
    summary = run.summary
    for member in summary["front"]:
        if member["id"] in done and done[member["id"]]["of_edits"] == member["edits"]:
            member["minimal"] = {key: value for key, value in done[member["id"]].items() if key != "of_edits"}
    update_summary(run.folder, summary, {f"{member}.min.diff": diff for member, diff in diffs.items() if diff})
    return {member: done[member] for member in diffs}
