"""The sections of an experiment config, one pydantic model each, with their rules."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from gi.algorithms import ALGORITHMS
from gi.config.diversity import GridSection, IslandsSection
from gi.config.machine import usable_cores
from gi.fitness.objectives import OBJECTIVES, Constraint, Direction, is_user_objective
from gi.fitness.runtime import RIGOROUS
from gi.model.registry import suggest
from gi.mutators import CROSSOVERS, OPERATORS


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


NAME_PATTERN = r"^[A-Za-z0-9._-]+$"


class ExperimentSection(_Section):
    name: Annotated[
        str,
        Field(min_length=1, pattern=NAME_PATTERN, description="a name for file paths", examples=["grading-simplify"]),
    ]
    seed: Annotated[int, Field(ge=0, description="a whole number >= 0 that fixes every random choice")] = 0
    seeds: Annotated[
        list[Annotated[int, Field(ge=0)]] | None,
        Field(
            min_length=1,
            description="seeds to run each arm with, whole numbers >= 0 (instead of seed)",
            examples=[[1, 2, 3, 4, 5]],
        ),
    ] = None
    output: Annotated[Path, Field(description="the folder run folders go into")] = Path("runs")
    parallel_runs: Annotated[
        Literal["auto"] | Annotated[int, Field(ge=1, le=256)],
        Field(description="runs of an experiment at once; 'auto': cores over evaluation.workers, 1 when timing"),
    ] = "auto"
    report: Annotated[
        bool, Field(description="write report.html and report.md when a run ends (`gi report` writes them later)")
    ] = True

    @field_validator("seeds")
    @classmethod
    def _distinct(cls, seeds: list[int] | None) -> list[int] | None:
        if seeds is not None and len(set(seeds)) != len(seeds):
            raise PydanticCustomError("repeated", "a seed is named twice", {})
        return seeds


class ProgramSection(_Section):
    root: Annotated[
        Path, Field(description="the project folder, relative to the config file", examples=["programs/grading"])
    ]
    files: Annotated[
        list[str],
        Field(min_length=1, description="globs of the files GI may edit, relative to root", examples=[["grading.py"]]),
    ]
    python: Annotated[
        str | None,
        Field(
            min_length=1,
            description="the interpreter the tests and the workload run in (the project's own environment,"
            " e.g. '.venv/bin/python'), relative to the config file; unset: gi's own",
            examples=[".venv/bin/python"],
        ),
    ] = None


class TestsSection(_Section):
    train: Annotated[
        list[str], Field(min_length=1, description="pytest paths used during search", examples=[["tests"]])
    ]
    holdout: Annotated[
        list[str],
        Field(description="pytest paths run on front members, never for selection", examples=[["holdout"]]),
    ] = []
    holdout_fraction: Annotated[
        float, Field(ge=0, lt=1, description="the share of the training tests' ids held out by a seeded split")
    ] = 0.0
    differential: Annotated[
        bool, Field(description="held-out checks: public functions on the training tests' inputs, against the original")
    ] = False
    differential_inputs: Annotated[
        dict[str, list[list[Any]]],
        Field(
            description='more inputs for the differential checks: "module:function" -> argument lists',
            examples=[{"grading:letter": [[95], [101]]}],
        ),
    ] = {}
    oracle: Annotated[
        Literal["auto", "off"],
        Field(
            description="the behaviour oracle: each front member's changed functions called on inputs the tests"
            " did not try (Hypothesis, from those they did), against the original, each in a sandboxed process;"
            " 'auto': on (in a repair, the functions the failing tests reach only on the calls the passing tests"
            " made, and on drawn calls for crashes alone); 'off'"
        ),
    ] = "auto"
    oracle_seconds: Annotated[
        float, Field(gt=0, le=86400, description="seconds the behaviour oracle may take in all, over the front")
    ] = 60.0
    oracle_feedback: Annotated[
        bool,
        Field(
            description="run the behaviour oracle on the front's new members each generation too, and add each"
            " counterexample it finds to the held-out tests"
        ),
    ] = False
    timeout: Annotated[float, Field(gt=0, le=86400, description="seconds allowed for one whole test run")] = 60.0
    test_timeout: Annotated[
        float,
        Field(
            gt=0, le=86400, description="seconds one test may take in the original's run, and at most in a variant's"
        ),
    ] = 10.0
    fail_fast: Annotated[
        bool,
        Field(
            description="a variant failing any training test is infeasible however many it fails (train_pass only),"
            " so its tests stop at the first failure, those that failed most recently first"
        ),
    ] = False
    select: Annotated[
        Literal["coverage", "all"],
        Field(
            description="which training tests judge a variant in the search: 'coverage', those that execute a line"
            " its edits touch (the original's coverage; an edit at import runs them all), the others keeping the"
            " original's outcomes, and every member of the front confirmed by all of them; 'all', every test"
        ),
    ] = "coverage"

    @field_validator("differential_inputs")
    @classmethod
    def _functions(cls, inputs: dict[str, list[list[Any]]]) -> dict[str, list[list[Any]]]:
        for key in inputs:
            if not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", key):
                raise ValueError(f"{key!r} is not 'module:function'")
        return inputs


class ObjectivesSection(_Section):
    minimize: Annotated[
        list[str], Field(description="objectives to minimise", examples=[["failed_tests", "complexity", "size"]])
    ] = []
    maximize: Annotated[list[str], Field(description="objectives to maximise", examples=[["maintainability"]])] = []
    constraint: Annotated[Constraint, Field(description="'train_pass' or 'none'")] = Constraint.TRAIN_PASS

    @field_validator("minimize", "maximize")
    @classmethod
    def _known(cls, names: list[str]) -> list[str]:
        for name in names:
            if is_user_objective(name):  # a user's function: imported when the config is loaded
                if not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*", name):
                    raise PydanticCustomError(
                        "user_objective", "'{name}' is not 'module:function' (a user's objective)", {"name": name}
                    )
            elif name not in OBJECTIVES:
                raise PydanticCustomError(
                    "unknown_name",
                    "unknown objective '{name}'.{hint} Known objectives: {known}, or a function of your own as"
                    " 'module:function'",
                    {"name": name, "hint": suggest(name, OBJECTIVES.names()), "known": ", ".join(OBJECTIVES.names())},
                )
        if len(set(names)) != len(names):
            raise PydanticCustomError("repeated", "an objective is named twice", {})
        return names

    @model_validator(mode="after")
    def _directions(self) -> ObjectivesSection:
        if not self.minimize and not self.maximize:
            raise PydanticCustomError(
                "no_objective", 'name at least one objective, e.g. minimize = ["failed_tests", "size"]', {}
            )
        for key, names, direction in (
            ("minimize", self.minimize, Direction.MINIMIZE),
            ("maximize", self.maximize, Direction.MAXIMIZE),
        ):
            for name in names:
                if not is_user_objective(name) and OBJECTIVES.get(name).direction is not direction:
                    raise PydanticCustomError(
                        "direction",
                        "objectives.{key}: '{name}' can only be {right}d; move it to objectives.{right}",
                        {"key": key, "name": name, "right": OBJECTIVES.get(name).direction.value},
                    )
        return self

    def names(self) -> list[str]:
        return [*self.minimize, *self.maximize]


#: The rings' share of the budget `search.neighbourhood = "auto"` gives a repair (the original
#: fails training tests): benchmarks/repair.py's best arm. Chosen on seeds 4-6, bugs the
#: benchmark's own seeds do not draw: the whole budget made 36 correct repairs of 48 bugs where
#: three quarters made 33 (earlier, three quarters had beaten half, 33 to 31).
AUTO_NEIGHBOURHOOD = 1.0


class SearchSection(_Section):
    algorithm: Annotated[str, Field(description="the search algorithm; see `gi algorithms`")] = "nsga2"
    population: Annotated[int, Field(ge=2, le=10000, description="individuals per generation, 2 or more")] = 20
    generations: Annotated[int, Field(ge=0, le=100000, description="generations after the initial one")] = 10
    crossover_rate: Annotated[float, Field(ge=0, le=1, description="chance an offspring comes by crossover")] = 0.5
    mutation_rate: Annotated[
        float, Field(ge=0, le=1, description="chance a crossover offspring also gets a new edit")
    ] = 1.0
    crossovers: Annotated[list[str], Field(min_length=1, description="crossover names; see `gi operators`")] = [
        "concatenation",
        "uniform",
        "one_point",
    ]
    max_edits: Annotated[int, Field(ge=1, le=1000, description="the most edits a patch may have")] = 10
    archive_parents: Annotated[
        float, Field(ge=0, le=1, description="chance a parent is drawn from the Pareto archive, not the population")
    ] = 0.5
    reference_divisions: Annotated[
        Literal["auto"] | Annotated[int, Field(ge=1, le=100)],
        Field(description="nsga3: divisions per objective of the reference directions; 'auto': as many as fit"),
    ] = "auto"
    neighbourhood: Annotated[
        Literal["auto"] | Annotated[float, Field(ge=0, le=1)],
        Field(
            description="share of max_evaluations (else of the generations) that first walk every one-edit program"
            f" best first (and pairs of partial repairs); 0: none; 'auto': {AUTO_NEIGHBOURHOOD:g} in a repair, else 0",
        ),
    ] = "auto"
    operator_selection: Annotated[
        Literal["auto", "uniform", "adaptive"],
        Field(
            description="how a classic operator is chosen: uniformly, or adaptively by its recent success;"
            " 'auto': adaptively in a repair, else uniformly"
        ),
    ] = "auto"
    max_evaluations: Annotated[
        int | None,
        Field(ge=1, description="stop once this many programs were evaluated (the original aside)", examples=[500]),
    ] = None
    max_seconds: Annotated[
        float | None,
        Field(
            gt=0,
            description="stop before the first generation after the initial one that would start this many"
            " seconds into the run",
            examples=[600],
        ),
    ] = None
    patience: Annotated[
        int, Field(ge=1, le=100000, description="stop after this many generations in a row evaluate no new program")
    ] = 3
    steady_state: Annotated[
        bool,
        Field(
            description="breed a candidate as soon as an evaluator is free and take each result and each model reply"
            " as it arrives, with no generation barrier (the order of arrivals is recorded: a replay and a resumed"
            " run follow it); false: generation by generation, one seed fixing the run"
        ),
    ] = False
    grid: Annotated[
        GridSection, Field(description="the quality-diversity grid: its features, bins and ranges (search.grid)")
    ] = GridSection()
    islands: Annotated[
        IslandsSection, Field(description="the islands algorithm's islands and migration (search.islands)")
    ] = IslandsSection()

    @field_validator("algorithm")
    @classmethod
    def _known_algorithm(cls, name: str) -> str:
        if name not in ALGORITHMS:
            raise PydanticCustomError(
                "unknown_name",
                "unknown algorithm '{name}'.{hint} Known: {known}",
                {"name": name, "hint": suggest(name, ALGORITHMS.names()), "known": ", ".join(ALGORITHMS.names())},
            )
        return name

    @field_validator("crossovers")
    @classmethod
    def _known(cls, names: list[str]) -> list[str]:
        for name in names:
            if name not in CROSSOVERS:
                raise PydanticCustomError(
                    "unknown_name",
                    "unknown crossover '{name}'.{hint} Known: {known}",
                    {"name": name, "hint": suggest(name, CROSSOVERS.names()), "known": ", ".join(CROSSOVERS.names())},
                )
        return names


class MutatorsSection(_Section):
    operators: Annotated[
        Literal["all"] | list[str],
        Field(
            description="'all' (gi's own) or a list of operator names (an installed package's too); see `gi operators`"
        ),
    ] = "all"

    @field_validator("operators")
    @classmethod
    def _known(cls, operators: str | list[str]) -> str | list[str]:
        if isinstance(operators, list):
            if not operators:
                raise PydanticCustomError("empty", 'name at least one operator, or write "all"', {})
            for name in operators:
                if name not in OPERATORS:
                    raise PydanticCustomError(
                        "unknown_name",
                        "unknown operator '{name}'.{hint} `gi operators` lists them all",
                        {"name": name, "hint": suggest(name, OPERATORS.names())},
                    )
        return operators

    fault_localisation: Annotated[
        Literal["auto"] | bool,
        Field(description="weight edit sites by their line's suspiciousness; 'auto': when the original fails tests"),
    ] = "auto"
    suspiciousness: Annotated[
        Literal["dstar", "ochiai"],
        Field(description="the fault localisation formula: D* (DStar, * = 2) or Ochiai"),
    ] = "dstar"
    llm: Annotated[float, Field(ge=0, le=1, description="the share of mutations the language model makes")] = 0.0
    untested: Annotated[
        bool,
        Field(
            description="true: edit lines the training tests never execute too (front members whose edits touch"
            " only such lines are then flagged 'untested'); false: never, as mutation testing skips them"
        ),
    ] = False

    def names(self) -> list[str]:
        """The operators the config names; "all" is gi's own (installing a package does not change a run)."""
        return OPERATORS.names(built_in=True) if self.operators == "all" else list(self.operators)


