"""A finished run reopened for studies of its front after the search: minimisation
(`gi minimize`), ablation and revalidation.

The run folder names its config (summary.json's `experiment.config`); the run is reopened
with that config, so the run store refuses it if the config has changed since, and its lock
refuses a study while `gi run` works on the folder. Programs are evaluated by the run's own
evaluator (sandbox, limits, warm or cold engine) and cached in its store
(`Experiment.measure`), apart from the search's evaluations.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Any

from fitness.objectives import objective_values, reference_point, violation
from gi.config import Config, load_config
from gi.errors import ConfigError, StoreError
from gi.experiment import Experiment
from gi.patch import Patch, Variant, apply
from gi.replay import STUDY
from gi.report import read_summary
from gi.results import Evaluation


def config_of(folder: Path, summary: dict[str, Any]) -> Config:
    """The config (and the arm and seed) a run folder was made with."""
    source = Path(summary["experiment"]["config"])
    try:
        config = load_config(source)
    except ConfigError as error:
        raise ConfigError(f"{folder}: the run's config cannot be read: {error}") from None
    seed = summary["experiment"]["seed"]
    runs = config.runs()
    runs += [run.model_copy(update={"experiment": run.experiment.model_copy(update={"seed": seed})}) for run in runs]
    for run in runs:
        if run.run_folder.resolve() == folder.resolve():
            return run
    raise StoreError(f"{folder}: no run of {source} writes to this folder (was it moved, or the config changed?)")


class FinishedRun:
    """One finished run, open for evaluating other patches of its program; use it in a `with`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.summary = read_summary(folder)
        self.config = config_of(folder, self.summary)
        self.experiment = Experiment(self.config)
        # What a study measures (held-out runs of programs the run never checked) is the
        # study's, not the run's: summary.json's `measurements` stay what the run measured.
        self.experiment.measurements.source = STUDY
        try:
            self.baseline = self.experiment.reopen()
        except BaseException:
            self.experiment.close()
            raise
        self.program = self.experiment.program
        self.objectives = self.experiment.objectives
        self.names = tuple(objective.name for objective in self.objectives)
        self.test_count = len(self.baseline.tests)
        reference = reference_point(
            self.objectives, self.baseline.measures, test_count=self.test_count, max_edits=self.config.search.max_edits
        )
        self.worst = tuple(o.from_minimised(r) for o, r in zip(self.objectives, reference, strict=True))

    def __enter__(self) -> FinishedRun:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.experiment.close()

    def members(self, member_id: str | None = None) -> list[dict[str, Any]]:
        """The front's members (one, with `member_id`) as summary.json holds them."""
        front: list[dict[str, Any]] = self.summary["front"]
        if member_id is None:
            return front
        chosen = [member for member in front if member["id"] == member_id]
        if not chosen:
            ids = ", ".join(member["id"] for member in front)
            raise StoreError(f"{self.folder}: no front member {member_id!r}; the front holds {ids or 'no member'}")
        return chosen

    def patch(self, member: dict[str, Any]) -> Patch:
        """A front member's patch, checked against the program."""
        try:
            patch = Patch.from_json(member["edits"])
            patch.check(self.program)
        except (ValueError, KeyError, TypeError) as error:  # EditError is a ValueError
            problem = f"member {member['id']}: its edits do not fit the program ({error})"
            raise StoreError(f"{self.folder / 'summary.json'}: {problem}") from None
        return patch

    def evaluate(self, patches: list[Patch], label: str) -> list[tuple[Variant, Evaluation]]:
        """Apply and evaluate patches (cached), each with its variant."""
        variants = [apply(self.program, patch) for patch in patches]
        return list(zip(variants, self.experiment.measure(variants, label), strict=True))

    def scores(self, evaluation: Evaluation) -> tuple[tuple[float, ...], float]:
        """Objective values and constraint violation of an evaluation, as the search scores them."""
        values = objective_values(self.objectives, evaluation.measures, self.worst) if evaluation.ok else self.worst
        broken = violation(
            self.config.objectives.constraint, evaluation.measures, ok=evaluation.ok, test_count=self.test_count
        )
        return values, broken
