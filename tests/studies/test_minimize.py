"""Patch minimisation's passes: delta debugging and single-edit removals, and what counts as
keeping a member's scores. A speed member of the batching example minimised on a real run:
tests/studies/test_batching_speed.py; on the grading example's runs: tests/studies/test_overfitting.py."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from gi.studies.minimize import (
    RUNTIME_TOLERANCE,
    Kept,
    Passes,
    ddmin,
    one_edit_removals,
    runtime_limit,
    runtime_tolerance,
)


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