class WorkloadSection(_Section):
    call: Annotated[
        str | None,
        Field(
            pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$",
            description="a no-argument callable, 'module:function'",
            examples=["workload:run"],
        ),
    ] = None
    command: Annotated[
        list[str] | None,
        Field(min_length=1, description="a command to time instead", examples=[["python", "bench.py"]]),
    ] = None
    check_output: Annotated[
        bool,
        Field(
            description="a variant whose workload returns other than the original's, or whose code returns other"
            " values to the workload, is infeasible"
        ),
    ] = True
    timeout: Annotated[float, Field(gt=0, description="seconds allowed for one timing")] = 120.0
    screening_processes: Annotated[int, Field(ge=1, le=100, description="pyperf worker processes per variant")] = 2
    rigorous_processes: Annotated[
        int, Field(ge=2, le=200, description="pyperf worker processes per program in the final re-measurement")
    ] = RIGOROUS.processes
    profile: Annotated[
        Literal["auto"] | bool,
        Field(description="weight edit sites by the time the workload spends in their function"),
    ] = "auto"

    @model_validator(mode="after")
    def _one_kind(self) -> WorkloadSection:
        if (self.call is None) == (self.command is None):
            raise PydanticCustomError(
                "workload_kind", 'give either call = "module:function" or command = [...], not both or neither', {}
            )
        return self


