"""Experiment configs: TOML files, validated in full before anything runs.

Every mistake becomes one line that names the file and the dotted key, shows the value,
states the rule and suggests a fix. Paths in a config are relative to the config file.
"""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from gi.config.diversity import DOTTED, grid_features, island_plan
from gi.config.experiment import ARM_SECTIONS, Config
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
)
from gi.fitness.objectives import Constraint, load_function
from gi.model.errors import ConfigError, RegistryError
from gi.model.registry import suggest

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


#: The names pydantic gives the alternatives of a union and its validators in an error's
#: location ("constrained-float", "literal['auto']", "function-after[...]", "int"): not keys.
_TYPE_TAG = re.compile(r"^(?:[a-z]+(?:-[a-z]+)+|[a-z-]+\[.*\]|int|float|str|bool|bytes|none)$", re.DOTALL)


def _key_loc(data: Any, loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """The parts of an error's location that name keys of the config (a type tag of pydantic's
    is dropped unless the config has a key of that name there)."""
    parts: list[int | str] = []
    for part in loc:
        present = isinstance(data, dict) and part in data
        if isinstance(part, str) and _TYPE_TAG.match(part) and not present:
            continue
        parts.append(part)
        data = data[part] if present or _in_list(data, part) else None
    return tuple(parts)


def _in_list(data: Any, part: int | str) -> bool:
    return isinstance(data, list) and isinstance(part, int) and part < len(data)


def _describe(loc: tuple[int | str, ...]) -> tuple[str, str]:
    """The dotted key of a location of keys and the description of that key."""
    parts = [str(part) for part in loc]
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
        if in_dict or _in_list(data, part):
            data = data[part]
        else:
            return None
    return data


def _messages(path: Path, data: dict[str, Any], error: ValidationError) -> list[str]:
    """One line per key at fault: a value that fits no alternative of a union says what each
    alternative asks for, in one line."""
    lines: dict[str, str] = {}
    rules: dict[str, tuple[str, list[str], str]] = {}
    for item in error.errors():
        loc = _key_loc(data, tuple(item["loc"]))
        key, description = _describe(loc)
        kind = item["type"]
        if kind == "extra_forbidden":
            parent = loc[:-1]
            model = _SECTION_MODELS.get(str(parent[0])) if parent else Config
            valid = sorted(model.model_fields) if model else []
            valid = [name for name in valid if name not in ("source", "arm")]
            where = f"[{parent[0]}]" if parent else "the top level"
            lines.setdefault(
                key,
                f"{path}: unknown key {key!r}.{suggest(str(loc[-1]), valid)} Valid keys in {where}: {', '.join(valid)}",
            )
        elif kind == "missing":
            hint = f" ({description})" if description else ""
            lines.setdefault(key, f"{path}: missing key {key!r}{hint}; add it to the config")
        else:
            value = _lookup(data, loc)
            message = str(item["msg"]).removeprefix("Value error, ")
            rule = f"; {key} is {description}" if description else ""
            whole_section = kind in ("direction", "no_objective", "workload_kind", "repeated_arm")
            shown = f" = {value!r}" if value is not None and not whole_section else ""
            head, messages, _ = rules.setdefault(key, (f"{path}: {key}{shown}", [], rule))
            if message not in messages:
                messages.append(message)
            lines.setdefault(key, "")
    for key, (head, messages, rule) in rules.items():
        lines[key] = f"{head}: {_either(messages)}{rule}"
    _unused_model(path, data, lines)
    return list(lines.values())


def _unused_model(path: Path, data: dict[str, Any], lines: dict[str, str]) -> None:
    """An [llm] section that lacks its server and model while mutators.llm is 0 (a key of it set
    with --set, say): one line that says the model is not used, in place of one per missing key."""
    missing = [key for key, line in lines.items() if key.startswith("llm.") and "missing key" in line]
    mutators = data.get("mutators")
    share = mutators.get("llm", 0) if isinstance(mutators, dict) else 0
    if not missing or share != 0:
        return
    names = " and ".join(missing)
    first = lines[missing[0]]
    for key in missing:
        del lines[key]
    lines[missing[0]] = first.split(": missing key")[0] + (
        f": [llm] lacks {names}, and mutators.llm is 0, so the model is not used: to use it, set"
        f" mutators.llm to its share of the edits (e.g. 0.3) and give {names}; else leave [llm] out"
    )


def _either(messages: list[str]) -> str:
    """What the alternatives of a union ask for, as one rule: "Input should be 'auto' or less
    than or equal to 1"."""
    first, *others = messages
    shared = "Input should be "
    if first.startswith(shared):
        others = [message.removeprefix(shared) for message in others]
    return " or ".join([first, *others])


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
    _check_objectives(config)
    _check_workload(config, path)
    _check_llm(config, path)
    _check_fail_fast(config, path)
    _check_search(config, path)
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
        _check_search(made, path)
    except ConfigError as error:
        raise ConfigError(str(error).replace(f"{path}: ", f"{path}: {where}: ", 1)) from None


def _check_llm(config: Config, path: Path) -> None:
    if config.mutators.llm > 0 and config.llm is None:
        raise ConfigError(
            f"{path}: mutators.llm = {config.mutators.llm:g}: the language model needs an [llm] section"
            ' with base_url and model, e.g. base_url = "http://127.0.0.1:8000/v1"'
        )


def _check_search(config: Config, path: Path) -> None:
    """The grid's features must be measured, each island's operators must be the run's (and one
    of them classic), and the strategies named by dotted path must import."""
    search = config.search
    features = grid_features(search)
    if "runtime" in features and "runtime" not in config.objectives.names():
        raise ConfigError(f"{path}: search.grid.features: 'runtime' is measured only when an objective is runtime")
    for name in features:
        if DOTTED.match(name):
            try:
                load_function(name if ":" in name else ":".join(name.rsplit(".", 1)), config.source.parent)
            except ValueError as error:
                raise ConfigError(f"{path}: search.grid.features: {error}") from None
    if search.algorithm != "islands":
        return
    available = set(config.mutators.names()) | ({"llm"} if config.mutators.llm > 0 else set())
    for index, island in enumerate(search.islands.island):
        where = f"{path}: search.islands.island[{index}]"
        if island.operators is None:
            continue
        unknown = sorted(set(island.operators) - available)
        if unknown:
            raise ConfigError(
                f"{where}.operators: {', '.join(unknown)} not among the run's operators (mutators.operators,"
                " and 'llm' with mutators.llm > 0)"
            )
        if not set(island.operators) - {"llm"}:
            raise ConfigError(f"{where}.operators: name at least one classic operator besides 'llm'")
    island_plan(search.islands, search.population, config.source.parent, path)


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


def _check_objectives(config: Config) -> None:
    """A user's objective function must import from the config's folder (ConfigError otherwise)."""
    config.objective_list()


def _check_paths(config: Config, path: Path) -> None:
    root = config.program_root
    if not root.is_dir():
        raise ConfigError(
            f"{path}: program.root = {str(config.program.root)!r}: no such folder ({root});"
            " the path is relative to the config file"
        )
    if config.program.python is not None and not config.python_path().exists():
        raise ConfigError(
            f"{path}: program.python = {config.program.python!r}: no such interpreter ({config.python_path()});"
            " the path is relative to the config file"
        )
    for held in config.tests.holdout:
        held_path = (root / held.split("::")[0]).resolve()
        for train in config.tests.train:
            train_path = (root / train.split("::")[0]).resolve()
            # (A held-out folder inside a training one is fine: it is left out of the training copies.)
            if train_path.is_relative_to(held_path):
                raise ConfigError(
                    f"{path}: tests.holdout {held!r} holds tests.train {train!r}: a held-out test must be one the"
                    " search never runs (tests.holdout_fraction holds out a share of the training tests instead)"
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
