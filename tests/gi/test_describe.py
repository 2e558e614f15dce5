"""Edits in words: file:line and what changes, for every edit class, and for classes gi.describe
has never heard of; the front and operator tables at 80 columns, every description whole."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from rich.console import Console

from gi.describe import describe
from gi.edits import (
    EDIT_KINDS,
    DeleteStatement,
    Edit,
    InsertControl,
    InsertStatement,
    MoveStatement,
    RemoveUnary,
    ReplaceFunction,
    ReplaceNumber,
    ReplaceOperator,
    ReplaceStatement,
    RewritePlan,
    SwapStatements,
)
from gi.program import Location, Program, SiteKind
from gi.report import front_view, operator_table

SOURCE = """\
def check(score, limit=100):
    # reject what is out of range
    if score < 0 or score > limit:  # the range check
        raise ValueError(f"score out of range: {score}")
    total = -score
    while total < 10:
        # a comment line is no code
        total += 3
    return total * 2


def helper():
    return "done"
"""


@pytest.fixture(scope="module")
def program() -> Program:
    return Program(Path("/nonexistent"), {"grading.py": SOURCE})


def at(program: Program, kind: SiteKind, line: int, index: int = 0) -> Location:
    """The location of the `index`-th site of a kind starting on a line."""
    return [site.location for site in program.sites_of(kind) if site.line == line][index]


def test_statement_edits_name_the_line_and_quote_the_source(program: Program) -> None:
    check = at(program, SiteKind.STATEMENT, 3)
    total = at(program, SiteKind.STATEMENT, 5)
    ret = at(program, SiteKind.STATEMENT, 9)
    done = at(program, SiteKind.STATEMENT, 13)
    assert describe(DeleteStatement(check), program) == (
        'grading.py:3 delete "if score < 0 or score > limit: raise ..."'
    )
    assert describe(InsertStatement(ret, total), program) == (
        'grading.py:9 insert a copy of "total = -score" (line 5) before "return total * 2"'
    )
    assert describe(ReplaceStatement(total, done), program) == (
        'grading.py:5 replace "total = -score" with a copy of \'return "done"\' (line 13)'
    )
    assert describe(SwapStatements(total, ret), program) == (
        'grading.py:5 swap "total = -score" with "return total * 2" (line 9)'
    )
    assert describe(MoveStatement(ret, total), program) == (
        'grading.py:9 move "return total * 2" before "total = -score" (line 5)'
    )
    assert describe(InsertControl(ret, "break"), program) == 'grading.py:9 insert break before "return total * 2"'
    loop = at(program, SiteKind.STATEMENT, 6)
    assert describe(DeleteStatement(loop), program) == 'grading.py:6 delete "while total < 10: total += 3"'


def test_expression_edits_quote_their_line_without_its_comment(program: Program) -> None:
    boolean = at(program, SiteKind.BOOLEAN_OPERATOR, 3)
    comparison = at(program, SiteKind.COMPARISON, 3, 1)
    augmented = at(program, SiteKind.AUGMENTED_ASSIGNMENT, 8)
    unary = at(program, SiteKind.UNARY_OPERATOR, 5)
    number = at(program, SiteKind.NUMBER, 6)
    assert describe(ReplaceOperator(boolean, "And"), program) == (
        'grading.py:3 or becomes and in "if score < 0 or score > limit:"'
    )
    assert describe(ReplaceOperator(comparison, "GreaterThanEqual"), program) == (
        'grading.py:3 > becomes >= in "if score < 0 or score > limit:"'
    )
    assert describe(ReplaceOperator(augmented, "MultiplyAssign"), program) == (
        'grading.py:8 += becomes *= in "total += 3"'
    )
    assert describe(RemoveUnary(unary), program) == 'grading.py:5 "-score" becomes "score" in "total = -score"'
    assert describe(ReplaceNumber(number, "11"), program) == 'grading.py:6 10 becomes 11 in "while total < 10:"'


def test_a_rewritten_function_is_named(program: Program) -> None:
    helper = at(program, SiteKind.FUNCTION, 12)
    edit = ReplaceFunction(helper, 'def helper():\n    return "quick"\n', model="gemma")
    assert describe(edit, program) == "grading.py:12 rewrite function helper() by gemma"


@pytest.fixture
def unknown_edit_class() -> Iterator[type[Edit]]:
    """An edit class gi.describe does not know, as a new operator brings; unregistered after."""

    @dataclasses.dataclass(frozen=True, slots=True)
    class NegateCondition(Edit):
        kind: ClassVar[str] = "negate_condition"

        def contribute(self, plan: RewritePlan, program: Program) -> None:  # pragma: no cover
            raise NotImplementedError

    try:
        yield NegateCondition
    finally:
        EDIT_KINDS.pop("negate_condition", None)


def test_an_unknown_edit_class_still_gets_its_line_and_source(program: Program, unknown_edit_class: type[Edit]) -> None:
    comparison = at(program, SiteKind.COMPARISON, 6)
    assert (
        describe(unknown_edit_class(comparison), program)
        == 'grading.py:6 negate condition at "< 10" in "while total < 10:"'
    )


def test_a_subclass_of_a_known_edit_gets_the_generic_wording(program: Program) -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Unregistered(DeleteStatement):
        kind: ClassVar[str] = ""

    assert describe(Unregistered(at(program, SiteKind.STATEMENT, 5)), program) == (
        'grading.py:5 Unregistered at "total = -score"'
    )


def test_a_location_that_is_no_site_keeps_its_path(program: Program) -> None:
    nowhere = Location("grading.py", "body[7].body")
    assert describe(DeleteStatement(nowhere), program) == "grading.py:body[7].body delete (no such site)"


# --- tables at 80 columns ----------------------------------------------------------------------


def summary_with(descriptions: list[list[str]]) -> dict[str, Any]:
    names = ["failed_tests", "complexity", "maintainability", "size"]
    front: list[dict[str, Any]] = [
        {
            "id": "g0-i0",
            "generation": 0,
            "operator": "original",
            "objectives": dict.fromkeys(names, 0.0),
            "descriptions": [],
            "diff": None,
            "training": {"passed": 3, "failed": 0},
            "holdout": {"passed": 3, "failed": 0},
            "overfits": False,
        }
    ]
    for index, lines in enumerate(descriptions):
        front.append(
            {
                "id": f"g12-i{index + 10}",
                "generation": 12,
                "operator": "statement_replace",
                "objectives": {name: 10.0 + index for name in names},
                "descriptions": lines,
                "diff": f"patches/g12-i{index + 10}.diff",
                "training": {"passed": 3, "failed": 0},
                "holdout": {"passed": 1, "failed": 2},
                "overfits": True,
                "speedup": {"value": 1.52, "low": 1.4, "high": 1.7, "p_value": 0.001, "significant": True},
            }
        )
    return {
        "experiment": {"name": "a-rather-long-experiment-name", "seed": 12},
        "objectives": [{"name": name, "direction": "minimize"} for name in names],
        "baseline": {"objectives": dict.fromkeys(names, 12.0), "holdout": {"passed": 3, "failed": 0}},
        "front": front,
        "operators": {
            "comparison_operator": {
                "proposals": 120,
                "duplicates": 31,
                "evaluated": 89,
                "passing": 40,
                "front": 1,
                "seconds": 0.125,
            },
            "llm": {
                "proposals": 40,
                "unparseable": 3,
                "no_ops": 2,
                "evaluated": 35,
                "passing": 12,
                "front": 1,
                "tokens": 123456,
                "cost": 0.0321,
                "seconds": 41.5,
            },
        },
    }


def render(renderable: Any) -> str:
    console = Console(width=80, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    text = console.export_text()
    console.file.close()
    return text


def flat(text: str) -> str:
    """The text without box drawing and with whitespace runs collapsed, as a reader joins lines."""
    return re.sub(r"\s+", " ", re.sub(r"[│┃]", " ", text))


def test_the_front_at_80_columns_shows_every_description_whole_and_the_original_once(program: Program) -> None:
    descriptions = [
        [
            describe(DeleteStatement(at(program, SiteKind.STATEMENT, 3)), program),
            describe(ReplaceOperator(at(program, SiteKind.BOOLEAN_OPERATOR, 3), "And"), program),
        ],
        [describe(InsertStatement(at(program, SiteKind.STATEMENT, 9), at(program, SiteKind.STATEMENT, 5)), program)],
    ]
    text = render(front_view(summary_with(descriptions)))
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text, f"a cell was cut:\n{text}"
    for line in (line for lines in descriptions for line in lines):
        assert line in flat(text), f"{line!r} is not whole in\n{text}"
    assert "g0-i0" not in text, "the original is shown once, as 'original'"
    assert text.count("original") == 2, text  # its row, and the caption saying it is on the front
    assert "speed-up 1.52x (1.4-1.7)" in text
    for title in ("failed", "tests", "complexity", "held-out", "overfits", "edits"):
        assert title in text, f"column title {title!r} is cut in\n{text}"


def test_the_operator_table_at_80_columns_keeps_names_and_titles(program: Program) -> None:
    text = render(operator_table(summary_with([])))
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text, f"a cell was cut:\n{text}"
    for word in ("comparison_operator", "proposed", "repeats", "run", "passing", "front", "secs"):
        assert word in text, f"{word!r} missing from\n{text}"
    assert "llm: 3 unparseable replies, 2 edits that changed nothing, 123456 tokens, 0.0321 USD" in flat(text)
    assert "comparison_operator:" not in text, "counts that are 0 are left out"
