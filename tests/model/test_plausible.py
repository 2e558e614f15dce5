"""Plausible patches ranked against overfitting: Tan et al.'s anti-patterns, then the smallest diff."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gi.model.edits import (
    AddCheck,
    DeleteStatement,
    InsertControl,
    InsertGuard,
    InsertStatement,
    ReplaceNumber,
    ReplaceOperator,
    ReplaceStatement,
)
from gi.model.patch import Patch, apply
from gi.model.plausible import anti_patterns, rank
from gi.model.program import Program
from gi.model.sites import Location

SOURCE = """\
def total(items, limit):
    count = 0
    result = 0
    for item in items:
        if item > limit:
            continue
        result += item
        count += 1
    return result


def record(store, key):
    store[key] = 1
"""


@pytest.fixture
def program(make_program: Callable[[str], Program]) -> Program:
    return make_program(SOURCE)


def at(path: str) -> Location:
    return Location("mod.py", path)


FOR = "body[0].body.body[2]"
IF = f"{FOR}.body.body[0]"
CONTINUE = f"{IF}.body.body[0]"
ADD = f"{FOR}.body.body[1]"
RETURN = "body[0].body.body[3]"
STORE = "body[1].body.body[0]"


def test_each_anti_pattern_is_named(program: Program) -> None:
    deleted = "deletes a statement"
    assert anti_patterns(program, Patch((DeleteStatement(at(RETURN)),))) == (deleted, "deletes an exit")
    assert anti_patterns(program, Patch((DeleteStatement(at(IF)),))) == (deleted, "deletes control")
    assert anti_patterns(program, Patch((DeleteStatement(at(CONTINUE)),))) == (
        deleted,
        "deletes an exit",
        "empties a block",
    )
    assert anti_patterns(program, Patch((DeleteStatement(at(ADD)),))) == (deleted, "deletes an update")
    assert anti_patterns(program, Patch((DeleteStatement(at(STORE)),))) == (
        deleted,
        "empties a block",
        "deletes an update",
    )
    assert anti_patterns(program, Patch((DeleteStatement(at("body[0].body.body[0]")),))) == (deleted,)
    assert anti_patterns(program, Patch((ReplaceStatement(at(RETURN), at(ADD)),))) == ("deletes an exit",)
    assert anti_patterns(program, Patch((InsertControl(at(ADD), "continue"),))) == ("adds an early exit",)
    assert anti_patterns(program, Patch((InsertGuard(at(ADD), "item < 0", "continue"),))) == ()
    assert anti_patterns(program, Patch((InsertGuard(at(ADD), "True", "continue"),))) == ("trivial condition",)
    assert anti_patterns(program, Patch((InsertStatement(at(ADD), at(CONTINUE)),))) == ("adds an early exit",)
    assert anti_patterns(program, Patch((AddCheck(at(f"{IF}.test"), "Or", "True"),))) == ("trivial condition",)


def test_edits_that_keep_behaviour_show_none(program: Program) -> None:
    comparison = ReplaceOperator(at(f"{IF}.test.comparisons[0]"), "GreaterThanEqual")
    assert anti_patterns(program, Patch((comparison,))) == ()
    assert anti_patterns(program, Patch((ReplaceNumber(at("body[0].body.body[0].body[0].value"), "1"),))) == ()


def test_the_least_change_of_behaviour_comes_first(program: Program) -> None:
    """Fewest anti-patterns, then the smallest diff, then fewest edits, then the first found."""
    deleting = Patch((DeleteStatement(at(IF)),))
    comparing = Patch((ReplaceOperator(at(f"{IF}.test.comparisons[0]"), "GreaterThanEqual"),))
    guarding = Patch((InsertControl(at(ADD), "continue"),))
    two = Patch((comparing.edits[0], ReplaceNumber(at("body[0].body.body[0].body[0].value"), "1")))
    patches = [deleting, guarding, two, comparing]
    lines = {patch: len(apply(program, patch).diff().splitlines()) for patch in patches}
    assert all(apply(program, patch).changed_files for patch in patches)
    order = [entry.patch for entry in rank(program, [(patch, lines[patch], 1) for patch in patches])]
    assert order[0] == comparing
    assert order[1] == two
    assert set(order[2:]) == {deleting, guarding}


def test_ties_go_to_the_edit_at_the_most_suspicious_line(program: Program) -> None:
    """Patches alike on anti-patterns, diff and edits: the one at the line fault localisation
    scores highest first, whichever was found first; a fewer anti-patterns still come first."""
    on_count = Patch((ReplaceNumber(at("body[0].body.body[0].body[0].value"), "1"),))  # count = 0, line 2
    on_result = Patch((ReplaceNumber(at("body[0].body.body[1].body[0].value"), "1"),))  # result = 0, line 3
    deleting = Patch((DeleteStatement(at(ADD)),))  # line 7
    patches = [(on_count, 2, 1), (on_result, 2, 1), (deleting, 2, 1)]
    assert [entry.patch for entry in rank(program, patches)] == [on_count, on_result, deleting]
    suspicious = {("mod.py", 2): 0.2, ("mod.py", 3): 0.9, ("mod.py", 7): 5.0}
    ranked = rank(program, patches, suspicious)
    assert [entry.patch for entry in ranked] == [on_result, on_count, deleting]
    assert [entry.suspiciousness for entry in ranked] == [0.9, 0.2, 5.0]


def test_fewer_tokens_changed_come_before_suspiciousness(program: Program) -> None:
    """Alike on anti-patterns, diff and edits: the patch changing fewer tokens first (a `+` for a
    `%` before a whole expression copied over it), however suspicious the other's line."""
    on_count = Patch((ReplaceNumber(at("body[0].body.body[0].body[0].value"), "1"),))  # line 2
    on_result = Patch((ReplaceNumber(at("body[0].body.body[1].body[0].value"), "1"),))  # line 3
    suspicious = {("mod.py", 2): 0.9, ("mod.py", 3): 0.2}
    ranked = rank(program, [(on_count, 2, 5), (on_result, 2, 1)], suspicious)
    assert [(entry.patch, entry.tokens) for entry in ranked] == [(on_result, 1), (on_count, 5)]
