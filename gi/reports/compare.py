"""`gi compare`: the runs of an experiment, arm against arm, with statistics.

Per run: the final hypervolume of its feasible front on a reference point shared by all
the runs compared (the worst, objective by objective, of each run's own); where every run kept
the same quality-diversity grid (search.grid), its QD-score (the hypervolume each cell's elite
dominates on its own, on that reference point, added up over the cells, in units of the
original's) and coverage (the share of cells filled); the best value of
each objective among its feasible variants and how many evaluations it took to first reach
it (0: the original had it), and its overfitting rate. Per arm: the median and
interquartile range of each over its seeds. Between each pair of arms: the two-sided
Mann-Whitney U test (scipy) and the Vargha-Delaney A12 effect size, the p-values corrected
for the pairs compared on each measure by Holm's step-down method.

Everything is read back from the run folders (summary.json, evaluations.jsonl and the run
store's config), so runs of separate configs can be compared too: then each config's
experiment name is its arm. Runs of other programs (another text of an editable file) or on
other objectives are refused.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rich.markup import escape
from rich.table import Table

from gi.engine.run_folder import LOG_NAME, STORE_NAME, SUMMARY_NAME, read_summary
from gi.engine.store import RunStore
from gi.fitness.objectives import (
    Constraint,
    Objective,
    objective_values,
    recorded_objective,
    reference_point,
    violation,
)
from gi.fitness.statistics import holm
from gi.model.errors import StoreError, UsageError
from gi.populations import hypervolume

CORRECTION = "Holm"
#: The A12 thresholds of Vargha and Delaney (2000) for small, medium and large effects.
A12_SMALL, A12_MEDIUM, A12_LARGE = 0.56, 0.64, 0.71


@dataclass(frozen=True)
class Measure:
    """One thing compared across runs, and whether larger values are better."""

    name: str
    larger_is_better: bool


@dataclass
class RunFigures:
    """What one run achieved."""

    arm: str
    seed: int
    folder: Path
    values: dict[str, float | None] = field(default_factory=dict)


@dataclass(frozen=True)
class RunData:
    """A run folder read back: its summary, its config as stored, and its evaluation log."""

    folder: Path
    summary: dict[str, Any]
    config: dict[str, Any]
    log: list[dict[str, Any]]

    @property
    def arm(self) -> str:
        return str(self.config.get("arm") or self.summary["experiment"]["name"])

    @property
    def seed(self) -> int:
        return int(self.summary["experiment"]["seed"])

    @property
    def objectives(self) -> list[Objective]:
        return [recorded_objective(entry["name"], entry["direction"]) for entry in self.summary["objectives"]]

    @property
    def test_count(self) -> int:
        training = self.summary["baseline"]["training"]
        return int(training["passed"]) + int(training["failed"])

    def reference(self) -> tuple[float, ...]:
        """This run's own hypervolume reference point (in minimised form), from its original."""
        max_edits = int(self.config.get("search", {}).get("max_edits", 10))
        return reference_point(
            self.objectives, self.summary["baseline"]["measures"], test_count=self.test_count, max_edits=max_edits
        )


def run_folders(paths: Sequence[Path]) -> list[Path]:
    """The run folders named: a run folder itself, or every run folder in an experiment folder
    (in experiment.json's order, else by name). Runs without a report yet are left out."""
    folders: list[Path] = []
    for path in paths:
        if (path / SUMMARY_NAME).is_file():
            folders.append(path)
        elif path.is_dir():
            manifest = path / "experiment.json"
            if manifest.is_file():
                names = [entry["folder"] for entry in json.loads(manifest.read_text(encoding="utf-8"))["runs"]]
                inside = [path / name for name in names]
            else:
                inside = sorted(child for child in path.iterdir() if child.is_dir())
            folders += [child for child in inside if (child / SUMMARY_NAME).is_file()]
            if not any((child / SUMMARY_NAME).is_file() for child in inside) and not inside:
                raise UsageError(f"{path}: neither a run folder (no {SUMMARY_NAME}) nor an experiment folder")
        else:
            raise UsageError(f"{path}: no such run or experiment folder")
    if not folders:
        raise UsageError(f"{', '.join(map(str, paths))}: no finished run to compare (no {SUMMARY_NAME} found)")
    return list(dict.fromkeys(folders))


