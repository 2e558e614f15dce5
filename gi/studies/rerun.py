"""A finished run reopened for studies of its front after the search: minimisation
(`gi minimize`), ablation and revalidation.

The run is reopened with its config: the one `--config` names, else the one summary.json
names (`experiment.config`, an absolute path on the machine that made the run). The config's
run is matched to the folder by where it writes, or, for a run folder copied elsewhere (shared
with its config and program), by the fingerprint its store holds; so a changed config is
refused as `gi run` refuses it, and so is a program whose files changed since the run. The
run's lock refuses a study while `gi run` works on the folder. Programs are evaluated by the
run's own evaluator (sandbox, limits, warm or cold engine) and cached in its store
(`Experiment.measure`), apart from the search's evaluations.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Any

from gi.config import Config, load_config
from gi.engine.recorded import STUDY
from gi.engine.run_folder import ORIGINAL, STORE_NAME, read_summary, source_hash
from gi.engine.run_folder import member_id as summary_id
from gi.engine.store import RunStore
from gi.fitness.objectives import objective_values, reference_point, violation
from gi.model.errors import ConfigError, StoreError, UsageError
from gi.model.patch import Patch, Variant, apply
from gi.model.results import Evaluation
from gi.run.experiment import Experiment

#: What a study says when the config cannot be found or does not fit the folder.
PASS_CONFIG = "pass the config the run was made with: --config CONFIG"


def _recorded_fingerprint(folder: Path) -> Any:
    """The config fingerprint a run folder's store holds; the store must hold a finished generation."""
    store = RunStore(folder / STORE_NAME, read_only=True)
    try:
        if store.last_checkpoint() is None:
            raise StoreError(f"{folder}: the run never finished a generation; there is nothing to study")
        return store.get_meta("config")
    finally:
        store.close()


def config_of(folder: Path, summary: dict[str, Any], given: Path | None = None) -> Config:
    """The config (and the arm and seed) a run folder was made with: `given` (--config), else
    the one summary.json names. The run is the config's run that writes to `folder` or, for a
    folder copied elsewhere, whose fingerprint the folder's store holds."""
    source = given if given is not None else Path(summary["experiment"]["config"])
    try:
        config = load_config(source)
    except ConfigError as error:
        hint = f"; if the run folder was copied here, {PASS_CONFIG}" if given is None else ""
        raise ConfigError(f"{folder}: the run's config cannot be read: {error}{hint}") from None
    seed = summary["experiment"]["seed"]
    runs = config.runs()
    runs += [run.model_copy(update={"experiment": run.experiment.model_copy(update={"seed": seed})}) for run in runs]
    for run in runs:
        if run.run_folder.resolve() == folder.resolve():
            return run
    fingerprint = _recorded_fingerprint(folder)
    for run in runs:
        if run.fingerprint() == fingerprint:
            return run
    raise StoreError(
        f"{folder}: no run of {source} made this run folder (the config changed, or it is another"
        f" experiment's); {PASS_CONFIG}"
    )


def _check_sources(folder: Path, summary: dict[str, Any], experiment: Experiment) -> None:
    """Refuse a study of a program whose editable files are not those the run read."""
    recorded: dict[str, str] = summary.get("program", {}).get("sources") or {}
    program = experiment.program
    changed = [name for name, digest in recorded.items() if source_hash(program.sources.get(name, "")) != digest]
    if changed:
        raise StoreError(
            f"{folder}: {', '.join(changed)} in {program.root} changed since the run (summary.json"
            " program.sources); a study needs the program the run read"
        )


class FinishedRun:
    """One finished run, open for evaluating other patches of its program; use it in a `with`."""

    def __init__(self, folder: Path, config: Path | None = None) -> None:
        """`config`: the run's config file (--config), when summary.json's path is not it (a
        run folder copied from elsewhere)."""
        self.folder = folder
        self.summary = read_summary(folder)
        self.config = config_of(folder, self.summary, config)
        self.experiment = Experiment(self.config, folder=folder)
        # What a study measures (held-out runs of programs the run never checked) is the
        # study's, not the run's: summary.json's `measurements` stay what the run measured.
        self.experiment.measurements.source = STUDY
        try:
            _check_sources(folder, self.summary, self.experiment)
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
        wanted = summary_id(self.summary, member_id)  # the search's id of the original is `original`'s
        if wanted == ORIGINAL:
            raise UsageError(f"{self.folder}: the original has no edits; name a front member (gi show {self.folder})")
        chosen = [member for member in front if member["id"] == wanted]
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
