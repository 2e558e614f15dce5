"""Experiment configs: TOML files, validated in full before anything runs.

Every mistake becomes one line that names the file and the dotted key, shows the value,
states the rule and suggests a fix. Paths in a config are relative to the config file.
"""

from __future__ import annotations

import copy
import os
import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from fitness.objectives import OBJECTIVES, Constraint, Direction
from fitness.runtime import RIGOROUS
from gi.algorithms import ALGORITHMS
from gi.errors import ConfigError, RegistryError
from gi.registry import suggest
from mutators import CROSSOVERS, OPERATORS
from mutators.llm import Prompts


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


NAME_PATTERN = r"^[A-Za-z0-9._-]+$"


class ExperimentSection(_Section):
    name: Annotated[str, Field(min_length=1, pattern=NAME_PATTERN, description="a name for file paths")]
    seed: Annotated[int, Field(ge=0, description="a whole number >= 0 that fixes every random choice")] = 0
    seeds: Annotated[
        list[Annotated[int, Field(ge=0)]] | None,
        Field(min_length=1, description="seeds to run each arm with, whole numbers >= 0 (instead of seed)"),
    ] = None
    output: Annotated[Path, Field(description="the folder run folders go into")] = Path("runs")
    parallel_runs: Annotated[
        Literal["auto"] | Annotated[int, Field(ge=1, le=256)],
        Field(description="runs of an experiment at once; 'auto': cores over evaluation.workers, 1 when timing"),
    ] = "auto"

    @field_validator("seeds")
    @classmethod
    def _distinct(cls, seeds: list[int] | None) -> list[int] | None:
        if seeds is not None and len(set(seeds)) != len(seeds):
            raise PydanticCustomError("repeated", "a seed is named twice", {})
        return seeds


class ProgramSection(_Section):
    root: Annotated[Path, Field(description="the project folder, relative to the config file")]
    files: Annotated[list[str], Field(min_length=1, description="globs of the files GI may edit, relative to root")]


class TestsSection(_Section):
    train: Annotated[list[str], Field(min_length=1, description="pytest paths used during search")]
    holdout: Annotated[list[str], Field(description="pytest paths run on front members, never for selection")] = []
    holdout_fraction: Annotated[
        float, Field(ge=0, lt=1, description="the share of the training tests' ids held out by a seeded split")
    ] = 0.0
    differential: Annotated[
        bool, Field(description="held-out checks: public functions on the training tests' inputs, against the original")
    ] = False
    differential_inputs: Annotated[
        dict[str, list[list[Any]]],
        Field(description='more inputs for the differential checks: "module:function" -> argument lists'),
    ] = {}
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

    @field_validator("differential_inputs")
    @classmethod
    def _functions(cls, inputs: dict[str, list[list[Any]]]) -> dict[str, list[list[Any]]]:
        for key in inputs:
            if not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", key):
                raise ValueError(f"{key!r} is not 'module:function'")
        return inputs


class ObjectivesSection(_Section):
    minimize: Annotated[list[str], Field(description="objectives to minimise")] = []
    maximize: Annotated[list[str], Field(description="objectives to maximise")] = []
    constraint: Annotated[Constraint, Field(description="'train_pass' or 'none'")] = Constraint.TRAIN_PASS

    @field_validator("minimize", "maximize")
    @classmethod
    def _known(cls, names: list[str]) -> list[str]:
        for name in names:
            if name not in OBJECTIVES:
                raise PydanticCustomError(
                    "unknown_name",
                    "unknown objective '{name}'.{hint} Known objectives: {known}",
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
                if OBJECTIVES.get(name).direction is not direction:
                    raise PydanticCustomError(
                        "direction",
                        "objectives.{key}: '{name}' can only be {right}d; move it to objectives.{right}",
                        {"key": key, "name": name, "right": OBJECTIVES.get(name).direction.value},
                    )
        return self

    def names(self) -> list[str]:
        return [*self.minimize, *self.maximize]


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
        Literal["all"] | list[str], Field(description="'all' or a list of operator names; see `gi operators`")
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
        Field(description="weight edit sites by Ochiai suspiciousness; 'auto': when the original fails tests"),
    ] = "auto"
    llm: Annotated[float, Field(ge=0, le=1, description="the share of mutations the language model makes")] = 0.0

    def names(self) -> list[str]:
        return OPERATORS.names() if self.operators == "all" else list(self.operators)


class WorkloadSection(_Section):
    call: Annotated[
        str | None,
        Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$", description="a no-argument callable, 'module:function'"),
    ] = None
    command: Annotated[list[str] | None, Field(min_length=1, description="a command to time instead")] = None
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


