"""The run folder's report: summary.json, one .diff per front member, the evaluation log; and
the tables `gi run` and `gi show` print from it."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from fitness.objectives import Objective
from gi.results import Evaluation

if TYPE_CHECKING:
    from gi.config import Config

SUMMARY_NAME = "summary.json"
LOG_NAME = "evaluations.jsonl"
PATCH_DIR = "patches"


def _write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file and rename, so a killed run never leaves half a file."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def _test_counts(tests: Mapping[str, str]) -> dict[str, int]:
    passed = sum(outcome == "passed" for outcome in tests.values())
    return {"passed": passed, "failed": len(tests) - passed}


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
    isolated: bool,
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    """Write summary.json, patches/*.diff and evaluations.jsonl; return the summary."""
    patch_dir = folder / PATCH_DIR
    patch_dir.mkdir(exist_ok=True)
    for old in patch_dir.glob("*.diff"):
        old.unlink()
    members = []
    for entry in front:
        member, variant = entry["member"], entry["variant"]
        diff = variant.diff()
        diff_name = None
        if diff:
            diff_name = f"{PATCH_DIR}/{member.id}.diff"
            _write_atomic(folder / diff_name, diff)
        record: dict[str, Any] = {
            "id": member.id,
            "generation": member.generation,
            "operator": member.operator,
            "parents": list(member.parents),
            "edits": variant.patch.to_json(),
            "descriptions": [edit.describe() for edit in variant.patch.edits],
            "objectives": entry["objectives"],
            "feasible": member.fitness.feasible,
            "diff": diff_name,
            "training": _test_counts(entry["evaluation"].tests),
        }
        if "speedup" in entry:
            record["speedup"] = entry["speedup"]
        if "holdout" in entry:
            record["holdout"] = entry["holdout"]
            record["overfits"] = record["training"]["failed"] == 0 and entry["holdout"]["failed"] > 0
        else:
            record["holdout"] = None
            record["overfits"] = None
        members.append(record)
    judged = [m for m in members if m["overfits"] is not None]
    summary: dict[str, Any] = {
        "experiment": {
            "name": config.experiment.name,
            "seed": config.experiment.seed,
            "config": str(config.source),
        },
        "program": {"root": str(config.program_root), "files": list(config.program.files)},
        "objectives": [{"name": o.name, "direction": o.direction.value} for o in objectives],
        "constraint": config.objectives.constraint.value,
        "baseline": {
            "objectives": dict(baseline_objectives),
            "measures": baseline.measures,
            "training": _test_counts(baseline.tests),
            "holdout": _test_counts(baseline_holdout) if baseline_holdout is not None else None,
        },
        "front": members,
        "evaluations": evaluations,
        "cache_hits": cache_hits,
        "wall_seconds": round(wall_seconds, 3),
        "overfitting_rate": (sum(bool(m["overfits"]) for m in judged) / len(judged)) if judged else None,
        "hypervolume": [round(float(stats["hypervolume"]), 6) for stats in history],
        "generations": history,
        **extra,
        "sandbox": (
            "bubblewrap (no network, read-only but for the scratch copy, PID namespace)"
            if isolated
            else "process limits only"
        ),
    }
    lines = []
    for seq, individual, generation, evaluation in evaluation_log:
        lines.append(json.dumps({"seq": seq, "individual": individual, "generation": generation, **evaluation}))
    _write_atomic(folder / LOG_NAME, "\n".join(lines) + ("\n" if lines else ""))
    _write_atomic(folder / SUMMARY_NAME, json.dumps(summary, indent=2) + "\n")
    return summary


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.4g}"


def front_table(summary: Mapping[str, Any]) -> Table:
    """The front as a table: one row per member, the original first for comparison."""
    names = [objective["name"] for objective in summary["objectives"]]
    table = Table(title=f"Pareto front of {summary['experiment']['name']} (seed {summary['experiment']['seed']})")
    table.add_column("id")
    for name in names:
        table.add_column(name, justify="right")
    timed = any(member.get("speedup") for member in summary["front"])
    if timed:
        table.add_column("speed-up (95% CI)", justify="right")
    table.add_column("held-out", justify="right")
    table.add_column("overfits")
    table.add_column("edits")
    baseline = summary["baseline"]
    holdout = baseline.get("holdout")
    table.add_row(
        "original",
        *(_number(baseline["objectives"].get(name)) for name in names),
        *(["1"] if timed else []),
        f"{holdout['passed']}/{holdout['passed'] + holdout['failed']}" if holdout else "-",
        "",
        "",
        style="dim",
    )
    for member in summary["front"]:
        held = member.get("holdout")
        table.add_row(
            member["id"],
            *(_number(member["objectives"].get(name)) for name in names),
            *([describe_speedup(member.get("speedup"), short=True)] if timed else []),
            f"{held['passed']}/{held['passed'] + held['failed']}" if held else "-",
            {True: "yes", False: "no", None: "-"}[member["overfits"]],
            "; ".join(member["descriptions"])[:80],
        )
    return table


def describe_speedup(speedup: Mapping[str, Any] | None, *, short: bool = False) -> str:
    """'3.1x (2.9-3.3), significant', or why there is no figure."""
    if not speedup:
        return "-"
    if "error" in speedup:
        return "not measured" if short else f"not measured: {speedup['error']}"
    figure = f"{speedup['value']:.3g}x ({speedup['low']:.3g}-{speedup['high']:.3g})"
    if short:
        return figure + ("" if speedup["significant"] else " n.s.")
    verdict = "significant" if speedup["significant"] else "not significant"
    return f"{figure}, {verdict} (Mann-Whitney U p = {speedup['p_value']:.2g})"


def operator_table(summary: Mapping[str, Any]) -> Table:
    """Per-operator accounting: proposals and what became of them, tokens, money, time."""
    table = Table(title="Operators")
    columns = ("proposals", "unparseable", "no_ops", "duplicates", "evaluated", "passing", "front", "tokens",
               "cost", "seconds")  # fmt: skip
    table.add_column("operator")
    for column in columns:
        table.add_column(column.replace("_", "-"), justify="right")
    for name, row in summary["operators"].items():
        table.add_row(name, *(_number(row.get(column, 0)) for column in columns))
    llm = summary.get("llm")
    if llm and llm.get("stopped"):
        table.caption = f"the language model stopped: {llm['stopped']}"
    return table


def find_member(summary: Mapping[str, Any], member_id: str) -> dict[str, Any] | None:
    for member in summary["front"]:
        if member["id"] == member_id:
            return dict(member)
    return None
