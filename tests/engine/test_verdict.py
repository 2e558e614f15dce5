"""The guard judges what a model wrote, against everything the original and the variant's classic
edits already use: random classic patches on real-world modules never trip it, even beside a
model's rewrite, and a model's forgery beside classic edits is refused."""

from __future__ import annotations

import libcst as cst
import numpy as np
import pytest

from gi.engine.verdict import model_code_uses
from gi.model.edits import Edit, ReplaceFunction
from gi.model.patch import Patch, apply
from gi.model.program import Program
from gi.model.sites import SiteKind
from gi.mutators import OPERATORS, MutationContext

PATCHES = 40
EDITS = 20


def classic_patch(program: Program, seed: int) -> list[Edit]:
    rng = np.random.default_rng(seed)
    names = OPERATORS.names()
    edits: list[Edit] = []
    while len(edits) < EDITS:
        edit = OPERATORS.get(names[int(rng.integers(len(names)))]).propose(program, Patch(tuple(edits)), rng,
                                                                            MutationContext())  # fmt: skip
        if edit is not None:
            edits.append(edit)
    return edits


def rewrite(program: Program, seed: int, body: str) -> ReplaceFunction:
    """A model's rewrite of a top-level function of the program: `body` put first in it."""
    rng = np.random.default_rng(seed)
    functions = [site for site in program.sites_of(SiteKind.FUNCTION) if site.location.path.count("body") == 1]
    site = functions[int(rng.integers(len(functions)))]
    node = program.node(site.location)
    assert isinstance(node, cst.FunctionDef)
    indented = cst.parse_module(body).body
    new = node.with_changes(body=node.body.with_changes(body=(*indented, *node.body.body)))
    return ReplaceFunction(site.location, cst.Module(body=[new]).code)


@pytest.mark.parametrize("seed", range(PATCHES))
def test_classic_patches_beside_a_models_honest_rewrite_are_never_refused(real_world: Program, seed: int) -> None:
    classic = classic_patch(real_world, seed)
    honest = rewrite(real_world, seed, "_ = sorted(str(x) for x in range(3))\n")
    assert model_code_uses(real_world, apply(real_world, Patch((*classic, honest)))) == []
    assert model_code_uses(real_world, apply(real_world, Patch(tuple(classic)))) == []


def test_a_models_forgery_beside_classic_edits_is_refused(real_world: Program) -> None:
    judged = 0
    for seed in range(8):
        forged = rewrite(real_world, seed, "import os\n_ = os.path.sys.modules\n")
        variant = apply(real_world, Patch((forged, *classic_patch(real_world, seed))))
        if "os.path.sys.modules" not in variant.sources[forged.target.file]:
            continue  # a classic edit took the function's place
        judged += 1
        assert "posixpath.sys (the module sys)" in " ".join(model_code_uses(real_world, variant)), seed
    assert judged >= 4
