"""Registries with an entry-point group: what an installed package declares is added at the first
read, with where it comes from; what is not a component of the group is one clear line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gi.algorithms import _installed_algorithm
from gi.fitness.objectives import OBJECTIVES, _installed_objective
from gi.model.errors import PluginError
from gi.model.registry import Registry
from gi.mutators import OPERATORS
from gi.mutators.base import _installed_operator

MODULE = """\
from gi.fitness.objectives import OBJECTIVES
from gi.mutators import OPERATORS

not_an_operator = object()
renamed = OPERATORS.get("constant")
complexity = OBJECTIVES.get("complexity")
"""


def installed(folder: Path, group: str, entries: dict[str, str]) -> None:
    """A distribution `gi-test-entries` 0.3 as an installer leaves it in `folder` (its module, and
    its .dist-info with the entry points of `group`)."""
    (folder / "gi_test_entries.py").write_text(MODULE)
    info = folder / "gi_test_entries-0.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gi-test-entries\nVersion: 0.3\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entries.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}")


@pytest.mark.parametrize(
    ("entries", "accept", "problem"),
    [
        ({"broken": "gi_test_entries:missing"}, _installed_operator, "cannot load it (AttributeError"),
        ({"other": "gi_test_entries:not_an_operator"}, _installed_operator, "not an operator: it lacks description"),
        ({"mine": "gi_test_entries:renamed"}, _installed_operator, "the operator's name is 'constant', not 'mine'"),
        ({"bad-name": "gi_test_entries:renamed"}, _installed_operator, "a letter, then letters, digits and _"),
        ({"mine": "gi_test_entries:renamed"}, _installed_objective, "not an objective but ConstantTweak"),
        ({"complexity": "gi_test_entries:complexity"}, _installed_algorithm, "not an algorithm"),
    ],
)
def test_a_component_that_is_not_what_its_group_holds_is_one_line_naming_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entries: dict[str, str], accept: object, problem: str
) -> None:
    group = f"gi.test_{tmp_path.name}"
    installed(tmp_path, group, entries)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry: Registry[object] = Registry("component", group, accept)  # type: ignore[arg-type]
    with pytest.raises(PluginError) as caught:
        registry.names()
    [(name, value)] = entries.items()
    assert str(caught.value).startswith(f"gi-test-entries 0.3: entry point {name} = {value!r} in {group}: ")
    assert problem in str(caught.value)
    with pytest.raises(PluginError, match=re.escape(problem)):  # every read says it, not only the first
        registry.get("own")


def test_an_installed_component_is_added_with_its_origin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    group = f"gi.test_{tmp_path.name}"
    installed(tmp_path, group, {"constant_again": "gi_test_entries:complexity"})
    monkeypatch.syspath_prepend(str(tmp_path))
    registry: Registry[object] = Registry("component", group)
    registry.add("own", object())
    assert registry.names() == ["constant_again", "own"]
    assert registry.names(built_in=True) == ["own"]
    assert registry.origin("constant_again") == "gi-test-entries 0.3" and registry.origin("own") == "gi"
    assert registry.get("constant_again") is OBJECTIVES.get("complexity")
    assert OPERATORS.origin("constant") == "gi"
