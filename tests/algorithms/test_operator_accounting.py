"""What becomes of each proposed edit, counted alike for every operator: an offspring whose new
edit changed nothing (it took no effect, or made the same program) is `unchanged`, one that
repeats a program already here is a duplicate, and `valid` (the report's bar and column) is
what remains of the proposals: edits that made a program new to the population."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gi.algorithms.variation import Batch, Offspring, Variation
from gi.model.edits import DeleteStatement, ReplaceNumber
from gi.model.patch import Patch, apply
from gi.model.program import Program
from gi.model.sites import SiteKind
from gi.mutators import OPERATORS
from gi.reports.plots import operator_counts
from tests.daily import write_project


@pytest.fixture
def program(tmp_path: Path) -> Program:
    return Program.load(write_project(tmp_path / "chain"), ["chain.py"], protected=["tests", "holdout"])


def site(program: Program, kind: SiteKind, line: int) -> DeleteStatement | ReplaceNumber:
    (location,) = [s.location for s in program.sites_of(kind) if s.line == line]
    return DeleteStatement(location) if kind is SiteKind.STATEMENT else ReplaceNumber(location, "2")


def test_each_offspring_is_counted_once_by_what_its_new_edit_did(program: Program) -> None:
    variation = Variation(program, [OPERATORS.get("statement_delete")], [], np.random.default_rng(0))
    batch = Batch(variation, 1, {apply(program, Patch()).tree_hash}, max_edits=10)
    delete_check = site(program, SiteKind.STATEMENT, 2)  # if x < 0: raise ValueError("negative")
    delete_raise = site(program, SiteKind.STATEMENT, 3)  # the raise inside it
    same_number = site(program, SiteKind.NUMBER, 15)  # range(2) becomes range(2)
    delete_one = site(program, SiteKind.STATEMENT, 4)  # if x == 1: return "one"

    # Inside a statement the patch deletes, the new edit takes no effect: a program new to the
    # batch all the same (its parent's), so it is a candidate, but its edit changed nothing.
    assert batch.offer(Offspring(Patch((delete_check, delete_raise)), ("g0-i1",), "statement_delete", delete_raise))
    # It takes effect and makes the same program (the original, already here).
    assert not batch.offer(Offspring(Patch((same_number,)), ("g0-i0",), "constant", same_number))
    # It changes the program, into one already here: a duplicate.
    assert not batch.offer(Offspring(Patch((delete_check,)), ("g0-i0",), "statement_delete", delete_check))
    # It changes the program into a new one.
    assert batch.offer(Offspring(Patch((delete_one,)), ("g0-i0",), "statement_delete", delete_one))
    # An offspring without a new edit (a drop) that repeats a program is a duplicate of "drop".
    assert not batch.offer(Offspring(Patch((delete_one,)), ("g1-i3",), "drop", None))

    counts = variation.accounting
    assert (counts["statement_delete"]["unchanged"], counts["statement_delete"]["duplicates"]) == (1, 1)
    assert (counts["constant"]["unchanged"], counts["constant"]["duplicates"]) == (1, 0)
    assert (counts["drop"]["unchanged"], counts["drop"]["duplicates"]) == (0, 1)
    assert len(batch.candidates) == 2


def test_valid_is_proposed_less_what_changed_nothing_or_repeated_for_every_operator() -> None:
    rows = {
        "statement_delete": {"proposals": 35, "duplicates": 11, "unchanged": 2, "passing": 13, "front": 3},
        "llm": {"proposals": 10, "duplicates": 1, "unchanged": 0, "unparseable": 4, "no_ops": 3, "no_site": 7},
        "uniform": {"proposals": 0, "duplicates": 5},
    }
    assert [operator_counts(row)["valid"] for row in rows.values()] == [22, 9, 0]
    assert operator_counts(rows["statement_delete"])["proposed"] == 35
