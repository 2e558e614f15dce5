"""Patch minimisation: the fewest edits of a front member that keep what it achieves.

Two named passes, each counting its evaluations, in the manner of a shrinker:

    ddmin      delta debugging (Zeller and Hildebrandt): try the patch's chunks and their
               complements at ever finer granularity, keep the first that keeps the member's
               objective values
    one-edit   remove single edits while one can go; the result is 1-minimal: removing any
               one of its edits changes an objective value (or the constraint's verdict)

"Keeps" means: the same constraint violation, and every objective value equal but the
patch's own size (`size`, `diff_lines`: lowering them is the point) and runtime, which must
lie within the member's measured interval (the rigorous 95% interval of its speed-up, or
RUNTIME_TOLERANCE around its screening ratio when it has none). Each round's patches are
evaluated as one batch, in parallel, through the run's evaluator and cache.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gi.describe import describe_patch
from gi.patch import Patch
from gi.report import PATCH_DIR, update_summary
from gi.rerun import FinishedRun

T = TypeVar("T")

#: Objectives minimisation may change: the patch's own size is what it lowers.
PATCH_SIZE = frozenset({"size", "diff_lines"})
#: Runtime ratios within this share of the member's screening ratio count as kept, when the
#: member has no rigorous interval.
RUNTIME_TOLERANCE = 0.1
#: The label minimisation's evaluations carry in the run store.
LABEL = "minimize"

#: Tells, for each candidate list of items, whether it keeps what the whole list achieves.
Judge = Callable[[Sequence[tuple[T, ...]]], list[bool]]


@dataclass(frozen=True)
class Kept:
    """What a smaller patch must keep of a member's scores."""

    names: tuple[str, ...]
    values: tuple[float, ...]
    violation: float
    runtime: tuple[float, float] | None = None

    def __call__(self, values: Sequence[float], violation: float) -> bool:
        if violation != self.violation:
            return False
        for name, wanted, value in zip(self.names, self.values, values, strict=True):
            if name in PATCH_SIZE:
                continue
            if name == "runtime" and self.runtime is not None:
                if not self.runtime[0] <= value <= self.runtime[1]:
                    return False
            elif value != wanted:
                return False
        return True


def runtime_interval(runtime: float, speedup: Mapping[str, Any] | None) -> tuple[float, float]:
    """The runtime ratios that count as the member's: its rigorous speed-up interval, inverted,
    or RUNTIME_TOLERANCE around its screening ratio."""
    if speedup and "error" not in speedup and speedup.get("low") and speedup.get("high"):
        return 1.0 / float(speedup["high"]), 1.0 / float(speedup["low"])
    return runtime * (1 - RUNTIME_TOLERANCE), runtime * (1 + RUNTIME_TOLERANCE)


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


def minimize_patch(run: FinishedRun, patch: Patch, kept: Kept) -> tuple[Patch, Passes]:
    """The patch reduced by ddmin, then single-edit removals, keeping `kept`."""
    passes = Passes()

    def keeps(subsets: Sequence[tuple[Any, ...]]) -> list[bool]:
        results = run.evaluate([Patch(tuple(subset)) for subset in subsets], LABEL)
        return [kept(*run.scores(evaluation)) for _, evaluation in results]

    edits = ddmin(patch.edits, keeps, passes)
    edits = one_edit_removals(edits, keeps, passes)
    return Patch(edits), passes


def kept_of(run: FinishedRun, patch: Patch, speedup: Mapping[str, Any] | None = None) -> Kept:
    """What the member's patch achieves, as its scores in this run."""
    [(_, evaluation)] = run.evaluate([patch], LABEL)
    values, broken = run.scores(evaluation)
    scores = dict(zip(run.names, values, strict=True))
    interval = runtime_interval(scores["runtime"], speedup) if "runtime" in scores else None
    return Kept(run.names, values, broken, interval)


def minimize_front(run: FinishedRun, member_id: str | None = None) -> dict[str, dict[str, Any]]:
    """Minimise the front's members (or one), store the results with the run, write
    patches/<id>.min.diff and the `minimal` entry of each member in summary.json."""
    done: dict[str, dict[str, Any]] = run.experiment.store.get_meta("minimised") or {}
    diffs: dict[str, str] = {}
    for member in run.members(member_id):
        patch = run.patch(member)
        kept = kept_of(run, patch, member.get("speedup"))
        smaller, passes = minimize_patch(run, patch, kept)
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
