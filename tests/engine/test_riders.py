"""Fronts that timing noise cannot bloat: a member whose extra edits make it no faster than a
smaller patch of it (and no better otherwise) is no better than that patch."""

from __future__ import annotations

from gi.engine.timing import riders
from gi.model.edits import DeleteStatement, InsertStatement, ReplaceNumber
from gi.model.patch import Patch
from gi.model.sites import Location

REWRITE = ReplaceNumber(Location("mod.py", "body[0].body.body[0].body[0].value"), "2")
JUNK = InsertStatement(Location("mod.py", "body[1]"), Location("mod.py", "body[2]"))
DOCSTRING = DeleteStatement(Location("mod.py", "body[0]"))

ORIGINAL = Patch()
ALONE = Patch((REWRITE,))
WITH_JUNK = Patch((REWRITE, JUNK))
WITH_DELETION = Patch((DOCSTRING, REWRITE))


def test_junk_riding_on_a_rewrite_is_found() -> None:
    """The issue's front: the rewrite alone, and the rewrite with junk (screened 4x better, by
    noise); side by side, neither junk member is faster than the rewrite alone."""
    front = [ORIGINAL, ALONE, WITH_JUNK, WITH_DELETION]
    speedups = {(1, 0): True, (2, 0): True, (3, 0): True, (2, 1): False, (3, 1): False}
    found = riders(front, lambda i, j: speedups[i, j], lambda i, j: False)
    assert found == {2: 1, 3: 1}


def test_extra_edits_that_make_it_faster_stay() -> None:
    front = [ORIGINAL, ALONE, WITH_JUNK]
    speedups = {(1, 0): True, (2, 0): True, (2, 1): True}
    assert riders(front, lambda i, j: speedups[i, j], lambda i, j: False) == {}


def test_extra_edits_that_are_better_otherwise_stay() -> None:
    """Not faster, but simpler (another objective): the member is no rider."""
    front = [ORIGINAL, ALONE, WITH_DELETION]
    speedups = {(1, 0): True, (2, 0): True, (2, 1): False}
    assert riders(front, lambda i, j: speedups[i, j], lambda i, j: (i, j) == (2, 1)) == {}


def test_a_member_no_faster_than_the_original_rides_on_nothing() -> None:
    """A member whose rigorous speed-up is not significant is no better than the original."""
    front = [ORIGINAL, ALONE]
    assert riders(front, lambda i, j: False, lambda i, j: False) == {1: 0}


def test_the_smallest_patch_it_does_no_better_than_is_named() -> None:
    """Faster than the original, not than the rewrite alone: it rides on the rewrite; no faster
    than anything: it rides on the original, the smallest patch of all."""
    front = [ORIGINAL, ALONE, WITH_JUNK]
    assert riders(front, lambda i, j: j == 0, lambda i, j: False) == {2: 1}
    assert riders(front, lambda i, j: False, lambda i, j: False) == {1: 0, 2: 0}
