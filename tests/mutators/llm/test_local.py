"""A new version of a function, said as changes at the original statements where it is local."""

from __future__ import annotations

from collections.abc import Callable

from gi.model.program import Program
from gi.model.sites import Location, SiteKind
from gi.mutators.llm.local import Change, local_changes

SOURCE = """\
def total(items, positive=False):
    result = 0
    for item in items:
        if positive and item < 0:
            continue
        result = result + item
    return result
"""


def changes(program: Program, new: str) -> list[Change] | None:
    return local_changes(program, program.sites_of(SiteKind.FUNCTION)[0].location, new)


def at(path: str) -> Location:
    return Location("mod.py", f"body[0].body.{path}")


def test_a_changed_line_inside_a_loop_is_one_write_at_that_statement(make_program: Callable[[str], Program]) -> None:
    program = make_program(SOURCE)
    new = SOURCE.replace("result = result + item", "result += item")
    assert changes(program, new) == [Change("write", at("body[1].body.body[1]"), "result += item\n")]


def test_lines_put_in_and_taken_out_are_inserts_appends_and_deletes(make_program: Callable[[str], Program]) -> None:
    program = make_program(SOURCE)
    new = SOURCE.replace("    result = 0\n", "    result = 0\n    items = list(items)\n").replace(
        "        if positive and item < 0:\n            continue\n", ""
    )
    assert changes(program, new) == [
        Change("insert", at("body[1]"), "items = list(items)\n"),
        Change("delete", at("body[1].body.body[0]")),
    ]
    appended = SOURCE.replace("        result = result + item\n", "        result = result + item\n        seen = 1\n")
    assert changes(program, appended) == [Change("append", at("body[1].body.body[1]"), "seen = 1\n")]


def test_what_is_not_local_is_none(make_program: Callable[[str], Program]) -> None:
    program = make_program(SOURCE)
    assert changes(program, SOURCE.replace("positive=False", "positive=True")) is None, "the signature changed"
    assert changes(program, "def total(items, positive=False):\n    return sum(items)\n") is None, "all of it"
    assert changes(program, SOURCE) is None, "nothing changed"
    many = SOURCE.replace("    result = 0\n", "    a = 1\n    result = 0\n    b = 2\n")
    many = many.replace("    return result\n", "    c = 3\n    return result\n    d = 4\n")
    assert changes(program, many.replace("result + item", "item + result")) is None, "more changes than the limit"


def test_a_changed_loop_header_writes_the_loop_anew(make_program: Callable[[str], Program]) -> None:
    program = make_program(SOURCE)
    new = SOURCE.replace("for item in items:", "for item in sorted(items):")
    [change] = changes(program, new) or []
    assert change.action == "write" and change.target == at("body[1]")
    assert change.source.startswith("for item in sorted(items):\n    if positive")
