"""Held-out tests during the run: the generalisation gap over time.

After every generation, the front's new members (the archive's feasible members whose
programs were not on it after the previous generation) also run the held-out tests, and the
generation records how many were checked and how many overfit (`gi.fitness.outcomes.overfits`, the
one definition). The original program is never counted: it cannot overfit, and it is on the
front of every run that minimises patch size, so counting it would only dilute the rate. A
generation that checked no program records a rate of null (nothing was measured), not 0.
The outcomes go to the run store, never to the search: selection reads only the training
evaluations, so a run with held-out tests selects exactly what the same run without them
selects. The final front reuses these outcomes (a cache by tree hash).

Held-out tests are tests.holdout's paths, the test ids tests.holdout_fraction splits off the
training tests (`split_tests`), and the checks tests.differential generates
(`gi.fitness.differential`); `configure_held_out` sets the last two up on the original, the
split from the test ids pytest collects on the cold path (the reference, whatever the engine).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from gi.config import Config
from gi.engine.evaluation import Evaluator
from gi.engine.recorded import Measurements, as_is
from gi.engine.run_folder import gap_rate
from gi.fitness.differential import TEST_FILE as DIFFERENTIAL_FILE
from gi.fitness.differential import DifferentialError, checks_module
from gi.fitness.outcomes import merge_retry, overfits, per_test_limits
from gi.fitness.pytest_diagnosis import cannot_run
from gi.fitness.tests import TestRun
from gi.model.errors import ConfigError, ProgramError
from gi.model.patch import Patch, Variant, apply
from gi.model.results import Evaluation
from gi.populations import Individual

#: Mixed with the run's seed for the split of test ids, so the split has a stream of its own.
SPLIT_STREAM = 13


def split_tests(ids: Iterable[str], fraction: float, seed: int) -> tuple[list[str], list[str]]:
    """A seeded split of test ids into (training, held-out): round(fraction x n) held out, at
    least one, and at least one left for training; the same seed gives the same split."""
    ordered = sorted(set(ids))
    count = min(len(ordered) - 1, max(1, round(fraction * len(ordered))))
    rng = np.random.default_rng([seed, SPLIT_STREAM])
    chosen = set(rng.choice(len(ordered), size=count, replace=False).tolist())
    return [t for i, t in enumerate(ordered) if i not in chosen], [t for i, t in enumerate(ordered) if i in chosen]


def configure_held_out(
    config: Config, evaluator: Evaluator, measurements: Measurements, original: Variant
) -> list[str]:
    """Set the evaluator's held-out side up as the config asks, beyond tests.holdout: the split
    of tests.holdout_fraction (test ids collected on the original) and the checks of
    tests.differential (recorded on the original). Both are recorded measurements, so a resumed
    run and a replay keep them. Returns warnings for the run."""
    warnings = []
    fraction = config.tests.holdout_fraction
    if fraction:

        def split_collected() -> dict[str, list[str]]:
            run = evaluator.collected(original)  # on the cold path: the reference, whatever the engine
            python = evaluator.settings.pytest.python
            if not run.outcomes and (problem := cannot_run(run, config.tests.train, python, config.tests.timeout)):
                raise ProgramError(f"{config.source}: the original's training tests cannot run: {problem}")
            collected = list(run.outcomes)
            if len(collected) < 2:
                raise ConfigError(
                    f"{config.source}: tests.holdout_fraction = {fraction:g}, but tests.train collects"
                    f" {len(collected)} test(s); a split needs at least 2"
                )
            train, held = split_tests(collected, fraction, config.experiment.seed)
            return {"train": train, "holdout": held}

        split = measurements.get("holdout_split", split_collected, encode=as_is, decode=as_is)
        evaluator.settings = dataclasses.replace(
            evaluator.settings, train=tuple(split["train"]), holdout_ids=tuple(split["holdout"])
        )
    if config.tests.differential:

        def record_cases() -> list[list[str]]:
            try:
                return evaluator.differential_cases(original, config.tests.differential_inputs)
            except DifferentialError as error:
                raise ProgramError(f"{config.source}: tests.differential: {error}") from None

        cases = measurements.get("differential_cases", record_cases, encode=as_is, decode=as_is)
        if cases:
            evaluator.settings = dataclasses.replace(
                evaluator.settings,
                holdout=(*evaluator.settings.holdout, DIFFERENTIAL_FILE),
                holdout_files=((DIFFERENTIAL_FILE, checks_module(cases)),),
            )
        else:
            warnings.append(
                "tests.differential: the training tests call no public function of the editable files with literal"
                " arguments, and tests.differential_inputs lists none: there is no differential check"
            )
    return warnings


def front_members(members: Sequence[Individual]) -> list[Individual]:
    """What the report calls the front: the archive's feasible members, all of them if none is."""
    feasible = [member for member in members if member.fitness.feasible]
    return feasible or list(members)


