"""The summary builder: what a finished (or resumed) run writes into its folder, summary.json
and evaluations.jsonl, from the run's store, config and front."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fitness.objectives import Objective
from fitness.tests import test_counts
from gi.model.describe import describe_patch
from gi.model.patch import Patch, apply
from gi.model.results import Evaluation

if TYPE_CHECKING:
    from gi.config import Config
from gi.engine.run_folder import (
    LOG_NAME,
    ORIGINAL,
    ORIGINAL_OPERATOR,
    PATCH_DIR,
    SUMMARY_NAME,
    _write_atomic,
    source_hash,
)


def write_report(
    folder: Path,
    *,
    config: Config,
    objectives: Sequence[Objective],
    baseline: Evaluation,
    baseline_objectives: Mapping[str, float],
    baseline_holdout: Mapping[str, str] | None,
    front: Sequence[Mapping[str, Any]],
    history: list[dict[str, Any]],
    evaluation_log: Iterable[tuple[int, str, int, dict[str, Any]]],
    evaluations: int,
    cache_hits: int,
    wall_seconds: float,
    sandbox: str,
    extra: Mapping[str, Any],
    original_ids: Collection[str] = (),
) -> dict[str, Any]:
    """Write summary.json, patches/*.diff and evaluations.jsonl; return the summary.

    `original_ids` are the ids of the search's individuals that made the original program:
    the summary calls each of them `original` (a front member, a parent), with one operator
    label, and keeps them in `baseline.individuals`."""
    patch_dir = folder / PATCH_DIR
    patch_dir.mkdir(exist_ok=True)
    for old in patch_dir.glob("*.diff"):
        old.unlink()
    aliases = set(original_ids) | {entry["member"].id for entry in front if not entry["variant"].changed_files}
    members = []
    for entry in front:
        member, variant = entry["member"], entry["variant"]
        is_original = member.id in aliases
        identifier = ORIGINAL if is_original else member.id
        diff = variant.diff()
        diff_name = None
        if diff:
            diff_name = f"{PATCH_DIR}/{identifier}.diff"
            _write_atomic(folder / diff_name, diff)
        record: dict[str, Any] = {
            "id": identifier,
            "generation": member.generation,
            "operator": ORIGINAL_OPERATOR if is_original else member.operator,
            "parents": [ORIGINAL if parent in aliases else parent for parent in member.parents],
            "edits": variant.patch.to_json(),
            "descriptions": describe_patch(variant.patch, variant.program),
            "objectives": entry["objectives"],
            "feasible": member.fitness.feasible,
            "diff": diff_name,
            "training": test_counts(entry["evaluation"].tests),
        }
        if "speedup" in entry:
            record["speedup"] = entry["speedup"]
        if "second_run" in entry:  # members with code a model wrote (gi.engine.verdict.second_run)
            record["second_run"] = entry["second_run"]
        if "ablation" in entry:  # from `gi ablate`, kept in the run store
            record["ablation"] = entry["ablation"]
        if "minimal" in entry:  # from `gi minimize`, kept in the run store
            record["minimal"] = entry["minimal"]
            if entry["minimal_diff"]:
                _write_atomic(folder / PATCH_DIR / f"{identifier}.min.diff", entry["minimal_diff"])
        if "holdout" in entry:
            record["holdout"] = entry["holdout"]
            record["overfits"] = entry["overfits"]
        else:
            record["holdout"] = None
            record["overfits"] = None
        members.append(record)
    program = front[0]["variant"].program if front else None  # every member's is the run's program
    # The original never overfits and is on every front that minimises patch size: it is no
    # patch, so it is left out of the rate (as of every overfitting rate gi gives).
    original = apply(program, Patch()).tree_hash if program is not None else None
    judged = [
        record
        for record, entry in zip(members, front, strict=True)
        if record["overfits"] is not None and entry["variant"].tree_hash != original
    ]
    summary: dict[str, Any] = {
        "experiment": {
            "name": config.experiment.name,
            "seed": config.experiment.seed,
            "config": str(config.source),
        },
        "program": {
            "root": str(config.program_root),
            "files": list(config.program.files),
            "sources": {name: source_hash(text) for name, text in sorted(program.sources.items())} if program else {},
        },
        "objectives": [{"name": o.name, "direction": o.direction.value} for o in objectives],
        "constraint": config.objectives.constraint.value,
        "baseline": {
            "objectives": dict(baseline_objectives),
            "measures": baseline.measures,
            "training": test_counts(baseline.tests),
            "holdout": test_counts(baseline_holdout) if baseline_holdout is not None else None,
            "individuals": sorted(aliases),
        },
        "front": members,
        "evaluations": evaluations,
        "cache_hits": cache_hits,
        "wall_seconds": round(wall_seconds, 3),
        "overfitting_rate": (sum(bool(m["overfits"]) for m in judged) / len(judged)) if judged else None,
        "hypervolume": [round(float(stats["hypervolume"]), 6) for stats in history],
        "generations": history,
        **extra,
        "sandbox": sandbox,
    }
    lines = []
    for seq, individual, generation, evaluation in evaluation_log:
        lines.append(json.dumps({"seq": seq, "individual": individual, "generation": generation, **evaluation}))
    _write_atomic(folder / LOG_NAME, "\n".join(lines) + ("\n" if lines else ""))
    _write_atomic(folder / SUMMARY_NAME, json.dumps(summary, indent=2) + "\n")
    return summary