class PromptsSection(_Section):
    chat_system: Annotated[str, Field(description="the system message (chat API)")] = Prompts.chat_system
    chat_user: Annotated[str, Field(description="the user message (chat API)")] = Prompts.chat_user
    completion: Annotated[str, Field(description="the prompt (completions API)")] = Prompts.completion

    @model_validator(mode="after")
    def _formats(self) -> PromptsSection:
        try:
            Prompts(self.chat_system, self.chat_user, self.completion).check()
        except (KeyError, IndexError, ValueError) as error:
            raise PydanticCustomError(
                "template",
                "a prompt template has an unknown field or stray braces ({error}); fields: goal, name, file, code,"
                " context, objectives, failures, decorators, def_line",
                {"error": str(error)},
            ) from None
        return self


class LLMSection(_Section):
    base_url: Annotated[str, Field(pattern=r"^https?://", description="the OpenAI-compatible server's URL")]
    model: Annotated[str, Field(min_length=1, description="the model's name on that server")]
    api_key_env: Annotated[
        str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", description="the NAME of the variable holding the key")
    ] = "OPENAI_API_KEY"
    api: Annotated[Literal["chat", "completions"], Field(description="'chat' or 'completions'")] = "chat"
    temperature: Annotated[float, Field(ge=0, le=2, description="sampling temperature, 0 to 2")] = 0.8
    max_tokens: Annotated[int, Field(ge=1, description="tokens a reply may have")] = 1024
    samples: Annotated[int, Field(ge=1, le=16, description="replies asked for in one request")] = 1
    timeout: Annotated[float, Field(gt=0, description="seconds a request may take")] = 60.0
    retries: Annotated[int, Field(ge=0, le=20, description="retries, with backoff, of a failed request")] = 3
    concurrency: Annotated[int, Field(ge=1, le=64, description="requests in flight at once")] = 2
    max_requests: Annotated[int | None, Field(ge=0, description="the most requests a run makes")] = 200
    max_total_tokens: Annotated[int | None, Field(ge=0, description="the most tokens a run spends")] = None
    max_cost: Annotated[float | None, Field(ge=0, description="the most money (USD) a run spends")] = 5.0
    price_prompt: Annotated[float, Field(ge=0, description="USD per million prompt tokens")] = 0.0
    price_completion: Annotated[float, Field(ge=0, description="USD per million completion tokens")] = 0.0
    goal: Annotated[
        Literal["auto", "faster", "simpler", "repair"],
        Field(description="'auto' (from the objectives), 'faster', 'simpler' or 'repair'"),
    ] = "auto"
    cache: Annotated[
        Path | None, Field(description="the reply cache folder (default: llm-cache in experiment.output)")
    ] = None
    prompts: PromptsSection = PromptsSection()