def read_run(folder: Path) -> RunData:
    """A run folder's summary, stored config and evaluation log."""
    summary = read_summary(folder)
    store_path = folder / STORE_NAME
    config: dict[str, Any] = {}
    if store_path.is_file():
        store = RunStore(store_path)
        try:
            config = store.get_meta("config") or {}
        finally:
            store.close()
    log_path = folder / LOG_NAME
    try:
        lines = log_path.read_text(encoding="utf-8").splitlines()
        log = [json.loads(line) for line in lines if line.strip()]
    except (OSError, ValueError) as error:
        raise StoreError(f"{log_path}: cannot read the evaluation log ({error})") from None
    return RunData(folder, summary, config, log)


def measures_of(objectives: Sequence[Objective], diversity: bool = False) -> list[Measure]:
    """The measures compared, in table order (with `diversity`, the grid's QD-score and coverage)."""
    found = [Measure("hypervolume", True)]
    if diversity:
        found += [Measure("QD-score", True), Measure("coverage", True)]
    found += [Measure(f"best {o.name}", o.weight > 0) for o in objectives]
    found += [Measure(f"evaluations to best {o.name}", False) for o in objectives]
    found.append(Measure("overfitting rate", False))
    return found


def figures(run: RunData, reference: Sequence[float]) -> RunFigures:
    """One run's figures, its hypervolume on the shared `reference`."""
    objectives = run.objectives
    names = [o.name for o in objectives]
    weights = [o.weight for o in objectives]
    front = [
        [float(member["objectives"][name]) for name in names] for member in run.summary["front"] if member["feasible"]
    ]
    result = RunFigures(run.arm, run.seed, run.folder)
    result.values["hypervolume"] = hypervolume(front, reference, weights)
    grid = run.summary.get("quality_diversity")
    if grid is not None:
        original = [float(run.summary["baseline"]["objectives"][name]) for name in names]
        unit = hypervolume([original], reference, weights) or 1.0
        cells = [[float(elite["objectives"][name]) for name in names] for elite in grid["elites"]]
        result.values["QD-score"] = sum(hypervolume([cell], reference, weights) for cell in cells) / unit
        result.values["coverage"] = float(grid["coverage"])
    worst = tuple(o.from_minimised(r) for o, r in zip(objectives, reference, strict=True))
    constraint = Constraint(run.summary["constraint"])
    best: list[float | None] = [None] * len(objectives)
    reached: list[int | None] = [None] * len(objectives)
    evaluations = 0  # the original is evaluation 0
    for entry in run.log:
        ok = entry["status"] == "ok"
        measures = {str(k): float(v) for k, v in entry.get("measures", {}).items()}
        if entry.get("individual") != "baseline":
            evaluations += 1
        if not ok or violation(constraint, measures, ok=ok, test_count=run.test_count) > 0:
            continue
        values = objective_values(objectives, measures, worst)
        for index, objective in enumerate(objectives):
            current = best[index]
            if current is None or objective.minimised(values[index]) < objective.minimised(current):
                best[index], reached[index] = values[index], evaluations
    for index, name in enumerate(names):
        result.values[f"best {name}"] = best[index]
        value = reached[index]
        result.values[f"evaluations to best {name}"] = None if value is None else float(value)
    rate = run.summary.get("overfitting_rate")
    result.values["overfitting rate"] = None if rate is None else float(rate)
    return result


def a12(first: Sequence[float], second: Sequence[float], larger_is_better: bool) -> float:
    """Vargha and Delaney's A12: the chance that a run of the first arm does better than one of
    the second, ties counting half (0.5: no difference)."""
    wins = ties = 0.0
    for x, y in itertools.product(first, second):
        if x == y:
            ties += 1
        elif (x > y) == larger_is_better:
            wins += 1
    return (wins + 0.5 * ties) / (len(first) * len(second))


def mann_whitney(first: Sequence[float], second: Sequence[float]) -> tuple[float, float]:
    """Two-sided Mann-Whitney U (scipy): U of the first sample and p. Identical samples of
    one value have p = 1 (scipy gives nan: no variance)."""
    if len(set(first) | set(second)) == 1:
        return len(first) * len(second) / 2, 1.0
    from scipy.stats import mannwhitneyu  # here: scipy.stats takes most of a second to import

    result = mannwhitneyu(first, second, alternative="two-sided")
    return float(result.statistic), float(result.pvalue)


