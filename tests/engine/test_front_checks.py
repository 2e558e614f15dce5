"""The plausible patches a repair's summary lists: ranked among all the search found."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gi.engine.front_checks import PLAUSIBLE_LISTED, plausible_patches
from gi.engine.store import IndividualRecord, RunStore
from gi.model.edits import DeleteStatement
from gi.model.patch import Patch, apply
from gi.model.program import Program
from gi.model.results import Evaluation, Status
from gi.model.sites import Location

STATEMENTS = 30
SOURCE = "def f(x):\n" + "".join(f"    x = x + {k}\n" for k in range(STATEMENTS)) + "    return x\n"


def deleting(*lines: int) -> Patch:
    return Patch(tuple(DeleteStatement(Location("mod.py", f"body[0].body.body[{k}]")) for k in lines))


def test_every_plausible_patch_is_ranked_not_the_first_found(
    tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    """The search found 25 plausible patches of two deletions, then one of a single deletion (a
    smaller diff): that one is ranked first, though the first 20 found do not hold it."""
    program = make_program(SOURCE)
    tests = {"test_count": 3.0}
    baseline = Evaluation(Status.OK, apply(program, Patch()).tree_hash, {"failed_tests": 1.0, **tests})
    store = RunStore(tmp_path / "store.sqlite")
    patches = [deleting(k, k + 1) for k in range(25)] + [deleting(28)]
    with store.transaction():
        store.put_evaluation(baseline, individual="baseline", generation=-1)
        for number, patch in enumerate(patches):
            identifier = f"g{number}-i0"
            variant = apply(program, patch)
            store.put_evaluation(
                Evaluation(Status.OK, variant.tree_hash, {"failed_tests": 0.0, **tests}),
                individual=identifier,
                generation=number,
            )
            store.put_individual(IndividualRecord(identifier, number, variant.tree_hash, patch.to_json(), (), "x"))
    listed = plausible_patches(program, store, None, baseline, {})
    store.close()
    assert len(listed) == PLAUSIBLE_LISTED
    assert listed[0]["id"] == f"g{len(patches) - 1}-i0" and listed[0]["diff_lines"] == 1
    assert all(row["diff_lines"] == 2 for row in listed[1:])