class EvaluationSection(_Section):
    workers: Annotated[int, Field(ge=1, le=512, description="variants evaluated at once")] = max(
        1, min(4, os.cpu_count() or 1)
    )
    memory_mb: Annotated[int, Field(ge=64, description="address-space limit of a test run, in MiB")] = 4096
    processes: Annotated[int, Field(ge=8, le=100000, description="processes a test run may have at once")] = 256
    file_mb: Annotated[int, Field(ge=1, description="the largest file a test run may write, in MiB")] = 1024
    isolate: Annotated[bool, Field(description="run tests under bubblewrap where it works")] = True
    read_only: Annotated[
        list[Path], Field(description="more host folders the sandbox shows, read-only (e.g. a package the tests need)")
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


class ArmSection(_Section):
    """One arm of an experiment: a name and the sections it overrides (merged key by key)."""

    name: Annotated[str, Field(min_length=1, pattern=NAME_PATTERN, description="the arm's name, for its run folders")]
    search: Annotated[dict[str, Any], Field(description="[search] keys this arm sets")] = {}
    mutators: Annotated[dict[str, Any], Field(description="[mutators] keys this arm sets")] = {}
    llm: Annotated[dict[str, Any], Field(description="[llm] keys this arm sets")] = {}


#: The sections an arm may override.
ARM_SECTIONS = ("search", "mutators", "llm")


def _merge(base: Any, override: Any) -> Any:
    """`override` laid over `base`, tables merged key by key, anything else replaced."""
    if isinstance(base, dict) and isinstance(override, dict):
        return {**base, **{key: _merge(base.get(key), value) for key, value in override.items()}}
    return override


class Config(_Section):
    """A whole experiment config."""

    experiment: ExperimentSection
    program: ProgramSection
    tests: TestsSection
    objectives: ObjectivesSection
    search: SearchSection = SearchSection()
    mutators: MutatorsSection = MutatorsSection()
    evaluation: EvaluationSection = EvaluationSection()
    workload: WorkloadSection | None = None
    llm: LLMSection | None = None
    arms: list[ArmSection] = []
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

    def fingerprint(self) -> dict[str, Any]:
        """What makes two runs the same experiment (the config, without where it was read from or
        how many runs go at once). Keys at their defaults that older gi lacked are left out, so
        runs made before them still resume."""
        data = self.model_dump(mode="json", exclude={"source", "evaluation", "arms"})
        data["experiment"].pop("parallel_runs", None)
        if data["experiment"].get("seeds") is None:
            data["experiment"].pop("seeds", None)
        if data["search"].get("reference_divisions") == "auto":
            data["search"].pop("reference_divisions")
        if data.get("arm") is None:
            data.pop("arm", None)
        for key in ("holdout_fraction", "differential", "differential_inputs", "fail_fast"):
            if not data["tests"].get(key):
                data["tests"].pop(key, None)
        return data


_SECTION_MODELS: dict[str, type[BaseModel]] = {
    "experiment": ExperimentSection,
    "program": ProgramSection,
    "tests": TestsSection,
    "objectives": ObjectivesSection,
    "search": SearchSection,
    "mutators": MutatorsSection,
    "evaluation": EvaluationSection,
    "workload": WorkloadSection,
    "llm": LLMSection,
    "arms": ArmSection,
}


def _describe(loc: tuple[int | str, ...]) -> tuple[str, str]:
    """The dotted key of a pydantic error location and the description of that key."""
    parts = [str(part) for part in loc if not str(part).startswith(("literal[", "list["))]
    key = ".".join(parts)
    description = ""
    if len(parts) >= 2 and parts[0] in _SECTION_MODELS:
        field = _SECTION_MODELS[parts[0]].model_fields.get(parts[1])
        if field is not None and field.description:
            description = field.description
    return key, description


def _lookup(data: Any, loc: tuple[int | str, ...]) -> Any:
    for part in loc:
        in_dict = isinstance(data, dict) and part in data
        in_list = isinstance(data, list) and isinstance(part, int) and part < len(data)
        if in_dict or in_list:
            data = data[part]
        else:
            return None
    return data


def _messages(path: Path, data: dict[str, Any], error: ValidationError) -> list[str]:
    lines: list[str] = []
    for item in error.errors():
        loc = tuple(item["loc"])
        key, description = _describe(loc)
        kind = item["type"]
        if kind == "extra_forbidden":
            parent = loc[:-1]
            model = _SECTION_MODELS.get(str(parent[0])) if parent else Config
            valid = sorted(model.model_fields) if model else []
            valid = [name for name in valid if name not in ("source", "arm")]
            where = f"[{parent[0]}]" if parent else "the top level"
            lines.append(
                f"{path}: unknown key {key!r}.{suggest(str(loc[-1]), valid)} Valid keys in {where}: {', '.join(valid)}"
            )
        elif kind == "missing":
            hint = f" ({description})" if description else ""
            lines.append(f"{path}: missing key {key!r}{hint}; add it to the config")
        else:
            value = _lookup(data, loc)
            message = item["msg"]
            if message.startswith("Value error, "):
                message = message.removeprefix("Value error, ")
            rule = f"; {key} is {description}" if description else ""
            whole_section = kind in ("direction", "no_objective", "workload_kind", "repeated_arm")
            shown = f" = {value!r}" if value is not None and not whole_section else ""
            lines.append(f"{path}: {key}{shown}: {message}{rule}")
    # Report each key once: a union type yields one error per alternative.
    seen: set[str] = set()
    unique = []
    for line in lines:
        head = line.split(":", 2)[1]
        if head not in seen:
            seen.add(head)
            unique.append(line)
    return unique


def parse_config(data: dict[str, Any], path: Path) -> Config:
    """Validate the TOML data of a config file; raises ConfigError with one line per mistake."""
    experiment = data.get("experiment")
    if isinstance(experiment, dict) and "seed" in experiment and "seeds" in experiment:
        raise ConfigError(f"{path}: experiment: give seed = N or seeds = [...], not both")
    try:
        config = Config.model_validate({**data, "source": path.resolve()})
    except ValidationError as error:
        raise ConfigError("\n".join(_messages(path, data, error))) from None
    except RegistryError as error:
        raise ConfigError(f"{path}: {error}") from None
    _check_paths(config, path)
    _check_workload(config, path)
    _check_llm(config, path)
    _check_fail_fast(config, path)
    for index, arm in enumerate(config.arms):
        _check_arm(config, arm, index, path)
    return config


def _check_arm(config: Config, arm: ArmSection, index: int, path: Path) -> None:
    """Validate the config an arm makes, as a whole; each mistake names the arm."""
    where = f"arms[{index}] ({arm.name!r})"
    data = config.arm_data(arm)
    try:
        made = Config.model_validate(data)
    except ValidationError as error:
        lines = [line.removeprefix(f"{path}: ") for line in _messages(path, data, error)]
        raise ConfigError("\n".join(f"{path}: {where}: {line}" for line in lines)) from None
    except RegistryError as error:
        raise ConfigError(f"{path}: {where}: {error}") from None
    try:
        _check_workload(made, path)
        _check_llm(made, path)
    except ConfigError as error:
        raise ConfigError(str(error).replace(f"{path}: ", f"{path}: {where}: ", 1)) from None


def _check_llm(config: Config, path: Path) -> None:
    if config.mutators.llm > 0 and config.llm is None:
        raise ConfigError(
            f"{path}: mutators.llm = {config.mutators.llm:g}: the language model needs an [llm] section"
            ' with base_url and model, e.g. base_url = "http://127.0.0.1:8000/v1"'
        )


def _check_fail_fast(config: Config, path: Path) -> None:
    if config.tests.fail_fast and config.objectives.constraint is not Constraint.TRAIN_PASS:
        raise ConfigError(
            f"{path}: tests.fail_fast = true needs objectives.constraint = 'train_pass': under"
            f" '{config.objectives.constraint.value}' how many tests fail ranks the variants, so every test must run"
        )


def _check_workload(config: Config, path: Path) -> None:
    if "runtime" in config.objectives.names() and config.workload is None:
        raise ConfigError(
            f"{path}: objectives: 'runtime' needs a [workload] section, e.g. call = \"bench:run\" (a no-argument"
            " function in the project folder)"
        )


def _check_paths(config: Config, path: Path) -> None:
    root = config.program_root
    if not root.is_dir():
        raise ConfigError(
            f"{path}: program.root = {str(config.program.root)!r}: no such folder ({root});"
            " the path is relative to the config file"
        )
    for key, paths in (("tests.train", config.tests.train), ("tests.holdout", config.tests.holdout)):
        for test_path in paths:
            if not (root / test_path.split("::")[0]).resolve().is_relative_to(root):
                raise ConfigError(
                    f"{path}: {key}: {test_path!r} lies outside program.root ({root}); tests must be inside the project"
                )
            if not (root / test_path.split("::")[0]).exists():
                raise ConfigError(
                    f"{path}: {key}: {test_path!r} does not exist under program.root ({root});"
                    " test paths are relative to program.root"
                )


def load_config(path: Path | str, settings: Sequence[str] = ()) -> Config:
    """Read and validate a config file; `settings` ("table.key=VALUE", `gi run --set`) are laid
    over what it says, for every arm too, and validated with it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read the config file ({error})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    for reserved in ("source", "arm"):
        if reserved in data:
            raise ConfigError(f"{path}: unknown key {reserved!r}. Valid top-level tables: {', '.join(_SECTION_MODELS)}")
    config = parse_config(data, path)
    if not settings:
        return config
    data = _laid_over(data, settings)
    try:
        return parse_config(data, path)
    except ConfigError as error:  # the file alone is valid: the settings made the mistake
        lines = [f"--set: {line.removeprefix(f'{path}: ')}" for line in str(error).splitlines()]
        raise ConfigError("\n".join(lines)) from None


def _laid_over(data: dict[str, Any], settings: Sequence[str]) -> dict[str, Any]:
    """The config file's `data` with each "table.key=VALUE" setting in place. VALUE is read as
    a TOML value (4, 0.5, true, ["a", "b"], "text"); what TOML cannot read is taken as text, so
    --set search.algorithm=nsga3 needs no quotes. An arm's own value of the key gives way."""
    data = copy.deepcopy(data)
    for setting in settings:
        key, equals, raw = setting.partition("=")
        path = key.strip().split(".")
        if not equals or len(path) < 2 or not all(path):
            raise ConfigError(f"--set {setting}: give table.key=VALUE, as in --set workload.rigorous_processes=4")
        if path[0] not in _SECTION_MODELS:
            raise ConfigError(f"--set {setting}: no table {path[0]!r}. Valid tables: {', '.join(_SECTION_MODELS)}")
        try:
            value = tomllib.loads(f"value = {raw}")["value"]
        except tomllib.TOMLDecodeError:
            value = raw
        table = data
        for depth, part in enumerate(path[:-1], start=1):
            inner = table.setdefault(part, {})
            if not isinstance(inner, dict):
                raise ConfigError(f"--set {setting}: {'.'.join(path[:depth])} is not a table")
            table = inner
        table[path[-1]] = value
        if path[0] in ARM_SECTIONS:
            for arm in data.get("arms", []):
                if isinstance(arm, dict) and isinstance(arm.get(path[0]), dict):
                    arm[path[0]].pop(path[1], None)
    return data