def _cores_up_to_four() -> int:
    """the cores gi may run on, at most 4"""
    return max(1, min(4, usable_cores()))


class EvaluationSection(_Section):
    workers: int = Field(
        ge=1,
        le=512,
        default_factory=_cores_up_to_four,
        description="variants evaluated at once: the warm workers the training tests (and the held-out) keep",
        examples=[2],
    )
    memory_mb: Annotated[int, Field(ge=64, description="address-space limit of a test run, in MiB")] = 4096
    processes: Annotated[int, Field(ge=8, le=100000, description="processes a test run may have at once")] = 256
    file_mb: Annotated[int, Field(ge=1, description="the largest file a test run may write, in MiB")] = 1024
    disk_mb: Annotated[
        int, Field(ge=1, description="the most each folder a command may write holds (RAM in bubblewrap), in MiB")
    ] = 512
    disk_files: Annotated[
        int,
        Field(ge=100, description="the most files and folders a command may add to each folder it may write"),
    ] = 100_000
    isolate: Annotated[bool, Field(description="run tests under bubblewrap where it works")] = True
    read_only: Annotated[
        list[Path],
        Field(
            description="more host folders the sandbox shows, read-only (e.g. a package the tests need)",
            examples=[["/opt/shared-data"]],
        ),
    ] = []
    llm_without_sandbox: Annotated[
        bool, Field(description="let the language model's code run with process limits only, where no sandbox works")
    ] = False
    backend: Annotated[
        Literal["local", "dask"],
        Field(description="where variants are evaluated: 'local' (this machine's threads) or 'dask' (Dask workers)"),
    ] = "local"
    scheduler: Annotated[
        str | None,
        Field(
            pattern=r"^(tcp|tls)://\S+:\d+$",
            description="the Dask scheduler, tcp://HOST:PORT; unset: a cluster of `workers` processes on this machine",
            examples=["tcp://10.0.0.5:8786"],
        ),
    ] = None
    engine: Annotated[
        Literal["auto", "warm", "cold"],
        Field(description="'warm' (forking test workers), 'cold' (a fresh copy and process per run) or 'auto'"),
    ] = "auto"
    shortcuts: Annotated[
        bool,
        Field(
            description="take the shortcuts that leave results as they are (tests.fail_fast's stop at the first"
            " failure); false runs every training test of every variant, the reference"
        ),
    ] = True
    spare_pages: Annotated[
        Literal["auto"] | bool,
        Field(
            description="a warm worker's spare child copies ahead the memory a test run writes, on a core the"
            " running tests leave free; 'auto': where the runs' workers leave a core free"
        ),
    ] = "auto"


class ArmSection(_Section):
    """One arm of an experiment: a name and the sections it overrides (merged key by key)."""

    name: Annotated[
        str,
        Field(
            min_length=1,
            pattern=NAME_PATTERN,
            description="the arm's name, for its run folders",
            examples=["local_search"],
        ),
    ]
    search: Annotated[
        dict[str, Any], Field(description="[search] keys this arm sets", examples=[{"algorithm": "local_search"}])
    ] = {}
    mutators: Annotated[
        dict[str, Any],
        Field(description="[mutators] keys this arm sets", examples=[{"operators": ["statement_delete"]}]),
    ] = {}
    llm: Annotated[dict[str, Any], Field(description="[llm] keys this arm sets", examples=[{"temperature": 0.2}])] = {}
