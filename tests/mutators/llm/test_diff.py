"""SEARCH/REPLACE blocks: parsed and applied through the drift models put into them."""

from __future__ import annotations

import pytest

from gi.mutators.llm.diff import Block, DiffError, apply_blocks, parse_blocks
from tests.mutators.llm.diff_corpus import corpus

CODE = """\
def total(items):
    result = 0
    for item in items:
        result = result + item
    return result
"""


def apply_reply(code: str, reply: str) -> str:
    return apply_blocks(code, parse_blocks(reply))[0]


def test_at_least_95_percent_of_the_drifted_corpus_applies_to_the_code_it_means() -> None:
    cases = corpus()
    failed = []
    for case in cases:
        try:
            got = apply_reply(case.code, case.reply)
        except DiffError as error:
            failed.append(f"{case.name}: {error}")
            continue
        if got != case.expected:
            failed.append(f"{case.name}: applied, but to other code:\n{got}")
    assert len(cases) >= 120
    assert len(failed) <= 0.05 * len(cases), "\n".join(failed)


def test_each_level_is_named() -> None:
    exact = "<<<<<<< SEARCH\n    return result\n=======\n    return int(result)\n>>>>>>> REPLACE"
    assert apply_blocks(CODE, parse_blocks(exact))[1] == ["exact"]
    trailing = exact.replace("    return result\n", "    return result  \n")
    assert apply_blocks(CODE, parse_blocks(trailing))[1] == ["trailing whitespace"]
    shifted = (
        "<<<<<<< SEARCH\nfor item in items:\n    result = result + item\n=======\nresult = sum(items)\n>>>>>>> REPLACE"
    )
    new, levels = apply_blocks(CODE, parse_blocks(shifted))
    assert levels == ["indentation"] and "    result = sum(items)\n    return result" in new
    blank = (
        "<<<<<<< SEARCH\n    result = 0\n\n    for item in items:\n"
        "=======\n    result = 1\n    for item in items:\n>>>>>>> REPLACE"
    )
    new, levels = apply_blocks(CODE, parse_blocks(blank))
    assert levels == ["blank lines"] and new == CODE.replace("result = 0", "result = 1")


def test_a_replace_written_from_column_0_under_an_exact_search_takes_the_match_s_indentation() -> None:
    reply = (
        "<<<<<<< SEARCH\n    for item in items:\n        result = result + item\n"
        "=======\nfor item in items:\n    result += item\n>>>>>>> REPLACE"
    )
    new, levels = apply_blocks(CODE, parse_blocks(reply))
    assert levels == ["exact"]
    assert new == CODE.replace("result = result + item", "result += item")
    compile(new, "total.py", "exec")
    # A trailing space in the SEARCH: the same at the next level.
    new, levels = apply_blocks(CODE, parse_blocks(reply.replace("in items:\n", "in items:  \n", 1)))
    assert levels == ["trailing whitespace"] and new == CODE.replace("result = result + item", "result += item")
    # A REPLACE that keeps the match's indentation on its first line and adds a definition at
    # column 0 after it is left as written.
    helper = (
        "<<<<<<< SEARCH\n    return result\n=======\n    return doubled(result)\n\n\n"
        "def doubled(x):\n    return 2 * x\n>>>>>>> REPLACE"
    )
    new = apply_reply(CODE, helper)
    assert new.endswith("    return doubled(result)\n\n\ndef doubled(x):\n    return 2 * x\n")


def test_a_search_text_found_twice_is_an_error_that_says_where() -> None:
    code = "def f(x):\n    x = x + 1\n    x = x + 1\n    return x\n"
    with pytest.raises(DiffError, match=r"found at 2 places \(lines 2, 3\)"):
        apply_reply(code, "<<<<<<< SEARCH\n    x = x + 1\n=======\n    x = x + 2\n>>>>>>> REPLACE")


def test_a_search_text_not_in_the_code_names_the_nearest_line() -> None:
    reply = "<<<<<<< SEARCH\n    for item in item_list:\n=======\n    for item in sorted(items):\n>>>>>>> REPLACE"
    with pytest.raises(DiffError, match="block 1: its SEARCH text is not in the code") as error:
        apply_reply(CODE, reply)
    assert "the nearest is `for item in items:`" in str(error.value)


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("Just use sum().", "holds no SEARCH/REPLACE block"),
        ("<<<<<<< SEARCH\n    return result\n>>>>>>> REPLACE", "block 1 lacks its `=======` line"),
        ("<<<<<<< SEARCH\n    return result\n=======\n    return 0\n", "block 1 lacks its `>>>>>>> REPLACE` line"),
        ("=======\n    return 0\n>>>>>>> REPLACE", "without its `<<<<<<< SEARCH` line"),
    ],
)
def test_malformed_replies_say_what_is_missing(reply: str, message: str) -> None:
    with pytest.raises(DiffError, match=message):
        parse_blocks(reply)


def test_blocks_apply_in_turn_and_an_empty_search_appends() -> None:
    blocks = [
        Block(("    result = 0",), ("    result = start",)),
        Block(("def total(items):",), ("def total(items, start=0):",)),
        Block((), ("def helper():", "    return 1")),
    ]
    new, levels = apply_blocks(CODE, blocks)
    assert levels == ["exact", "exact", "append"]
    assert new == CODE.replace("result = 0", "result = start").replace("(items)", "(items, start=0)", 1) + (
        "\ndef helper():\n    return 1\n"
    )
