"""Revalidation: a finished run's front, and every feasible program its search made, under
other tests (a suite written later, another project's), or again under its own held-out tests.

The figures, by `fitness.tests.overfits` (the one definition), with the given suite in the
role of the held-out tests:

    front       the share of the front's members that overfit
    feasible    the share of every feasible program the search evaluated that overfits
    operators   the same, by the operator that first made the program (the language model's
                `llm`, each classic operator, each crossover), and as `model` against `classic`

A suite is copied into each held-out copy of the program (under gi_validate/), never into the
program folder. Outcomes of the run's own held-out tests are cached in the run store; those of
a suite are not (it may change before the next `gi validate`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from fitness.objectives import violation
from fitness.tests import overfits, regressions, test_counts
from gi.errors import UsageError
from gi.evolution import operator_of_label
from gi.holdout import HeldOut
from gi.patch import Patch, apply
from gi.report import update_summary
from gi.rerun import FinishedRun
from gi.results import Evaluation

#: Where a suite goes in a held-out copy of the program.
SUITE_FOLDER = "gi_validate"
#: Files of a suite folder that are copied (test code and the small data files tests read).
SUITE_SUFFIXES = (".py", ".txt", ".json", ".toml", ".cfg", ".ini", ".csv", ".yaml", ".yml")


def suite_files(paths: Sequence[Path]) -> tuple[tuple[str, str], ...]:
    """The files of the suites at `paths` (files or folders), as (path in the copy, text)."""
    files: list[tuple[str, str]] = []
    for index, path in enumerate(paths):
        if not path.exists():
            raise UsageError(f"--tests {path}: no such file or folder")
        found = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for file in found:
            relative = file.relative_to(path.parent)
            if file.suffix not in SUITE_SUFFIXES or "__pycache__" in relative.parts:
                continue
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                raise UsageError(f"--tests {path}: cannot read {file} ({error})") from None
            files.append((f"{SUITE_FOLDER}/{index}/{relative.as_posix()}", text))
    if not any(name.endswith(".py") for name, _ in files):
        raise UsageError(f"--tests {' '.join(map(str, paths))}: no Python file to run")
    return tuple(files)


def _share(flags: Sequence[bool]) -> dict[str, Any]:
    return {"checked": len(flags), "overfit": sum(flags), "rate": round(sum(flags) / len(flags), 4) if flags else None}


def validate(run: FinishedRun, paths: Sequence[Path] | None) -> dict[str, Any]:
    """Run the front and every feasible program of the search under the suite at `paths` (None:
    the run's own held-out tests); store the figures with the run and in summary.json."""
    evaluator = run.experiment.evaluator
    if paths:
        files = suite_files(paths)
        evaluator.settings = dataclasses.replace(
            evaluator.settings, holdout=(SUITE_FOLDER,), holdout_ids=(), holdout_files=files
        )
        held = HeldOut(evaluator, None, run.config.tests.test_timeout)
        tests = [str(path) for path in paths]
    elif run.experiment.held_out is not None:
        held, tests = run.experiment.held_out, ["the run's held-out tests"]
    else:
        raise UsageError(f"{run.folder}: the run has no held-out tests; name a suite with --tests PATHS")
    store = run.experiment.store
    cache = run.experiment.cache
    baseline = held.baseline
    # Every program the search evaluated, with the individual (and operator) that first made it.
    firsts = [(identifier, label) for identifier, label, here, _ in store.lineage() if here and label != "original"]
    records = {record.id: record for record in store.individuals([identifier for identifier, _ in firsts])}
    feasible: list[tuple[str, Patch, Evaluation]] = []
    for identifier, label in firsts:
        evaluation = cache.get(records[identifier].tree_hash)
        if evaluation is None or not evaluation.ok:
            continue
        if violation(run.config.objectives.constraint, evaluation.measures, ok=True, test_count=run.test_count) == 0:
            feasible.append((operator_of_label(label), Patch.from_json(records[identifier].patch), evaluation))
    front = [(member["id"], run.patch(member)) for member in run.members()]
    variants = [apply(run.program, patch) for _, patch, _ in feasible] + [apply(run.program, p) for _, p in front]
    outcomes = held.outcomes(variants)
    flags = [
        overfits(evaluation.tests, run.baseline.tests, found, baseline)
        for (_, _, evaluation), found in zip(feasible, outcomes[: len(feasible)], strict=True)
    ]
    members: dict[str, Any] = {}
    for (member_id, _), variant, found in zip(front, variants[len(feasible) :], outcomes[len(feasible) :], strict=True):
        training = cache[variant.tree_hash].tests if variant.tree_hash in cache else {}
        members[member_id] = {
            **test_counts(found),
            "regressions": regressions(found, baseline),
            "overfits": overfits(training, run.baseline.tests, found, baseline),
        }
    by_operator: dict[str, list[bool]] = {}
    for (operator, _, _), flag in zip(feasible, flags, strict=True):
        by_operator.setdefault(operator, []).append(flag)
    groups = {
        "model": [flag for (operator, _, _), flag in zip(feasible, flags, strict=True) if operator == "llm"],
        "classic": [flag for (operator, _, _), flag in zip(feasible, flags, strict=True) if operator != "llm"],
    }
    figures = {
        "tests": tests,
        "baseline": test_counts(baseline),
        "front": _share([member["overfits"] for member in members.values()]),
        "feasible": _share(flags),
        "groups": {name: _share(group) for name, group in groups.items()},
        "operators": {name: _share(group) for name, group in sorted(by_operator.items())},
        "members": members,
    }
    store.set_meta("validation", figures)
    run.summary["validation"] = figures
    update_summary(run.folder, run.summary, {})
    return figures


def validation_table(figures: dict[str, Any]) -> Table:
    """The overfitting figures of a validation, as `gi validate` and `gi show` print them."""
    table = Table(title=f"Overfitting under {', '.join(figures['tests'])}")
    for column in ("programs", "checked", "overfit", "rate"):
        table.add_column(column, justify="left" if column == "programs" else "right")
    rows = [("front", figures["front"]), ("every feasible program", figures["feasible"])]
    rows += [(f"{name} edits", share) for name, share in figures["groups"].items() if share["checked"]]
    rows += [(f"  by {name}", share) for name, share in figures["operators"].items()]
    for name, share in rows:
        rate = "-" if share["rate"] is None else f"{share['rate']:.0%}"
        table.add_row(name, str(share["checked"]), str(share["overfit"]), rate)
    return table
