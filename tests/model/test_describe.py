"""Edits in words: file:line and what changes, for every edit class, and for classes gi.model.describe
has never heard of; the front and operator tables at 80 columns, every description whole."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from rich.console import Console

from gi.model.describe import describe
from gi.model.edits import (
    EDIT_KINDS,
    AddCheck,
    Clamp,
    DeleteStatement,
    Edit,
    ExtendCondition,
    InsertControl,
    InsertGuard,
    InsertStatement,
    KeepOperand,
    MoveStatement,
    Negate,
    OffsetExpression,
    RemoveUnary,
    ReplaceExpression,
    ReplaceFunction,
    ReplaceName,
    ReplaceNumber,
    ReplaceOperator,
    ReplaceStatement,
    RewritePlan,
    SwapArguments,
    SwapStatements,
)
from gi.model.program import Program
from gi.model.sites import Location, SiteKind
from gi.reports.tables import front_view, operator_table

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


LEDGER = """\
def settle(items, fee, parts, day, open):
    total = 0
    for price, cost in items:
        total += price
    q, r = divmod(fee, total)
    first = items[:fee]
    if day >= 5 and open:
        return None
    balance = total - fee
    clipped = round(balance, fee, 2)
    if total > fee:
        balance -= fee
        q += 1
    else:
        q += 1
    return balance + a_rather_long_name_of_some_value * another_long_name
"""


@pytest.fixture(scope="module")
def ledger() -> Program:
    return Program(Path("/nonexistent"), {"ledger.py": LEDGER})


def expression(program: Program, code: str, line: int) -> Location:
    """The location of the expression site `code` on `line`."""
    found = [s.location for s in program.sites_of(SiteKind.EXPRESSION) if s.line == line]
    return next(location for location in found if program.code(location) == code)


def test_a_replaced_name_reads_old_becomes_new_in_its_line(ledger: Program) -> None:
    edit = ReplaceName(expression(ledger, "price", 4), "cost")
    assert describe(edit, ledger) == 'ledger.py:4 price becomes cost in "total += price"'


def test_a_swap_of_arguments_quotes_the_call(ledger: Program) -> None:
    assert describe(SwapArguments(expression(ledger, "divmod(fee, total)", 5), 0, 1), ledger) == (
        'ledger.py:5 swap the arguments of "divmod(fee, total)"'
    )
    assert describe(SwapArguments(expression(ledger, "round(balance, fee, 2)", 10), 0, 2), ledger) == (
        'ledger.py:10 swap arguments 1 and 3 of "round(balance, fee, 2)"'
    )


def test_a_replaced_expression_quotes_old_and_new_and_where_the_copy_is_from(ledger: Program) -> None:
    edit = ReplaceExpression(expression(ledger, "fee", 6), expression(ledger, "total - fee", 9))
    assert describe(edit, ledger) == (
        'ledger.py:6 "fee" becomes "total - fee" in "first = items[:fee]" (a copy from line 9)'
    )


def test_a_replaced_return_value_reads_like_any_replaced_expression(ledger: Program) -> None:
    """return_replace makes a ReplaceExpression at a returned value: the long value is cut."""
    value = expression(ledger, "balance + a_rather_long_name_of_some_value * another_long_name", 16)
    assert describe(ReplaceExpression(value, expression(ledger, "None", 8)), ledger) == (
        'ledger.py:16 "balance + a_rather_long_name_of_some_ ..." becomes "None"'
        ' in "return balance + a_rather_long_name_o ..." (a copy from line 8)'
    )


def test_an_offset_reads_n_becomes_n_plus_one(ledger: Program) -> None:
    assert describe(OffsetExpression(expression(ledger, "fee", 6), 1), ledger) == (
        'ledger.py:6 "fee" becomes "fee + 1" in "first = items[:fee]"'
    )
    assert describe(OffsetExpression(expression(ledger, "total - fee", 9), -1), ledger) == (
        'ledger.py:9 "total - fee" becomes "total - fee - 1" in "balance = total - fee"'
    )


def test_a_negation_quotes_the_negated_condition(ledger: Program) -> None:
    assert describe(Negate(expression(ledger, "day >= 5 and open", 7)), ledger) == (
        'ledger.py:7 "day >= 5 and open" becomes "not (day >= 5 and open)" in "if day >= 5 and open:"'
    )


def test_a_clamp_reads_wrap_in_its_function(ledger: Program) -> None:
    value = expression(ledger, "total - fee", 9)
    assert describe(Clamp(value, "max", "0"), ledger) == 'ledger.py:9 wrap "total - fee" in max(0, ...)'
    assert describe(Clamp(value, "min", "len(items)"), ledger) == (
        'ledger.py:9 wrap "total - fee" in min(..., len(items))'
    )
    assert describe(Clamp(value, "abs"), ledger) == 'ledger.py:9 wrap "total - fee" in abs(...)'


def test_a_kept_operand_quotes_what_is_kept_of_what(ledger: Program) -> None:
    condition = expression(ledger, "day >= 5 and open", 7)
    assert describe(KeepOperand(condition, "left"), ledger) == 'ledger.py:7 keep "day >= 5" of "day >= 5 and open"'
    assert describe(KeepOperand(condition, "right"), ledger) == 'ledger.py:7 keep "open" of "day >= 5 and open"'


def test_an_extended_condition_quotes_the_new_condition(ledger: Program) -> None:
    edit = ExtendCondition(expression(ledger, "open", 7), "Or", expression(ledger, "total > fee", 11))
    assert describe(edit, ledger) == (
        'ledger.py:7 "open" becomes "(open or total > fee)" in "if day >= 5 and open:" (a copy from line 11)'
    )


def test_an_added_check_quotes_the_new_condition(ledger: Program) -> None:
    edit = AddCheck(expression(ledger, "day >= 5", 7), "And", "day is not None")
    assert describe(edit, ledger) == (
        'ledger.py:7 "day >= 5" becomes "(day is not None and day >= 5)" in "if day >= 5 and open:"'
    )


def test_a_guard_quotes_the_guard_and_the_statement_it_stands_before(ledger: Program) -> None:
    ret = at(ledger, SiteKind.STATEMENT, 16)
    assert describe(InsertGuard(ret, "not parts", "return None"), ledger) == (
        'ledger.py:16 insert "if not parts: return None" before "return balance + a_rather_long_name_o ..."'
    )


def test_a_sibling_update_reads_as_a_copied_statement(ledger: Program) -> None:
    """sibling_update makes an InsertStatement: the copied update and its line."""
    edit = InsertStatement(at(ledger, SiteKind.STATEMENT, 15), at(ledger, SiteKind.STATEMENT, 12))
    assert describe(edit, ledger) == 'ledger.py:15 insert a copy of "balance -= fee" (line 12) before "q += 1"'


def test_every_edit_class_has_its_own_wording() -> None:
    without = [cls for cls in EDIT_KINDS.values() if "words" not in cls.__dict__]
    assert not without, without


@pytest.fixture
def unknown_edit_class() -> Iterator[type[Edit]]:
    """An edit class gi.model.describe does not know, as a new operator brings; unregistered after."""

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
