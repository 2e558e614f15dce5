"""The JSON Schema of a config file (`gi config --schema`), for editors and the config reference.

It is made from the pydantic models, so it cannot drift from what `load_config` accepts, and
shaped as a TOML file is written: one table per section, `[[arms]]` tables holding the keys an
arm may set, and no null (TOML has none: a key left out takes its default). Every definition is
inlined and the dialect is Draft 7, which the TOML language servers (taplo, behind Even Better
TOML) read. The names a key takes from a registry (algorithms, operators, crossovers,
objectives, the grid's features and the islands' strategies) are listed, so an editor completes
them; a user's objective, "module:function", matches a pattern, as does a user's feature or
strategy. Rules across keys that a schema can say are said (seed or seeds, call or
command); the rest stay `load_config`'s (an objective's direction, paths that exist).
"""

from __future__ import annotations

import copy
from typing import Any

from gi.algorithms import ALGORITHMS
from gi.algorithms.features import EDIT_KIND
from gi.algorithms.strategies import MIGRATIONS, SELECTIONS
from gi.config.diversity import DOTTED, INSERTIONS
from gi.config.experiment import ARM_SECTIONS, Config
from gi.fitness.measures import MEASURES
from gi.fitness.objectives import OBJECTIVES, Direction
from gi.mutators import CROSSOVERS, OPERATORS

DRAFT = "http://json-schema.org/draft-07/schema#"
#: What a user's objective looks like: a function named by its module, "module:function".
USER_OBJECTIVE = r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$"
#: Keys the pydantic models have that a config file never sets.
INTERNAL = ("source", "arm")


def config_schema() -> dict[str, Any]:
    """The JSON Schema (Draft 7) of an experiment config as its TOML file is written."""
    generated = Config.model_json_schema(ref_template="#/$defs/{model}")
    definitions = generated.pop("$defs", {})
    schema = _tidy(_inlined(generated, definitions))
    properties = schema["properties"]
    for key in INTERNAL:
        del properties[key]
    for section in properties.values():
        section.pop("default", None)  # a section left out takes its keys' defaults
    _name_from_registries(properties)
    _rules_across_keys(schema)
    _arms_set_section_keys(properties)
    return {
        "$schema": DRAFT,
        **schema,
        "title": "gi experiment config",
        "description": "An experiment config of gi (genetic improvement for Python): `gi run CONFIG` runs it.",
    }


def _inlined(node: Any, definitions: dict[str, Any]) -> Any:
    """`node` with every `$ref` replaced by a copy of its definition (the models do not recurse)."""
    if isinstance(node, list):
        return [_inlined(item, definitions) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].removeprefix("#/$defs/")
        siblings = {key: value for key, value in node.items() if key != "$ref"}
        return {**_inlined(copy.deepcopy(definitions[name]), definitions), **_inlined(siblings, definitions)}
    return {key: _inlined(value, definitions) for key, value in node.items()}


def _tidy(node: dict[str, Any]) -> dict[str, Any]:
    """A schema without what TOML cannot write or an editor does not need: null alternatives and
    null defaults, pydantic's titles made from field names, its "path" format."""
    node = {key: value for key, value in node.items() if key != "title" and not (key == "format" and value == "path")}
    if "default" in node and node["default"] is None:
        del node["default"]
    if "anyOf" in node:
        kept = [alternative for alternative in node["anyOf"] if alternative != {"type": "null"}]
        if len(kept) == 1:
            del node["anyOf"]
            node = {**kept[0], **node}
        else:
            node["anyOf"] = kept
    # Recurse into the keywords that hold schemas (not into defaults or examples, which are data).
    for keyword in ("items", "additionalProperties", "not"):
        if isinstance(node.get(keyword), dict):
            node[keyword] = _tidy(node[keyword])
    for keyword in ("anyOf", "oneOf", "allOf"):
        if keyword in node:
            node[keyword] = [_tidy(alternative) for alternative in node[keyword]]
    if "properties" in node:
        node["properties"] = {name: _tidy(value) for name, value in node["properties"].items()}
    return node


def _name_from_registries(properties: dict[str, Any]) -> None:
    """List the names a key takes from a registry, for completion."""
    search = properties["search"]["properties"]
    search["algorithm"]["enum"] = ALGORITHMS.names()
    search["crossovers"]["items"]["enum"] = CROSSOVERS.names()
    operators = properties["mutators"]["properties"]["operators"]
    for alternative in operators["anyOf"]:
        if alternative.get("type") == "array":
            alternative["items"]["enum"] = OPERATORS.names()
    # Quality diversity: the grid's features, the islands' algorithms and the strategies, by name
    # or a user's dotted path.
    grid, islands = search["grid"]["properties"], search["islands"]["properties"]
    grid["features"]["items"] = {
        "type": "string",
        "anyOf": [{"enum": [*MEASURES.names(), EDIT_KIND]}, {"pattern": DOTTED.pattern}],
    }
    grid["insertion"]["anyOf"] = [{"enum": list(INSERTIONS)}, {"pattern": DOTTED.pattern}]
    islands["migration"]["anyOf"] = [{"enum": list(MIGRATIONS)}, {"pattern": DOTTED.pattern}]
    islands["selection"]["anyOf"] = [{"enum": list(SELECTIONS)}, {"pattern": DOTTED.pattern}]
    island = islands["island"]["items"]["properties"]
    island["algorithm"]["enum"] = [name for name in ALGORITHMS.names() if name != "islands"]
    for key, direction in (("minimize", Direction.MINIMIZE), ("maximize", Direction.MAXIMIZE)):
        names = [name for name in OBJECTIVES.names() if OBJECTIVES.get(name).direction is direction]
        properties["objectives"]["properties"][key]["items"] = {
            "type": "string",
            "anyOf": [{"enum": names}, {"pattern": USER_OBJECTIVE}],
        }


def _rules_across_keys(schema: dict[str, Any]) -> None:
    """The rules between keys that a schema can state: seed or seeds, call or command, and
    runtime needing a workload."""
    properties = schema["properties"]
    properties["experiment"]["not"] = {"required": ["seed", "seeds"]}
    properties["workload"]["oneOf"] = [{"required": ["call"]}, {"required": ["command"]}]
    runtime = {"properties": {"minimize": {"contains": {"const": "runtime"}}}, "required": ["minimize"]}
    schema["if"] = {"properties": {"objectives": runtime}, "required": ["objectives"]}
    schema["then"] = {"required": ["workload"]}


def _arms_set_section_keys(properties: dict[str, Any]) -> None:
    """An arm's `search`, `mutators` and `llm` hold keys of those sections, none of them required."""
    arm = properties["arms"]["items"]["properties"]
    for section in ARM_SECTIONS:
        keys = copy.deepcopy(properties[section])
        keys.pop("required", None)
        keys.pop("oneOf", None)
        keys["description"] = arm[section]["description"]
        if "examples" in arm[section]:
            keys["examples"] = arm[section]["examples"]
        arm[section] = keys
