"""The summary builder: what a finished (or resumed) run writes into its folder, summary.json
and evaluations.jsonl, from the run's store, config and front.

`SummaryBuilder` validates the front a search leaves (minimal patches, held-out tests, the
rigorous re-timing of speed-ups) from the run's services; `write_report` writes the files.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gi.algorithms import Search
from gi.engine.accounting import count_by_operator
from gi.engine.front_checks import plausible_patches, without_riders
from gi.engine.held_out import HeldOut, front_members, generalisation_gap
from gi.engine.oracle import Oracle, unchecked_because
from gi.engine.recorded import replay_comparison
from gi.engine.service import CONFIRMATION, EvaluationService
from gi.engine.storage import RunStorage
from gi.engine.timing import OriginalTiming
from gi.fitness.objectives import Objective, objective_values
from gi.fitness.oracle import Behaviour
from gi.fitness.oracle.search import not_checked
from gi.fitness.outcomes import overfits, regressions, test_counts
from gi.fitness.statistics import holm
from gi.fitness.tests import NOT_FAILING
from gi.model.describe import describe_patch
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.model.results import Evaluation, Status
from gi.model.sites import Location
from gi.mutators import Operator
from gi.mutators.base import CONFIGURED
from gi.populations import Individual

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
        if entry.get("untested"):  # mutators.untested: every edit where no training test executes
            record["untested"] = True
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
        record["behaviour"] = entry.get("behaviour")
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
        "behaviour_changed_rate": _changed_rate(members, front, original),
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


def _changed_rate(
    members: Sequence[Mapping[str, Any]], front: Sequence[Mapping[str, Any]], original: str | None
) -> float | None:
    """The share of the front's patches (the original aside) the oracle found to change behaviour,
    over those it checked (a verdict of "same" or "changed"); None when it checked none."""
    checked = [
        record["behaviour"]["verdict"]
        for record, entry in zip(members, front, strict=True)
        if record.get("behaviour")
        and record["behaviour"]["verdict"] in ("same", "changed")
        and entry["variant"].tree_hash != original
    ]
    return round(checked.count("changed") / len(checked), 4) if checked else None


@dataclass(frozen=True)
class RunSetup:
    """What a run found out before its search, for its summary: where it steered the edits and
    how it evaluates."""

    #: Ochiai score of each suspicious line, by (file, line).
    suspicious: Mapping[tuple[str, int], float]
    #: Each function's share of the workload's time.
    hot: Mapping[str, float]
    #: Functions gi never edits (the workload's own, in an editable file).
    protected: frozenset[str]
    #: How the training tests run ("warm" or "cold") and why.
    engine: str
    engine_reason: str
    #: The isolation the sandbox gives, in one line.
    sandbox: str
    #: The sites no training test executes, where the config lets operators edit them
    #: (mutators.untested; empty otherwise: no edit goes there).
    unexecuted: frozenset[Location] = frozenset()
    #: Sites in all, those no training test executes and those left out (None: no coverage).
    sites: Mapping[str, int] | None = None
    #: Why the search stopped (reason, generation, programs evaluated).
    stopped: Mapping[str, Any] = field(default_factory=dict)


class SummaryBuilder:
    """Validates a finished search's front (minimal patches, held-out tests, rigorous speed-ups)
    and writes the run folder's summary from the run's services."""

    def __init__(
        self,
        config: Config,
        program: Program,
        objectives: Sequence[Objective],
        storage: RunStorage,
        evaluations: EvaluationService,
        timing: OriginalTiming,
        held_out: HeldOut | None,
        operators: Sequence[Operator],
        setup: RunSetup,
        oracle: Oracle | None = None,
    ) -> None:
        """`oracle`: the behaviour oracle that judges the front's members (None: tests.oracle is off)."""
        self.oracle = oracle
        self.config = config
        self.program = program
        self.objectives = tuple(objectives)
        self.storage = storage
        self.evaluations = evaluations
        self.timing = timing
        self.held_out = held_out
        self.operators = tuple(operators)
        self.setup = setup

    def write(self, search: Search, baseline: Evaluation, wall_seconds: float) -> dict[str, Any]:
        """Validate the front (minimal patches, held-out tests) and write the run folder."""
        store, cache = self.storage.store, self.evaluations.cache
        members = front_members(search.archive.members)
        original = apply(self.program, Patch())
        holdout_baseline = self.held_out.baseline if self.held_out is not None else None
        names = [objective.name for objective in self.objectives]
        variants = []
        for member in members:
            variant = apply(self.program, member.patch)
            minimal = apply(self.program, variant.minimal())
            variants.append(minimal if minimal.tree_hash == variant.tree_hash else variant)
        held = self.held_out.outcomes(variants) if self.held_out is not None else [{} for _ in variants]
        # Every individual that made the original program: the summary calls it `original`.
        originals = {
            identifier
            for identifier, _, _, made in store.lineage()
            if made is not None and made["tree_hash"] == original.tree_hash
        }
        front = [
            self._entry(member, variant, outcomes, cache[member.tree_hash], baseline, names, originals, original)
            for member, variant, outcomes in zip(members, variants, held, strict=True)
        ]
        _correct_for_many(front)
        front, riding = without_riders(front, self.objectives, self.timing, self.program)
        plausible = plausible_patches(
            self.program, store, self.held_out, baseline, self.setup.suspicious, self.evaluations.confirm, self.oracle
        )
        oracle = self._behaviour(front, baseline, original)
        timed_out = self._timed_out_share(original.tree_hash)
        if (noise := self.timing.noise()) and noise not in self.evaluations.progress.warnings:
            self.evaluations.progress.warnings.append(noise)
        baseline_objectives = objective_values(self.objectives, baseline.measures, search.worst())
        operators = count_by_operator(search.accounting, store.lineage(), [m.id for m in members], self.operators)
        setup, measurements = self.setup, self.storage.measurements
        return write_report(
            self.storage.folder,
            config=self.config,
            objectives=self.objectives,
            baseline=baseline,
            baseline_objectives=dict(zip(names, baseline_objectives, strict=True)),
            baseline_holdout=holdout_baseline,
            front=front,
            history=store.history(),
            evaluation_log=self._evaluation_log(),
            original_ids=originals,
            evaluations=len(cache) - 1,  # every program measured, but the original
            cache_hits=self.evaluations.progress.cache_hits,
            wall_seconds=wall_seconds,
            sandbox=setup.sandbox,
            extra={
                "fault_localisation_formula": self.config.mutators.suspiciousness if setup.suspicious else None,
                "fault_localisation": [
                    {"file": file, "line": line, "score": round(score, 4)}
                    for (file, line), score in sorted(setup.suspicious.items(), key=lambda item: (-item[1], item[0]))[
                        :10
                    ]
                ],
                "hot_functions": {name: round(share, 4) for name, share in sorted(setup.hot.items())},
                "protected_functions": sorted(setup.protected),
                "timed_out_share": round(timed_out, 4),
                "sites": dict(setup.sites) if setup.sites is not None else None,
                "held_out_tests": len(self.held_out.baseline or {}) if self.held_out is not None else 0,
                "engine": {
                    "training_tests": setup.engine,
                    "why": setup.engine_reason,
                    "held_out_tests": self.held_out.engine[0] if self.held_out is not None else None,
                    "held_out_why": self.held_out.engine[1] if self.held_out is not None else None,
                    "backend": self.config.evaluation.backend,
                },
                "runtime_drift": self.timing.drift,
                "measurements": measurements.provenance({h: e for h, e in cache.items() if h != original.tree_hash}),
                "replay": (
                    replay_comparison(measurements.recorded, store) if measurements.recorded is not None else None
                ),
                "operators": operators,
                "plausible": plausible,
                "tests": self._tests_section(baseline),
                "riders": riding,
                "stopped": dict(setup.stopped),
                "generalisation_gap": generalisation_gap(store.generalisation()),
                "holdout_split": measurements.found("holdout_split"),
                "differential_checks": len(measurements.found("differential_cases") or []),
                "oracle": oracle,
                "validation": store.get_meta("validation"),  # from `gi validate`
                "quality_diversity": quality_diversity(search, originals),
                "evaluators": evaluators_busy(store.get_meta("evaluators"), self.config.evaluation.workers),
                **self._sections(operators),
                "warnings": self.evaluations.progress.warnings,
            },
        )

    def _behaviour(
        self, front: Sequence[dict[str, Any]], baseline: Evaluation, original: Variant
    ) -> dict[str, Any] | None:
        """Each member's behaviour verdict (into its entry): the oracle's for those that pass every
        training test the original passes, "not checked" and why for the others; summary.json's
        `oracle` section, None when tests.oracle is off."""
        judged = []
        for entry in front:
            if entry["variant"].tree_hash == original.tree_hash:
                entry["behaviour"] = not_checked("the original program").to_json()
            elif self.oracle is None:
                entry["behaviour"] = not_checked("tests.oracle is 'off'").to_json()
            elif why := unchecked_because(entry["evaluation"], baseline):
                entry["behaviour"] = not_checked(why).to_json()
            else:
                judged.append(entry)
        if self.oracle is None:
            return None
        verdicts = self.oracle.check([entry["variant"] for entry in judged])
        for entry in judged:
            entry["behaviour"] = verdicts[entry["variant"].tree_hash].to_json()
        for warning in self.oracle.warnings:
            if warning not in self.evaluations.progress.warnings:
                self.evaluations.progress.warnings.append(warning)
        checked = [Behaviour.from_json(entry["behaviour"]) for entry in judged]
        return self.oracle.section(checked, "repair" if self.oracle.repairing else "auto")

    def _evaluation_log(self) -> Iterator[tuple[int, str, int, dict[str, Any]]]:
        """The store's evaluations in the order made, each partial one with its confirmation
        (every training test's run), if one was made."""
        confirmed = self.storage.store.measurements(f"{CONFIRMATION}:")
        for seq, individual, generation, stored in self.storage.store.evaluation_log():
            confirmation = confirmed.get(f"{CONFIRMATION}:{stored['tree_hash']}")
            yield (
                seq,
                individual,
                generation,
                stored if confirmation is None else {**stored, "confirmation": confirmation},
            )

    def _tests_section(self, baseline: Evaluation) -> dict[str, Any]:
        """How the training tests judged the search (summary.json `tests`): tests.select, the
        training tests, how many an evaluation ran on average (every program the search measured
        but the original; a run that stopped at a failure ran fewer), how many evaluations ran
        a selection, and the confirmations: programs every test ran on before they could count
        as passing, and those whose verdict that changed."""
        store = self.storage.store
        ran: list[float] = []
        partial = 0
        verdicts: dict[str, tuple[Any, Any]] = {}
        for _, individual, _, evaluation in store.evaluation_log():
            if individual == "baseline":
                continue
            tests = evaluation.get("tests", {})
            ran.append(evaluation["measures"].get("tests_run", sum(o != "not_run" for o in tests.values())))
            partial += bool(evaluation.get("partial"))
            verdicts[evaluation["tree_hash"]] = (evaluation["status"], evaluation["measures"].get("failed_tests"))
        confirmed = {
            key.partition(":")[2]: (value["status"], value["measures"].get("failed_tests"))
            for key, value in store.measurements(f"{CONFIRMATION}:").items()
        }
        training = len(baseline.tests)
        return {
            "select": self.config.tests.select,
            "training": training,
            "evaluations": len(ran),
            "run_per_evaluation": round(sum(ran) / len(ran), 2) if ran else None,
            "selected_evaluations": partial,
            "confirmed": len(confirmed),
            "overturned": sum(verdicts.get(tree_hash, verdict) != verdict for tree_hash, verdict in confirmed.items()),
        }

    def _sections(self, accounting: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
        """The sections of summary.json operators have of their own (the language model's `llm`):
        one per operator a config can build from a section of its own, null when the run has none."""
        sections: dict[str, Any] = dict.fromkeys(CONFIGURED.names())
        for operator in self.operators:
            rows = {name: row for name, row in accounting.items() if name.split(".")[0] == operator.name}
            section = operator.report(rows)
            if section is not None:
                sections[operator.name] = section
        return sections

    def _entry(
        self,
        member: Individual,
        variant: Variant,
        outcomes: Mapping[str, str],
        evaluation: Evaluation,
        baseline: Evaluation,
        names: Sequence[str],
        originals: Collection[str],
        original: Variant,
    ) -> dict[str, Any]:
        """One front member's entry: its objectives, the studies' results that still fit its
        patch, its rigorous speed-up and its held-out verdict."""
        store = self.storage.store
        entry: dict[str, Any] = {
            "member": member,
            "variant": variant,
            "evaluation": evaluation,
            "objectives": dict(zip(names, member.objectives, strict=True)) if member.objectives else {},
        }
        # The studies keep their results by the summary's id (`original` for the original).
        known_as = ORIGINAL if member.id in originals or not variant.changed_files else member.id
        minimised = store.get_meta("minimised") or {}
        smaller = minimised.get(known_as, minimised.get(member.id))
        if smaller is not None and smaller["of_edits"] == variant.patch.to_json():  # see gi/studies/minimize.py
            entry["minimal"] = {key: value for key, value in smaller.items() if key != "of_edits"}
            entry["minimal_diff"] = apply(self.program, Patch.from_json(smaller["edits"])).diff()
        ablated = store.get_meta("ablation") or {}
        ablation = ablated.get(known_as, ablated.get(member.id))
        if ablation is not None and ablation["of_edits"] == variant.patch.to_json():  # see gi/studies/ablation.py
            entry["ablation"] = ablation["edits"]
        evaluator = self.evaluations.evaluator
        if variant.patch.edits and all(edit.target in self.setup.unexecuted for edit in variant.patch.edits):
            entry["untested"] = True  # every edit where no training test executes: no test judged it
        if variant.changed_files and evaluation.ok and evaluator.written_by_model(variant):
            checked = evaluator.second_run(variant, evaluation.tests)
            entry["second_run"] = checked.to_json()
            if not checked.agrees:
                self.evaluations.progress.warnings.append(
                    f"front member {member.id}: {checked.detail}: its scores are forged"
                )
        if self.timing.active and member.fitness.feasible and variant.changed_files:
            entry["speedup"] = self.timing.speedup(original, variant)
            if entry["speedup"].get("tampered"):
                self.evaluations.progress.warnings.append(
                    f"front member {member.id}: {entry['speedup']['error']}: its timings are forged"
                )
        holdout_baseline = self.held_out.baseline if self.held_out is not None else None
        if holdout_baseline is not None:
            entry["holdout"] = {
                **test_counts(outcomes),
                "failing": sorted(test for test, outcome in outcomes.items() if outcome not in NOT_FAILING),
                "regressions": regressions(outcomes, holdout_baseline),
            }
            entry["overfits"] = overfits(evaluation.tests, baseline.tests, outcomes, holdout_baseline)
        return entry

    def _timed_out_share(self, original: str) -> float:
        """The share of evaluations a time limit decided (the whole run's, or one test's); warned
        about past 10%: the limits may be too tight for this machine's load."""
        judged = [e for tree_hash, e in self.evaluations.cache.items() if tree_hash != original]
        hit = sum(e.status is Status.TIMED_OUT or "timed_out" in e.tests.values() for e in judged)
        share = hit / len(judged) if judged else 0.0
        if share > 0.1:
            self.evaluations.progress.warnings.append(
                f"{share:.0%} of the evaluations ran into a time limit (tests.timeout, tests.test_timeout):"
                " if the variants do not loop forever, the limits are too tight for this machine"
            )
        return share


def quality_diversity(search: Search, originals: Collection[str]) -> dict[str, Any] | None:
    """The grid a run kept (search.grid): its features, QD-score and coverage, and each cell's
    elite (`original` for the original program), with its quality and objective values."""
    grid, settings = search.grid, search.grid_settings
    if grid is None or settings is None:
        return None
    names = [objective.name for objective in search.objectives]
    elites = [
        {
            "cell": list(cell),
            "id": ORIGINAL if elite.id in originals else elite.id,
            "quality": round(grid.quality(elite), 6),
            "features": list(elite.features or ()),
            "objectives": dict(zip(names, elite.objectives or (), strict=False)),
        }
        for cell, elite in sorted(grid.elites.items())
    ]
    return {
        "features": settings.features.describe(),
        "cells": grid.cells,
        "filled": len(grid.elites),
        "qd_score": round(grid.qd_score(), 6),
        "coverage": round(grid.coverage(), 6),
        "unit": grid.unit,
        "elites": elites,
    }


def evaluators_busy(spent: Mapping[str, Any] | None, workers: int) -> dict[str, Any] | None:
    """How busy the evaluators were during the search: their seconds evaluating over `workers`
    times the generations' wall seconds (as the loop added them up, gi.run.loop.EVALUATORS)."""
    loop = float((spent or {}).get("loop_seconds", 0.0))
    busy = float((spent or {}).get("busy_seconds", 0.0))
    if loop <= 0:
        return None
    return {"workers": workers, "busy_seconds": round(busy, 3), "loop_seconds": round(loop, 3),
            "busy": round(busy / (workers * loop), 4)}  # fmt: skip


def _correct_for_many(front: list[dict[str, Any]]) -> None:
    """Every front member's speed-up is a test of its own: their p-values are adjusted by Holm's
    method over the members measured (as `gi compare` adjusts its pairs), and a speed-up is
    significant only when its adjusted p is below 0.05 and its interval excludes 1."""
    measured = [entry for entry in front if "p_value" in entry.get("speedup", {})]
    p_values = [float(entry["speedup"]["p_value"]) for entry in measured]
    for entry, adjusted in zip(measured, holm(p_values), strict=True):
        speedup = entry["speedup"]
        excludes_one = speedup["low"] > 1.0 or speedup["high"] < 1.0
        entry["speedup"] = {**speedup, "p_holm": float(f"{adjusted:.4g}"),
                            "significant": adjusted < 0.05 and excludes_one}  # fmt: skip
