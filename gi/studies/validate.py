"""Revalidation: a finished run's front, and every feasible program its search made, under
other tests (a suite written later, another project's), or again under its own held-out tests.

The figures, by `gi.fitness.outcomes.overfits` (the one definition), with the given suite in the
role of the held-out tests, and never counting the original program (it is no patch):

    front       the share of the front's members that overfit
    feasible    the share of every feasible program the search evaluated that overfits
    operators   the same, by the operator that first made the program (the language model's
                `llm`, each classic operator, each crossover), and as `model` against `classic`

Most overfitting programs inherit their overfit: a parent already overfits, and the last edit
(whose operator made the program) only rides along. So every share also splits its overfitting
programs into `introduced` (no parent overfits: the operator's edit made the overfit) and
`inherited`, and `introduced_rate` is introduced over the programs none of whose parents
overfits (those in which an edit could introduce one). The language model against the classic
operators is compared on introduced_rate.

Beside the suite's verdict, the behaviour oracle (gi.engine.oracle) judges each front member on
inputs no test tries (`behaviour`: the members it checked, those it found to change behaviour,
and how many only the suite, only the oracle, or both call overfitting); its verdicts are the
run's, recorded, so it adds time only for members the run did not judge.

A suite is copied into each held-out copy of the program (under gi_validate/), never into the
program folder. Outcomes of the run's own held-out tests are cached in the run store, marked as
a study's (the run's own `measurements` stay what the run measured); those of a suite are not
(it may change before the next `gi validate`). A suite the original passes no test of cannot
find overfitting: it is refused (`SuiteError`) and the stored figures stay as they were.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from gi.algorithms.variation import operator_of_label
from gi.engine.held_out import HeldOut
from gi.engine.oracle import unchecked_because
from gi.engine.run_folder import update_summary
from gi.fitness.objectives import violation
from gi.fitness.oracle import CHANGED, SAME
from gi.fitness.outcomes import failed_tests, overfits, regressions, test_counts
from gi.model.errors import SuiteError, UsageError
from gi.model.patch import Patch, Variant, apply
from gi.model.results import Evaluation
from gi.reports.tables import (
    VALIDATION_COLUMNS,
    VALIDATION_LEGEND,
    behaviour_split,
    validation_baseline,
    validation_rows,
)
from gi.studies.rerun import FinishedRun

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


def _share(flags: Sequence[bool], parents_overfit: Sequence[bool] | None = None) -> dict[str, Any]:
    """How many programs were checked and overfit, and the rate; with `parents_overfit` (for each
    program, whether a parent overfits), the overfits it introduced and inherited, and the rate
    of introduced overfits among the programs with no overfitting parent."""
    share: dict[str, Any] = {
        "checked": len(flags),
        "overfit": sum(flags),
        "rate": round(sum(flags) / len(flags), 4) if flags else None,
    }
    if parents_overfit is not None:
        clean = sum(not parent for parent in parents_overfit)
        introduced = sum(flag and not parent for flag, parent in zip(flags, parents_overfit, strict=True))
        share |= {
            "introduced": introduced,
            "inherited": sum(flag and parent for flag, parent in zip(flags, parents_overfit, strict=True)),
            "clean_parents": clean,
            "introduced_rate": round(introduced / clean, 4) if clean else None,
        }
    return share


@dataclasses.dataclass(frozen=True)
class _Program:
    """A feasible program the search made: who made it first, with which operator, from which parents."""

    individual: str
    operator: str
    parents: tuple[str, ...]
    patch: Patch
    evaluation: Evaluation


def _judged_suite(run: FinishedRun, paths: Sequence[Path] | None) -> tuple[HeldOut, list[str], str]:
    """The held-out side of a validation: the suite at `paths` (None: the run's own held-out
    tests), the names it is reported under, and the file or key to name in an error."""
    if paths:
        files = suite_files(paths)
        evaluator = run.experiment.evaluator
        evaluator.settings = dataclasses.replace(
            evaluator.settings, holdout=(SUITE_FOLDER,), holdout_ids=(), holdout_files=files
        )
        named = [str(path) for path in paths]
        return HeldOut(evaluator, None, run.config.tests.test_timeout), named, " ".join(named)
    if run.experiment.held_out is not None:
        return run.experiment.held_out, ["the run's held-out tests"], f"{run.config.source}: tests.holdout"
    raise UsageError(f"{run.folder}: the run has no held-out tests; name a suite with --tests PATHS")


def check_baseline(where: str, baseline: Mapping[str, str], *, repair: bool) -> None:
    """Refuse a suite that cannot find overfitting: one that collects no test on the original,
    or (outside a repair, where only tests the original passes count) one the original passes
    none of."""
    counts = test_counts(baseline)
    if not baseline:
        raise SuiteError(f"{where}: collects no test on the original program; nothing can be validated")
    if counts["passed"] == 0 and not repair:
        raise SuiteError(
            f"{where}: the original program passes none of its {len(baseline)} tests ({counts['failed']} failed,"
            f" {counts['skipped']} skipped), so no program can overfit them; the stored figures are left as they were"
        )


def validate(run: FinishedRun, paths: Sequence[Path] | None) -> dict[str, Any]:
    """Run the front and every feasible program of the search under the suite at `paths` (None:
    the run's own held-out tests); store the figures with the run and in summary.json."""
    held, tests, where = _judged_suite(run, paths)
    baseline = held.baseline
    check_baseline(where, baseline, repair=failed_tests(run.baseline.tests) > 0)
    store = run.experiment.store
    cache = run.experiment.cache
    original = apply(run.program, Patch()).tree_hash
    # Every individual, and the programs the search evaluated with the individual (and operator)
    # that first made them.
    lineage = list(store.lineage())
    records = {record.id: record for record in store.individuals([identifier for identifier, *_ in lineage])}
    feasible: list[_Program] = []
    for identifier, label, here, _ in lineage:
        record = records[identifier]
        if not here or label == "original" or record.tree_hash == original:
            continue
        evaluation = cache.get(record.tree_hash)
        if evaluation is None or not evaluation.ok:
            continue
        if violation(run.config.objectives.constraint, evaluation.measures, ok=True, test_count=run.test_count) == 0:
            patch = Patch.from_json(record.patch)
            feasible.append(_Program(identifier, operator_of_label(label), record.parents, patch, evaluation))
    front = [(member["id"], run.patch(member)) for member in run.members()]
    variants = [apply(run.program, program.patch) for program in feasible] + [apply(run.program, p) for _, p in front]
    outcomes = held.outcomes(variants)
    flags = [
        overfits(program.evaluation.tests, run.baseline.tests, found, baseline)
        for program, found in zip(feasible, outcomes[: len(feasible)], strict=True)
    ]
    overfitting = {records[program.individual].tree_hash for program, flag in zip(feasible, flags, strict=True) if flag}

    def parent_overfits(parents: Sequence[str]) -> bool:
        return any(parent in records and records[parent].tree_hash in overfitting for parent in parents)

    inherited = [parent_overfits(program.parents) for program in feasible]
    members: dict[str, Any] = {}
    front_flags: list[bool] = []
    front_parents: list[bool] = []
    for (member_id, _), variant, found in zip(front, variants[len(feasible) :], outcomes[len(feasible) :], strict=True):
        training = cache[variant.tree_hash].tests if variant.tree_hash in cache else {}
        members[member_id] = {
            **test_counts(found),
            "regressions": regressions(found, baseline),
            "overfits": overfits(training, run.baseline.tests, found, baseline),
        }
        if variant.tree_hash != original:  # the original is no patch: it is in no rate
            front_flags.append(members[member_id]["overfits"])
            front_parents.append(member_id in records and parent_overfits(records[member_id].parents))
    by_operator: dict[str, tuple[list[bool], list[bool]]] = {}
    groups: dict[str, tuple[list[bool], list[bool]]] = {"model": ([], []), "classic": ([], [])}
    for program, flag, parent in zip(feasible, flags, inherited, strict=True):
        for chosen in (by_operator.setdefault(program.operator, ([], [])), groups[_group(program.operator)]):
            chosen[0].append(flag)
            chosen[1].append(parent)
    behaviour = _behaviour(run, front, variants[len(feasible) :], members)
    figures = {
        "tests": tests,
        "baseline": test_counts(baseline),
        "front": _share(front_flags, front_parents),
        "behaviour": behaviour,
        "feasible": _share(flags, inherited),
        "groups": {name: _share(*group) for name, group in groups.items()},
        "operators": {name: _share(*group) for name, group in sorted(by_operator.items())},
        "members": members,
    }
    store.set_meta("validation", figures)
    run.summary["validation"] = figures
    update_summary(run.folder, run.summary, {})
    return figures


def _behaviour(
    run: FinishedRun, front: Sequence[tuple[str, Patch]], variants: Sequence[Variant], members: dict[str, Any]
) -> dict[str, Any] | None:
    """The behaviour oracle's verdict on each front member (into `members`: its verdict, why and
    counterexample), and the overfitting it finds beside the suite's: the members it checked, those
    it found to change behaviour, and of the members both judged, those only the suite flags,
    only the oracle flags, and both. None when tests.oracle is off."""
    oracle = run.experiment.oracle(run.baseline)
    if oracle is None:
        return None
    original = apply(run.program, Patch()).tree_hash
    cache = run.experiment.cache
    checked = []
    for (member_id, _), variant in zip(front, variants, strict=True):
        evaluation = cache.get(variant.tree_hash)
        if variant.tree_hash == original or evaluation is None or unchecked_because(evaluation, run.baseline):
            continue
        checked.append((member_id, variant))
    verdicts = oracle.check([variant for _, variant in checked])
    run.experiment.progress.warnings += [w for w in oracle.warnings if w not in run.experiment.progress.warnings]
    flags = []
    split = dict.fromkeys(("suite_only", "oracle_only", "both"), 0)
    for member_id, variant in checked:
        verdict = verdicts[variant.tree_hash]
        members[member_id]["behaviour"] = {"verdict": verdict.verdict, "why": verdict.why,
                                           "counterexample": verdict.counterexample}  # fmt: skip
        if verdict.verdict not in (SAME, CHANGED):
            continue
        changed, suite = verdict.verdict == CHANGED, bool(members[member_id]["overfits"])
        flags.append(changed)
        if changed or suite:
            split["both" if changed and suite else "oracle_only" if changed else "suite_only"] += 1
    return {**_share(flags), **split, "seconds": round(oracle.spent, 3)}


def _group(operator: str) -> str:
    """`model` for the language model's edits, `classic` for every other operator's."""
    return "model" if operator == "llm" else "classic"


def validation_table(figures: dict[str, Any]) -> Table:
    """The overfitting figures of a validation, as `gi validate` and `gi show` print them."""
    title = f"Overfitting under {', '.join(figures['tests'])}"
    split = behaviour_split(figures)
    caption = f"{validation_baseline(figures)}; {VALIDATION_LEGEND}" + (f"; {split}" if split else "")
    table = Table(title=title, caption=caption)
    table.add_column("programs", no_wrap=True)
    for column in VALIDATION_COLUMNS:
        table.add_column(column, justify="right", no_wrap=True)
    for name, cells in validation_rows(figures):
        table.add_row(name, *cells)
    return table