def _summary_of(values: Sequence[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0, "median": None, "q1": None, "q3": None}
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    return {"n": len(values), "median": float(median), "q1": float(q1), "q3": float(q3)}


def compare(paths: Sequence[Path]) -> dict[str, Any]:
    """Compare the runs in `paths` (run or experiment folders); the whole result as JSON data."""
    runs = [read_run(folder) for folder in run_folders(paths)]
    for run in runs[1:]:
        _comparable(runs[0], run)
    names = [o.name for o in runs[0].objectives]
    reference = tuple(float(value) for value in np.max([run.reference() for run in runs], axis=0))
    per_run = [figures(run, reference) for run in runs]
    arms = list(dict.fromkeys(run.arm for run in per_run))
    grids = [run.summary.get("quality_diversity") for run in runs]
    # QD-scores compare only over one grid: the same features, bins and ranges in every run.
    diversity = all(g is not None and g["features"] == grids[0]["features"] for g in grids)  # type: ignore[index]
    measures = measures_of(runs[0].objectives, diversity)
    samples = {
        (arm, m.name): [float(v) for r in per_run if r.arm == arm and (v := r.values[m.name]) is not None]
        for arm in arms
        for m in measures
    }
    pairs: list[dict[str, Any]] = []
    for measure in measures:
        rows: list[dict[str, Any]] = []
        for first, second in itertools.combinations(arms, 2):
            x, y = samples[(first, measure.name)], samples[(second, measure.name)]
            if not x or not y:
                continue
            u, p = mann_whitney(x, y)
            rows.append(
                {
                    "measure": measure.name,
                    "first": first,
                    "second": second,
                    "n_first": len(x),
                    "n_second": len(y),
                    "u": u,
                    "p": p,
                    "a12": a12(x, y, measure.larger_is_better),
                }
            )
        for row, adjusted in zip(rows, holm([row["p"] for row in rows]), strict=True):
            row["p_holm"] = adjusted
        pairs += rows
    return {
        "objectives": names,
        "reference_point": list(reference),
        "correction": f"{CORRECTION} (over the pairs of arms compared on each measure)",
        "test": "two-sided Mann-Whitney U (scipy.stats.mannwhitneyu)",
        "effect_size": "Vargha-Delaney A12: chance a run of the first arm does better than one of the second",
        "measures": [{"name": m.name, "larger_is_better": m.larger_is_better} for m in measures],
        "arms": {
            arm: {m.name: _summary_of(samples[(arm, m.name)]) for m in measures}
            | {"seeds": sorted(r.seed for r in per_run if r.arm == arm)}
            for arm in arms
        },
        "pairs": pairs,
        "runs": [
            {"arm": r.arm, "seed": r.seed, "folder": str(r.folder), **{k: v for k, v in r.values.items()}}
            for r in per_run
        ],
    }


def _comparable(first: RunData, run: RunData) -> None:
    """Refuse (UsageError) a run of another program than `first`'s, or on other objectives: its
    figures are not samples of the same arms' (a hypervolume on another program's reference
    point means nothing)."""
    objectives = [f"{o.name} ({o.direction.value})" for o in run.objectives]
    expected = [f"{o.name} ({o.direction.value})" for o in first.objectives]
    if objectives != expected:
        raise UsageError(
            f"{run.folder}: objectives {', '.join(objectives)} differ from {first.folder}'s {', '.join(expected)};"
            " only runs on the same objectives can be compared"
        )
    differing = _different_files(first.summary.get("program") or {}, run.summary.get("program") or {})
    if differing:
        raise UsageError(
            f"{run.folder}: a run of another program than {first.folder} ({', '.join(differing)} differ); only"
            " runs of one program can be compared"
        )


def _different_files(first: dict[str, Any], second: dict[str, Any]) -> list[str]:
    """The editable files two runs' programs differ in (summary.json's `program`): by the hash of
    each file's text as the run read it, or, when a summary lacks them, by the files' paths."""
    mine, theirs = first.get("sources"), second.get("sources")
    if isinstance(mine, dict) and isinstance(theirs, dict) and mine and theirs:
        return sorted(set(mine) ^ set(theirs)) or sorted(name for name in mine if mine[name] != theirs[name])
    paths = [{str(Path(str(p.get("root", ""))) / str(file)) for file in p.get("files") or []} for p in (first, second)]
    return sorted(paths[0] ^ paths[1])


def _number(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.4g}"


def _effect(a: float) -> str:
    size = abs(a - 0.5) + 0.5
    word = (
        "large" if size >= A12_LARGE else "medium" if size >= A12_MEDIUM else "small" if size >= A12_SMALL else "none"
    )
    return word


def arm_table(result: dict[str, Any]) -> Table:
    """Per measure and arm: median [first quartile - third quartile] over the seeds."""
    table = Table(title=escape("Per arm: median [first quartile-third quartile] over seeds"))
    table.add_column("measure")
    for arm, data in result["arms"].items():
        table.add_column(f"{arm} ({len(data['seeds'])} seeds)", justify="right")
    for measure in result["measures"]:
        cells = []
        for data in result["arms"].values():
            entry = data[measure["name"]]
            cells.append(
                "-"
                if entry["median"] is None
                else escape(f"{_number(entry['median'])} [{_number(entry['q1'])}-{_number(entry['q3'])}]")
            )
        table.add_row(f"{measure['name']} {'↑' if measure['larger_is_better'] else '↓'}", *cells)
    table.caption = "↑ higher is better, ↓ lower is better; hypervolume on the reference point " + ", ".join(
        f"{name}={_number(value)}" for name, value in zip(result["objectives"], result["reference_point"], strict=True)
    )
    return table


def pair_table(result: dict[str, Any]) -> Table:
    """Per measure and pair of arms: U, p, p corrected, A12 and its size."""
    table = Table(title=f"Arm against arm: two-sided Mann-Whitney U, p corrected by {CORRECTION}")
    for column in ("measure", "arms", "U", "p", f"p ({CORRECTION})", "A12", "effect"):
        table.add_column(column, justify="left" if column in ("measure", "arms", "effect") else "right")
    for row in result["pairs"]:
        significant = row["p_holm"] < 0.05
        table.add_row(
            row["measure"],
            f"{row['first']} vs {row['second']}",
            _number(row["u"]),
            f"{row['p']:.3g}",
            f"{row['p_holm']:.3g}" + (" *" if significant else ""),
            f"{row['a12']:.2f}",
            _effect(row["a12"]),
        )
    table.caption = (
        f"p ({CORRECTION}): {result['correction']}; * below 0.05. A12 (Vargha-Delaney): the chance a run of the"
        f" first arm does better than one of the second; 0.5 none, {A12_SMALL} small, {A12_MEDIUM} medium,"
        f" {A12_LARGE} large (or as far below 0.5)"
    )
    return table


def write_outputs(result: dict[str, Any], folder: Path) -> list[Path]:
    """compare.json, compare-arms.csv and compare-pairs.csv in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / "compare.json", folder / "compare-arms.csv", folder / "compare-pairs.csv"]
    paths[0].write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    arms = io.StringIO()
    writer = csv.writer(arms, lineterminator="\n")
    writer.writerow(["arm", "measure", "n", "median", "q1", "q3"])
    for arm, data in result["arms"].items():
        for measure in result["measures"]:
            entry = data[measure["name"]]
            writer.writerow([arm, measure["name"], entry["n"], entry["median"], entry["q1"], entry["q3"]])
    paths[1].write_text(arms.getvalue(), encoding="utf-8")
    pairs = io.StringIO()
    columns = ["measure", "first", "second", "n_first", "n_second", "u", "p", "p_holm", "a12"]
    writer = csv.writer(pairs, lineterminator="\n")
    writer.writerow(columns)
    for row in result["pairs"]:
        writer.writerow([row[column] for column in columns])
    paths[2].write_text(pairs.getvalue(), encoding="utf-8")
    return paths


def output_folder(paths: Sequence[Path]) -> Path:
    """Where the CSV and JSON go: the experiment folder, or the folder holding the runs compared."""
    if len(paths) == 1 and not (paths[0] / SUMMARY_NAME).is_file():
        return paths[0]
    parents = {path.resolve().parent for path in paths}
    return parents.pop() if len(parents) == 1 else Path.cwd()
