"""`Config`: a whole experiment config, its sections, arms and seeds, and the runs it makes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from gi.config.diversity import GridSection, IslandsSection
from gi.config.llm import LLMSection
from gi.config.sections import (
    ArmSection,
    EvaluationSection,
    ExperimentSection,
    MutatorsSection,
    ObjectivesSection,
    ProgramSection,
    SearchSection,
    TestsSection,
    WorkloadSection,
    _Section,
)
from gi.fitness.objectives import OBJECTIVES, Direction, Objective, is_user_objective, user_objective
from gi.model.errors import ConfigError

#: The sections an arm may override.
ARM_SECTIONS = ("search", "mutators", "llm")


def _merge(base: Any, override: Any) -> Any:
    """`override` laid over `base`, tables merged key by key, anything else replaced."""
    if isinstance(base, dict) and isinstance(override, dict):
        return {**base, **{key: _merge(base.get(key), value) for key, value in override.items()}}
    return override


class Config(_Section):
    """A whole experiment config."""

    experiment: Annotated[ExperimentSection, Field(description="the experiment's name, its seeds and its output")]
    program: Annotated[ProgramSection, Field(description="the project gi improves and the files it may edit")]
    tests: Annotated[TestsSection, Field(description="the tests that judge a variant: training and held out")]
    objectives: Annotated[ObjectivesSection, Field(description="what the search minimises and maximises")]
    search: Annotated[SearchSection, Field(description="the search algorithm and its budget")] = SearchSection()
    mutators: Annotated[MutatorsSection, Field(description="the operators that propose edits, and where")] = (
        MutatorsSection()
    )
    evaluation: Annotated[
        EvaluationSection, Field(description="how and where variants are evaluated: workers, sandbox, limits")
    ] = EvaluationSection()
    workload: Annotated[
        WorkloadSection | None, Field(description="what the runtime objective times (needed for runtime)")
    ] = None
    llm: Annotated[LLMSection | None, Field(description="the language model (needed when mutators.llm > 0)")] = None
    # (A pydantic model: _Section copies its defaults, so the list is never shared.)
    arms: Annotated[list[ArmSection], Field(description="the arms of an experiment, each run with every seed")] = []  # noqa: RUF012
    #: The config file, set by `load_config`; paths are resolved against its folder.
    source: Path = Path("<memory>")
    #: The arm this config is one run of (set by `runs`, never by a config file).
    arm: str | None = None

    @field_validator("arms")
    @classmethod
    def _distinct_arms(cls, arms: list[ArmSection]) -> list[ArmSection]:
        names = [arm.name for arm in arms]
        for name in names:
            if names.count(name) > 1:
                raise PydanticCustomError(
                    "repeated_arm", "two arms are named '{name}'; each arm's name names its run folders", {"name": name}
                )
        return arms

    @property
    def is_experiment(self) -> bool:
        """Whether the config names several runs (`[[arms]]` or `experiment.seeds`)."""
        return bool(self.arms) or self.experiment.seeds is not None

    @property
    def experiment_folder(self) -> Path:
        """Where the runs of an experiment go: `<experiment.output>/<experiment.name>`."""
        return self.resolve(self.experiment.output) / self.experiment.name

    def arm_data(self, arm: ArmSection) -> dict[str, Any]:
        """The config data of one arm: this config's, with the arm's sections laid over it."""
        data = self.model_dump(exclude={"arms", "arm"})
        for section in ARM_SECTIONS:
            override = getattr(arm, section)
            if override:
                data[section] = _merge(data.get(section) or {}, override)
        return data

    def runs(self) -> list[Config]:
        """One config per run: every arm (or the config itself) with every seed, seed by seed.

        A config with neither arms nor seeds is its own single run.
        """
        if not self.is_experiment:
            return [self]
        arms = self.arms or [ArmSection(name=self.search.algorithm)]
        runs = []
        for seed in self.experiment.seeds or [self.experiment.seed]:
            for arm in arms:
                data = self.arm_data(arm)
                data["experiment"] = {**data["experiment"], "seed": seed, "seeds": None}
                runs.append(Config.model_validate({**data, "arm": arm.name}))
        return runs

    def resolve(self, path: Path) -> Path:
        return path if path.is_absolute() else (self.source.parent / path).resolve()

    @property
    def program_root(self) -> Path:
        return self.resolve(self.program.root)

    def python_path(self) -> Path:
        """The interpreter the tests run in (program.python, relative to the config), not
        resolved: a virtual environment's python is a link to its base interpreter."""
        if self.program.python is None:
            return Path(sys.executable)
        python = Path(self.program.python)
        return python if python.is_absolute() else self.source.parent.resolve() / python

    @property
    def llm_cache(self) -> Path:
        if self.llm is not None and self.llm.cache is not None:
            return self.resolve(self.llm.cache)
        return self.resolve(self.experiment.output) / "llm-cache"

    @property
    def run_folder(self) -> Path:
        """`<output>/<name>-seed<seed>` for a single run, `<output>/<name>/<arm>-seed<seed>` for an arm's."""
        if self.arm is not None:
            return self.experiment_folder / f"{self.arm}-seed{self.experiment.seed}"
        return self.resolve(self.experiment.output) / f"{self.experiment.name}-seed{self.experiment.seed}"

    def test_paths(self) -> list[str]:
        """The training and held-out test paths (without ::node ids), relative to the root."""
        return [path.split("::")[0] for path in (*self.tests.train, *self.tests.holdout)]

    def objective_list(self) -> list[Objective]:
        """The run's objectives in config order (minimised, then maximised): registered ones by
        name, and a user's functions by dotted path, imported from the config's folder."""
        found = []
        for names, direction in (
            (self.objectives.minimize, Direction.MINIMIZE),
            (self.objectives.maximize, Direction.MAXIMIZE),
        ):
            for name in names:
                if not is_user_objective(name):
                    found.append(OBJECTIVES.get(name))
                    continue
                try:
                    found.append(user_objective(name, direction, self.source.parent))
                except ValueError as error:
                    raise ConfigError(f"{self.source}: objectives.{direction.value}: {error}") from None
        return found

    def fingerprint(self) -> dict[str, Any]:
        """What makes two runs the same experiment (the config, without where it was read from or
        how many runs go at once). Keys at their defaults that older gi lacked are left out, so
        runs made before them still resume."""
        data = self.model_dump(mode="json", exclude={"source", "evaluation", "arms"})
        data["experiment"].pop("parallel_runs", None)
        data["experiment"].pop("report", None)
        if data["experiment"].get("seeds") is None:
            data["experiment"].pop("seeds", None)
        if data["search"].get("reference_divisions") == "auto":
            data["search"].pop("reference_divisions")
        # Search keys older gi lacked, at a value that does what older gi did.
        older = {"neighbourhood": 0.0, "operator_selection": "uniform", "max_evaluations": None, "max_seconds": None}
        for key, value in older.items():
            if data["search"].get(key) == value:
                data["search"].pop(key, None)
        # "auto" changes only repairs, which older gi ran without the rings: only a repair run
        # of older gi resumes differently (its remaining generations walk the rings).
        for key in ("neighbourhood", "operator_selection"):
            if data["search"].get(key) == "auto":
                data["search"].pop(key, None)
        if data["search"].get("patience") == 3:  # stops only a run that finds nothing new: older runs resume
            data["search"].pop("patience", None)
        # Keys of quality diversity, at values that do what older gi did.
        if data["search"].get("steady_state") is False:
            data["search"].pop("steady_state", None)
        for key, section in (("grid", GridSection()), ("islands", IslandsSection())):
            if data["search"].get(key) == section.model_dump(mode="json"):
                data["search"].pop(key, None)
        if data.get("arm") is None:
            data.pop("arm", None)
        for key in ("holdout_fraction", "differential", "differential_inputs", "fail_fast", "oracle_feedback"):
            if not data["tests"].get(key):
                data["tests"].pop(key, None)
        # The oracle judges the front after the search, which it never steers: a finished run
        # can be judged again with another budget, or without it.
        data["tests"].pop("oracle", None)
        data["tests"].pop("oracle_seconds", None)
        if data["tests"].get("select") == "coverage":  # the verdicts a user sees are every test's, as before
            data["tests"].pop("select", None)
        return data
