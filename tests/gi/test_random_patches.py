"""Robustness of `apply`: long random patches on real-world modules always give compilable code."""

from __future__ import annotations

import numpy as np
import pytest

from gi.patch import Patch, apply
from gi.program import Program
from mutators import OPERATORS, MutationContext

EDITS = 1000


def random_patch(program: Program, names: list[str], seed: int) -> Patch:
    rng = np.random.default_rng(seed)
    edits = []
    while len(edits) < EDITS:
        name = names[int(rng.integers(len(names)))]
        edit = OPERATORS.get(name).propose(program, Patch(tuple(edits)), rng, MutationContext())
        assert edit is not None, f"{name} found no site in the real-world modules"
        edits.append(edit)
    return Patch(tuple(edits))


def assert_compiles(program: Program, patch: Patch) -> None:
    variant = apply(program, patch)
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