class HeldOut:
    """The held-out tests of one run: the original's outcomes, and every program's, by tree hash."""

    def __init__(self, evaluator: Evaluator, measurements: Measurements | None, test_timeout: float) -> None:
        """`measurements`: where outcomes are recorded and found again, a replay's in the
        recorded run too (None: kept for this object's life, as for a suite `gi validate` brings)."""
        self.evaluator = evaluator
        self.measurements = measurements
        self.test_timeout = test_timeout
        self.runs: dict[str, tuple[dict[str, str], dict[str, float]]] = {}
        self.original = apply(evaluator.program, Patch())
        self._limits: dict[str, float] | None = None

    @property
    def baseline(self) -> dict[str, str]:
        """The original's held-out outcomes (run once, then read from the store)."""
        if not self._recorded(self.original.tree_hash):
            self._keep(self.original, self._measure(self.original, {}))
        return self.runs[self.original.tree_hash][0]

    def limits(self) -> dict[str, float]:
        """Each held-out test's time limit, from its time in the original's run."""
        if self._limits is None:
            self.baseline  # noqa: B018 (runs the original once)
            self._limits = per_test_limits(self.runs[self.original.tree_hash][1], self.test_timeout)
        return self._limits

    def _measure(self, variant: Variant, limits: Mapping[str, float]) -> TestRun:
        """One held-out run; a test that timed out is run again before it counts. What a forged
        run says is not taken: each of its tests counts as an error (a variant that forges only
        where it is judged at the end must not pass for one that generalises)."""
        run = self.evaluator.holdout(variant, limits)
        if "timed_out" in run.outcomes.values() and not run.forged:
            run = merge_retry(run, self.evaluator.holdout(variant, limits))
        if run.forged:
            run = dataclasses.replace(run, outcomes=dict.fromkeys(run.outcomes, "error"))
        return run

    def _keep(self, variant: Variant, run: TestRun) -> None:
        self.runs[variant.tree_hash] = (dict(run.outcomes), dict(run.durations))
        if self.measurements is not None:
            self.measurements.record(
                f"holdout:{variant.tree_hash}", {"outcomes": run.outcomes, "durations": run.durations}
            )

    def _recorded(self, tree_hash: str) -> bool:
        """Whether the program's held-out run is known (found in the records, if not in memory)."""
        if tree_hash not in self.runs and self.measurements is not None:
            found = self.measurements.found(f"holdout:{tree_hash}")
            if found is not None:
                self.runs[tree_hash] = (found["outcomes"], found["durations"])
        return tree_hash in self.runs

    def outcomes(self, variants: Iterable[Variant]) -> list[dict[str, str]]:
        """The held-out outcomes of each variant; the programs not yet run are run in parallel."""
        variants = list(variants)
        limits = self.limits()
        missing = list({v.tree_hash: v for v in variants if not self._recorded(v.tree_hash)}.values())
        with ThreadPoolExecutor(max_workers=max(1, self.evaluator.settings.workers)) as pool:
            runs = list(pool.map(lambda variant: self._measure(variant, limits), missing))
        for variant, run in zip(missing, runs, strict=True):
            self._keep(variant, run)
        return [self.runs[variant.tree_hash][0] for variant in variants]

    def generation(
        self,
        generation: int,
        new: Sequence[Individual],
        evaluations: Mapping[str, Evaluation],
        training_baseline: Mapping[str, str],
    ) -> dict[str, Any]:
        """Check the front's new members of one generation (the original aside); its record for the
        run store, with `rate` None when no member was checked."""
        new = [member for member in new if member.tree_hash != self.original.tree_hash]
        variants = [apply(self.evaluator.program, member.patch) for member in new]
        baseline = self.baseline
        flagged = [
            member.id
            for member, outcomes in zip(new, self.outcomes(variants), strict=True)
            if overfits(evaluations[member.tree_hash].tests, training_baseline, outcomes, baseline)
        ]
        return {
            "generation": generation,
            "checked": len(new),
            "overfit": len(flagged),
            "rate": round(len(flagged) / len(new), 4) if new else None,
            "members": [member.id for member in new],
            "overfitting": flagged,
        }


def generalisation_gap(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """summary.json's `generalisation_gap`: per generation, the front's new members checked on
    the held-out tests, how many overfit and their share (null when none was checked; a record
    from an older gi that wrote 0 then reads as null too)."""
    return [
        {**{key: record[key] for key in ("generation", "checked", "overfit")}, "rate": gap_rate(record)}
        for record in records
    ]
