"""Patch minimisation's passes: delta debugging and single-edit removals, and what counts as
keeping a member's scores; a speed member of the batching example minimised on a real run.
On the grading example's runs: tests/gi/test_overfitting.py."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from gi.cli import main
from gi.edits import DeleteStatement, ReplaceNumber
from gi.minimize import (
    RUNTIME_TOLERANCE,
    Kept,
    Passes,
    ddmin,
    kept_of,
    minimize_patch,
    one_edit_removals,
    runtime_limit,
    runtime_tolerance,
)
from gi.patch import Patch
from gi.program import Location
from gi.rerun import FinishedRun


def judge(needed: set[str]) -> tuple[list[tuple[str, ...]], object]:
    """A judge that keeps a list when it holds every `needed` item; it records what it was asked."""
    asked: list[tuple[str, ...]] = []

    def keeps(subsets: Sequence[tuple[str, ...]]) -> list[bool]:
        asked.extend(subsets)
        return [needed <= set(subset) for subset in subsets]

    return asked, keeps


@pytest.mark.parametrize("needed", [{"c"}, {"a", "h"}, {"b", "c", "d", "g"}, set()])
def test_ddmin_finds_exactly_the_needed_items_in_order(needed: set[str]) -> None:
    items = tuple("abcdefgh")
    asked, keeps = judge(needed)
    found = ddmin(items, keeps, Passes())  # type: ignore[arg-type]
    assert set(found) == needed
    assert list(found) == sorted(found), "the edits keep their order"
    assert all(list(subset) == sorted(subset) for subset in asked)


def test_one_edit_removals_leave_a_one_minimal_list() -> None:
    passes = Passes()
    _, keeps = judge({"b", "e"})
    assert one_edit_removals(tuple("abcdef"), keeps, passes) == ("b", "e")  # type: ignore[arg-type]
    assert passes.counts["one_edit"] > 0


def test_kept_allows_runtime_up_to_its_limit_only() -> None:
    kept = Kept(("failed_tests", "runtime", "size"), (0.0, 0.5, 3.0), 0.0, 0.55)
    assert kept((0.0, 0.52, 1.0), 0.0), "a smaller patch within the tolerance keeps it"
    assert not kept((0.0, 0.6, 1.0), 0.0)
    assert not kept((1.0, 0.5, 1.0), 0.0)
    assert not kept((0.0, 0.5, 1.0), 1.0), "another constraint verdict is not kept"


def test_kept_compares_runtime_with_the_members_screening_ratio() -> None:
    kept = Kept(("failed_tests", "runtime", "size"), (0.0, 0.5, 2.0), 0.0, runtime_limit=0.55)
    assert kept((0.0, 0.5, 2.0), 0.0), "the member keeps itself"
    assert kept((0.0, 0.3, 1.0), 0.0), "a faster smaller patch keeps the speed-up"
    assert not kept((0.0, 0.6, 1.0), 0.0), "more than the tolerance slower loses it"
    assert not kept((0.0, math.nan, 1.0), 0.0), "a ratio that is not a number keeps nothing"
    assert runtime_tolerance([]) == RUNTIME_TOLERANCE
    assert runtime_tolerance([[1.0, 1.02]]) == RUNTIME_TOLERANCE, "a quiet machine: the floor"
    # Process means 25% apart: each of two screening measurements may be that far off.
    assert runtime_tolerance([[1.0, 1.1], [1.25]]) == pytest.approx(1.25**2 - 1)
    assert runtime_limit(0.5, 0.1) == pytest.approx(0.55)
    assert runtime_limit(0.5, 1.0) == pytest.approx(math.sqrt(0.5)), "closer to the member than to the original"
    assert runtime_limit(1.2, 0.1) == pytest.approx(1.32), "no speed-up: the tolerance alone"


BATCHING = Path(__file__).resolve().parents[2] / "experiments"
#: `BATCH_SIZE = 1` becomes 2: the speed-up (about 2x, README).
BATCH_SIZE_2 = ReplaceNumber(Location("batching.py", "body[1].body[0].value"), "2")
#: The docstring of `mean`, which the workload never calls: an edit that takes effect and does nothing.
MEAN_DOCSTRING = DeleteStatement(Location("batching.py", "body[3].body.body[0]"))


@pytest.fixture(scope="module")
def batching_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small run of the batching example (speed from constants), its front re-measured rigorously."""
    tmp_path = tmp_path_factory.mktemp("batching")
    text = (BATCHING / "batching.toml").read_text()
    text = text.replace('root = "programs/batching"', f'root = "{BATCHING / "programs" / "batching"}"')
    text = text.replace('output = "runs"', f'output = "{tmp_path / "runs"}"')
    text = text.replace("population = 12", "population = 6").replace("generations = 6", "generations = 1")
    text += "rigorous_processes = 6\n"  # the [workload] section is the last
    config = tmp_path / "batching.toml"
    config.write_text(text)
    assert main(["run", str(config), "--quiet"]) == 0
    return tmp_path / "runs" / "batching-speed-seed1"


@pytest.mark.slow
@pytest.mark.timing
def test_a_speed_members_minimised_patch_is_one_minimal(batching_run: Path) -> None:
    """The speed-up and an edit that achieves nothing: minimisation keeps the speed-up alone,
    judging screening ratios against the member's own screening ratio."""
    found = Patch((BATCH_SIZE_2, MEAN_DOCSTRING))
    with FinishedRun(batching_run) as run:
        kept = kept_of(run, found)
        [(_, whole)] = run.evaluate([found], "test")
        values, _ = run.scores(whole)
        screening = dict(zip(run.names, values, strict=True))["runtime"]
        assert screening < 0.9, f"BATCH_SIZE = 2 is no speed-up here ({screening})"
        assert kept.runtime_limit is not None and kept.runtime_limit >= screening
        assert kept(*run.scores(whole)), "the member keeps its own values"
        smaller, passes, kept_itself = minimize_patch(run, found, kept)
        assert kept_itself
        assert smaller.edits == (BATCH_SIZE_2,), [edit.describe() for edit in smaller.edits]
        assert sum(passes.counts.values()) > 0
        # 1-minimal: the smaller patch keeps the values, and removing any one edit loses them.
        [(_, evaluation)] = run.evaluate([smaller], "test")
        assert kept(*run.scores(evaluation))
        for index in range(len(smaller)):
            without = Patch(smaller.edits[:index] + smaller.edits[index + 1 :])
            [(_, evaluation)] = run.evaluate([without], "test")
            assert not kept(*run.scores(evaluation)), f"{smaller.edits[index].describe()} could go"


@pytest.mark.slow
@pytest.mark.timing
def test_gi_minimize_keeps_each_speed_member_itself(batching_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every front member keeps itself, whatever its rigorous speed-up says (another measurement)."""
    summary = json.loads((batching_run / "summary.json").read_text())
    speedy = [member for member in summary["front"] if member.get("speedup") and "error" not in member["speedup"]]
    assert speedy, "no member with a rigorous speed-up on this front"
    assert main(["minimize", str(batching_run)]) == 0
    minimised = json.loads((batching_run / "summary.json").read_text())
    for member in minimised["front"]:
        minimal = member["minimal"]
        assert minimal["kept_itself"] is True and "why" not in minimal
        if member.get("speedup"):
            assert minimal["runtime_limit"] >= member["objectives"]["runtime"]
            assert minimal["edits"], "the speed-up was kept"
    capsys.readouterr()
    assert main(["minimize", str(batching_run), "original"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"gi: error: {batching_run}: the original has no edits, so there is nothing to minimise; name a front"
        f" member (gi show {batching_run} lists them)"
    ]
