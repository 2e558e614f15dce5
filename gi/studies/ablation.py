"""Ablation of front members: what each edit contributes, and which edits cause held-out failures.

For a member's patch of n edits, each edit is removed in turn and the rest re-measured (n
evaluations, plus n with that edit alone when the run has held-out tests). An edit's
contribution to an objective is the member's value minus the value without it (complexity
-2: the edit lowers complexity by 2; runtime is a screening ratio, so noisy). On the
held-out tests, an edit *causes* a failure when the test fails with the whole patch and
passes without that edit; `alone` lists what the edit breaks by itself. Evaluations go
through the run's evaluator and cache (`FinishedRun.evaluate`).
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from gi.engine.run_folder import update_summary
from gi.fitness.outcomes import overfits, regressions
from gi.model.describe import describe
from gi.model.patch import Patch
from gi.studies.rerun import FinishedRun

#: The label ablation's evaluations carry in the run store.
LABEL = "ablation"


def ablate(run: FinishedRun, patch: Patch) -> list[dict[str, Any]]:
    """One record per edit of `patch`: its contribution to each objective, whether the patch
    stays feasible without it, and the held-out tests it causes to fail."""
    edits = patch.edits
    without = [Patch(edits[:i] + edits[i + 1 :]) for i in range(len(edits))]
    alone = [Patch((edit,)) for edit in edits]
    held_out = run.experiment.held_out
    results = run.evaluate([patch, *without, *(alone if held_out is not None else [])], LABEL)
    (_, whole), rest = results[0], results[1:]
    values, broken = run.scores(whole)
    outcomes: list[dict[str, str]] = []
    baseline: dict[str, str] = {}
    if held_out is not None:
        baseline = held_out.baseline
        outcomes = held_out.outcomes([variant for variant, _ in results])
    records = []
    for index, edit in enumerate(edits):
        _, reduced = rest[index]
        reduced_values, reduced_broken = run.scores(reduced)
        record: dict[str, Any] = {
            "edit": index,
            "description": describe(edit, run.program),
            "contribution": {
                name: round(value - other, 6)
                for name, value, other in zip(run.names, values, reduced_values, strict=True)
            },
            "feasible_without": reduced_broken == 0,
            "needed_for_feasibility": broken == 0 and reduced_broken > 0,
        }
        if held_out is not None:
            failing = regressions(outcomes[0], baseline)
            failing_without = regressions(outcomes[1 + index], baseline)
            record["holdout_causes"] = sorted(set(failing) - set(failing_without))
            record["holdout_alone"] = regressions(outcomes[1 + len(edits) + index], baseline)
            record["overfits_without"] = overfits(reduced.tests, run.baseline.tests, outcomes[1 + index], baseline)
        records.append(record)
    return records


def ablate_front(run: FinishedRun, member_id: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """Ablate the front's members (or one); store the results with the run and give each
    member its `ablation` in summary.json."""
    done: dict[str, dict[str, Any]] = run.experiment.store.get_meta("ablation") or {}
    for member in run.members(member_id):
        patch = run.patch(member)
        done[member["id"]] = {"of_edits": patch.to_json(), "edits": ablate(run, patch)}
    run.experiment.store.set_meta("ablation", done)
    for member in run.summary["front"]:
        stored = done.get(member["id"])
        if stored is not None and stored["of_edits"] == member["edits"]:
            member["ablation"] = stored["edits"]
    update_summary(run.folder, run.summary, {})
    return {member["id"]: done[member["id"]]["edits"] for member in run.members(member_id)}


#: How much of an edit's description the ablation table shows; a longer one ends in an ellipsis.
DESCRIPTION_WIDTH = 60


def shortened(text: str, width: int = DESCRIPTION_WIDTH) -> str:
    """`text` in at most `width` characters: cut at a word where it can be, and ending in "…"
    when cut, so that a cut description never reads as the whole one."""
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    space = cut.rfind(" ")
    if space >= width // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"


def _test_names(tests: list[str]) -> str:
    """Test ids by their last part (`test_rejects_negative_scores`), "-" for none."""
    return ", ".join(test.split("::")[-1] for test in tests) or "-"


def ablation_table(member: dict[str, Any], names: list[str]) -> Table:
    """A member's ablation as `gi show RUN ID` prints it: one row per edit, with the held-out
    tests it causes to fail (they pass without it) and those it breaks on its own: two edits
    that each break a test alone cause neither failure, and only the second column shows them."""
    table = Table(title=f"Ablation of {member['id']}: each edit's contribution (the value with it minus without it)")
    table.add_column("#", justify="right")
    table.add_column("edit")
    for name in names:
        table.add_column(name, justify="right")
    table.add_column("feasible without")
    held = any("holdout_causes" in record for record in member["ablation"])
    if held:
        table.add_column("held-out failures it causes")
        table.add_column("held-out failures alone")
    for record in member["ablation"]:
        table.add_row(
            str(record["edit"]),
            Text(shortened(record["description"])),
            *(f"{record['contribution'].get(name, 0):+g}" for name in names),
            "yes" if record["feasible_without"] else "no",
            *([Text(_test_names(record.get(key, []))) for key in ("holdout_causes", "holdout_alone")] if held else []),
        )
    return table
