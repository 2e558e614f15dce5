"""Robustness of `apply`: long random patches on real-world modules always give compilable code,
and the expression operators and fix templates leave no name unbound."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from collections import Counter
from itertools import zip_longest
from pathlib import Path

import numpy as np
import pytest

from gi.model.describe import describe
from gi.model.edits import Edit
from gi.model.patch import Patch, apply
from gi.model.program import Program
from gi.mutators import OPERATORS, MutationContext, names, statements, templates

EDITS = 1000


def random_patch(program: Program, names: list[str], seed: int, edits: int = EDITS) -> Patch:
    rng = np.random.default_rng(seed)
    found: list[Edit] = []
    while len(found) < edits:
        name = names[int(rng.integers(len(names)))]
        edit = OPERATORS.get(name).propose(program, Patch(tuple(found)), rng, MutationContext())
        assert edit is not None, f"{name} found no site in the real-world modules"
        found.append(edit)
    return Patch(tuple(found))


def assert_compiles(program: Program, patch: Patch) -> None:
    variant = apply(program, patch)
    with warnings.catch_warnings():
        # Legal code the compiler warns about ('"is" with a literal'): expression edits make it.
        warnings.simplefilter("ignore", SyntaxWarning)
        for file in program.files:
            compile(variant.sources[file], file, "exec", dont_inherit=True)
    assert variant.syntax_error is None
    assert 0 < variant.effective_size <= len(patch)


@pytest.mark.parametrize("name", OPERATORS.names())
def test_a_thousand_edits_of_one_operator_apply_and_compile(real_world: Program, name: str) -> None:
    assert_compiles(real_world, random_patch(real_world, [name], seed=1))


@pytest.mark.parametrize("seed", [1, 2])
def test_a_thousand_edits_of_every_operator_apply_and_compile(real_world: Program, seed: int) -> None:
    assert_compiles(real_world, random_patch(real_world, OPERATORS.names(), seed=seed))


def test_a_rewrite_that_visits_only_the_changed_paths_writes_what_a_whole_tree_visit_writes(
    real_world: Program,
) -> None:
    """`apply` descends only into the nodes above a change; on random patches of every operator
    (short ones, and one of a hundred edits) the files equal those a visit of every node makes."""
    rng = np.random.default_rng(5)
    patches = [random_patch(real_world, OPERATORS.names(), seed=5, edits=100)]
    for _ in range(12):
        patches.append(random_patch(real_world, OPERATORS.names(), seed=int(rng.integers(1 << 30)), edits=3))
    for patch in patches:
        assert apply(real_world, patch).sources == apply(real_world, patch, whole_tree=True).sources, patch


# --- names stay bound ------------------------------------------------------------------------

#: One-edit variants drawn per new operator for the undefined-name check.
VARIANTS = 150
#: pyflakes' checks, as ruff has them: an undefined name, a local read before its assignment.
UNBOUND = ("F821", "F823")
NEW_OPERATORS = sorted(
    name for name in OPERATORS.names() if type(OPERATORS.get(name)).__module__ in (names.__name__, templates.__name__)
)


def unbound_names(folder: Path) -> dict[str, Counter[str]]:
    """ruff's F821/F823 findings in each file of `folder`: file name -> the messages, counted."""
    result = subprocess.run(
        [str(Path(sys.executable).with_name("ruff")), "check", "--isolated", "--no-cache", "--exit-zero",
         f"--select={','.join(UNBOUND)}", "--output-format=json", str(folder)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    found: dict[str, Counter[str]] = {path.name: Counter() for path in folder.iterdir()}
    for finding in json.loads(result.stdout):
        found[Path(finding["filename"]).name][f"{finding['code']} {finding['message']}"] += 1
    return found


def rounds(edits: list[Edit]) -> list[Patch]:
    """The edits in patches of at most one edit per top-level statement of each file: edits in
    different top-level statements share no local name, so each patch checks its edits at once."""
    groups: dict[tuple[str, str], list[Edit]] = {}
    for edit in edits:
        groups.setdefault((edit.target.file, edit.target.path.split(".")[0]), []).append(edit)
    return [Patch(tuple(e for e in batch if e is not None)) for batch in zip_longest(*groups.values())]


def new_findings(program: Program, patches: list[Patch], folder: Path) -> dict[str, Counter[str]]:
    """Each patch's findings that the original lacks, by file: `<patch index>_<file>` -> counts."""
    (folder / "original").mkdir(parents=True)
    for file in program.files:
        (folder / "original" / file).write_text(program.sources[file])
    (folder / "variants").mkdir()
    files: dict[str, str] = {}
    for index, patch in enumerate(patches):
        variant = apply(program, patch)
        for file in variant.changed_files:
            files[f"{index}_{file}"] = file
            (folder / "variants" / f"{index}_{file}").write_text(variant.sources[file])
    before = unbound_names(folder / "original")
    after = unbound_names(folder / "variants")
    return {name: after[name] - before[file] for name, file in files.items() if after[name] - before[file]}


@pytest.mark.parametrize("name", NEW_OPERATORS)
def test_no_new_operator_leaves_a_name_unbound(real_world: Program, name: str, tmp_path: Path) -> None:
    """No distinct one-edit variant of the operator among VARIANTS draws on the real-world
    modules has an undefined name, or a local read before its assignment, that the original
    lacks (ruff's pyflakes checks; the edits are checked a batch at a time, and a batch with a
    finding edit by edit, to name the edit)."""
    rng = np.random.default_rng(3)
    drawn = {OPERATORS.get(name).propose(real_world, Patch(), rng, MutationContext()) for _ in range(VARIANTS)}
    edits = sorted((edit for edit in drawn if edit is not None), key=str)
    assert len(edits) >= 20, f"{name} made only {len(edits)} distinct edits"
    batches = rounds(edits)
    suspects = [
        edit
        for found in new_findings(real_world, batches, tmp_path / "batches")
        for edit in batches[int(found.partition("_")[0])].edits
        if edit.target.file == found.partition("_")[2]
    ]
    singles = [Patch((edit,)) for edit in suspects]
    culprits = {
        describe(singles[int(found.partition("_")[0])].edits[0], real_world): dict(counts)
        for found, counts in new_findings(real_world, singles, tmp_path / "singles").items()
    }
    assert not culprits, f"{name} left names unbound: {culprits}"


def test_the_statement_operators_table_nests_sites_as_locations_contain_each_other(real_world: Program) -> None:
    """The statement operators find a site's partners in a table of sorted paths, not pair by
    pair: what it says lies inside or around a site is what `Location.contains` says."""
    table = statements._statements(real_world)
    sites = table.sites
    holding = 0
    for index in np.random.default_rng(3).choice(len(sites), size=150, replace=False):
        here = sites[index].location
        assert table.within(index).tolist() == [here.contains(site.location) for site in sites]
        assert table.around(index).tolist() == [site.location.contains(here) for site in sites]
        holding += int(table.within(index).sum()) > 1
    assert holding > 10, "too few sampled statements hold others to tell"
