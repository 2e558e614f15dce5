"""The floors of docs/architecture.md: imports point down only, and the parts do not know each other."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODEL = {"gi", "gi.program", "gi.edits", "gi.patch", "gi.results", "gi.errors", "gi.registry", "gi.guard"}
PARTS = ("mutators", "fitness", "populations")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return {name for name in found if name.split(".")[0] in ("gi", *PARTS)}


SOURCES = sorted(path for package in ("gi", *PARTS) for path in (ROOT / package).glob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=[module_name(p) for p in SOURCES])
def test_imports_point_down(path: Path) -> None:
    name = module_name(path)
    used = imports(path)
    if name in MODEL:
        assert used <= MODEL, f"the model imports from above it: {sorted(used - MODEL)}"
    elif name.split(".")[0] in PARTS:
        own = name.split(".")[0]
        allowed = MODEL | {m for m in used if m.split(".")[0] == own}
        assert used <= allowed, f"{name} imports {sorted(used - allowed)}; parts use only the model and themselves"
