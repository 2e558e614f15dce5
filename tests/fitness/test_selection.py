from __future__ import annotations

from gi.fitness.selection import OUTSIDE_TESTS, Coverage, excluded_lines, first_tests

SOURCE = """\
def f(x):
    if x:  # pragma: no cover
        return 1
    return 2


def g():
    return 3
"""


def test_pragma_no_cover_excludes_its_block() -> None:
    assert excluded_lines(SOURCE) == {2, 3}


def coverage() -> Coverage:
    raw = {"m.py": {1: {OUTSIDE_TESTS}, 2: {"t::a"}, 3: {"t::a"}, 4: {"t::b"}, 7: {OUTSIDE_TESTS}}}
    return Coverage.of(raw, {"m.py": SOURCE})


def test_executed_reads_every_line_of_a_span_but_excluded_ones() -> None:
    cov = coverage()
    assert cov.executed("m.py", 4, 4)
    assert not cov.executed("m.py", 2, 3)  # they ran, but the project says no test is meant to judge them
    assert not cov.executed("m.py", 8, 8)
    assert cov.executed("m.py", 7, 8)


def test_tests_for_lines_and_lines_run_at_import() -> None:
    cov = coverage()
    assert cov.tests_for([("m.py", 4)]) == {"t::b"}
    assert cov.tests_for([("m.py", 2), ("m.py", 4)]) == {"t::a", "t::b"}
    assert cov.tests_for([("m.py", 8)]) == frozenset()
    assert cov.tests_for([("m.py", 4), ("m.py", 1)]) is None  # every test imports it


def test_json_round_trip() -> None:
    cov = coverage()
    assert Coverage.from_json(cov.to_json(), {"m.py": SOURCE}) == cov


def test_first_tests_puts_the_covering_tests_first_in_order() -> None:
    order = ["t::a", "t::b", "t::c", "t::d"]
    assert first_tests(frozenset({"t::c", "t::a"}), order) == ("t::a", "t::c", "t::b", "t::d")
    assert first_tests(None, order) == tuple(order)
