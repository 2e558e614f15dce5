"""The layers of docs/architecture.md: imports point down only, and the parts do not know each other.

Every module of gi/, mutators/, fitness/ and populations/ (subpackages included) has a layer, given
by the package it lives in; a module this file does not know the layer of fails, so a new package
must say where it stands.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: The parts' folders, at the top of the repository, are the packages gi.mutators, gi.fitness and
#: gi.populations (linked from gi/; see pyproject.toml).
PARTS = ("mutators", "fitness", "populations")

#: Layer by package, lowest first: a module may import from its own layer and the layers below.
LAYERS: dict[str, int] = {
    "gi.model": 1,  # program, sites, edits, patch, results, errors, registries, guard, descriptions
    "gi.mutators": 2,  # the parts: each uses the model and itself only
    "gi.fitness": 2,
    "gi.populations": 2,
    "gi.algorithms": 3,  # the search: ask/tell algorithms and the variation they share
    "gi.config": 4,  # experiment configs (they name algorithms, operators, objectives)
    "gi.engine": 5,  # the services a run is made of: evaluation, sandbox, backends, timing, storage
    "gi.reports": 6,  # what a run folder shows: tables, report.html/.md, plots, comparisons
    "gi.run": 7,  # one run: the experiment wiring
    "gi.studies": 8,  # what is done with a finished run: validate, minimise, ablate, arms, apply
    "gi.cli": 9,  # the command line
}
LAYER_NAMES = dict(enumerate(("model", "parts", "search", "config", "engine", "reports", "run", "studies", "cli"), 1))
#: Scripts that run inside the sandbox beside the variant: they import nothing of gi or its parts.
SANDBOXED = "gi.fitness.sandboxed"
#: The engine's lowest part: the sandbox uses the model only (and itself), so it can be read alone.
SANDBOX = "gi.engine.sandbox"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[0] in PARTS:
        parts = ("gi", *parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(name: str) -> int | None:
    """The layer of a module or package by its dotted name; `gi` itself (its `__init__`) is the model's."""
    if name == "gi":
        return 1
    matches = [package for package in LAYERS if name == package or name.startswith(package + ".")]
    return LAYERS[max(matches, key=len)] if matches else None


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            # `from gi import plots` imports a module: judge the module, not the package
            folder = ROOT / node.module.replace(".", "/")
            found.update(
                f"{node.module}.{alias.name}"
                for alias in node.names
                if (folder / alias.name).is_dir() or (folder / f"{alias.name}.py").is_file()
            )
    return {name for name in found if name.split(".")[0] in ("gi", *PARTS)}


SOURCES = sorted(path for package in ("gi", *PARTS) for path in (ROOT / package).rglob("*.py"))


def test_every_package_has_a_layer() -> None:
    unknown = sorted(module_name(path) for path in SOURCES if layer_of(module_name(path)) is None)
    assert not unknown, f"modules of no known layer (add their package to LAYERS): {unknown}"


@pytest.mark.parametrize("path", SOURCES, ids=[module_name(p) for p in SOURCES])
def test_imports_point_down(path: Path) -> None:
    name = module_name(path)
    own = layer_of(name)
    assert own is not None, f"{name}: no known layer"
    used = imports(path)
    unknown = sorted(m for m in used if layer_of(m) is None)
    assert not unknown, f"{name} imports modules of no known layer: {unknown}"
    above = sorted(m for m in used if (layer_of(m) or 0) > own)
    assert not above, f"{name} ({LAYER_NAMES[own]}) imports from above it: {above}"
    if name == SANDBOXED or name.startswith(SANDBOXED + "."):
        assert not used, f"{name} runs inside the sandbox and imports {sorted(used)}"
    elif own == LAYERS["gi.mutators"]:
        package = name.split(".")[1]
        others = sorted(m for m in used if layer_of(m) == own and m.split(".")[1] != package)
        assert not others, f"{name} imports {others}; parts use only the model and themselves"
    if name == SANDBOX or name.startswith(SANDBOX + "."):
        engine = sorted(m for m in used if layer_of(m) == LAYERS["gi.engine"] and not m.startswith(SANDBOX))
        assert not engine, f"{name} imports {engine}; the sandbox uses only the model and itself"
    if own == LAYERS["gi.model"]:
        assert all(layer_of(m) == own for m in used), f"the model imports from above it: {sorted(used)}"


def test_layer_of_knows_the_layers() -> None:
    """The lookup this file judges by: the longest package that holds a module gives its layer."""
    assert layer_of("gi") == 1
    assert layer_of("gi.model.edits.statements") == 1
    assert layer_of("gi.engine.sandbox.runner") == 5
    assert layer_of("gi.cli.main") == 9
    assert layer_of("gi.modelling") is None  # a prefix of a name is not its package
    assert layer_of("tests.conftest") is None


def test_no_module_of_gi_names_the_models_operator() -> None:
    """The engine, the search and the run reach every operator through `mutators.Operator`'s
    hooks: the language model's class is named only in its own package."""
    naming = []
    for path in sorted((ROOT / "gi").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.id] if isinstance(node, ast.Name) else [node.attr] if isinstance(node, ast.Attribute) else []
            if isinstance(node, ast.ImportFrom):
                names = [alias.name for alias in node.names]
            if "LLMOperator" in names:
                naming.append(f"{module_name(path)}:{node.lineno}")
    assert not naming, naming


@pytest.mark.parametrize("path", SOURCES, ids=[module_name(p) for p in SOURCES])
def test_the_parts_are_imported_as_gis_subpackages(path: Path) -> None:
    """`import fitness` would find gi's folder only from the repository's root, and elsewhere a
    user's `fitness.py` or PyPI's `fitness`: the parts are always `gi.fitness` and so on."""
    bare = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            bare += [alias.name for alias in node.names if alias.name.split(".")[0] in PARTS]
        elif (
            isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.split(".")[0] in PARTS
        ):
            bare.append(node.module)
    assert not bare, f"{module_name(path)} imports {bare}; write gi.{bare[0]}"
