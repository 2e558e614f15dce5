"""Patch minimisation's passes: delta debugging and single-edit removals, and what counts as
keeping a member's scores. On real runs: tests/gi/test_overfitting.py."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from gi.minimize import Kept, Passes, ddmin, one_edit_removals


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


def test_kept_allows_runtime_within_its_interval_only() -> None:
    kept = Kept(("failed_tests", "runtime", "size"), (0.0, 0.5, 3.0), 0.0, (0.45, 0.55))
    assert kept((0.0, 0.52, 1.0), 0.0), "a smaller patch within the interval keeps it"
    assert not kept((0.0, 0.6, 1.0), 0.0)
    assert not kept((1.0, 0.5, 1.0), 0.0)
    assert not kept((0.0, 0.5, 1.0), 1.0), "another constraint verdict is not kept"
