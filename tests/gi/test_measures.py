"""Measures keyed by what they depend on: the program, the patch, or the text."""

from __future__ import annotations

from collections.abc import Callable

from gi.edits import DeleteStatement, InsertStatement, ReplaceStatement
from gi.evaluation import program_measures, variant_measures
from gi.patch import Patch, apply
from gi.program import Location, Program, SiteKind

SOURCE = """\
def f(values):
    total = 0
    for value in values:
        total += value
    return total
"""


def test_two_patches_to_one_program_keep_their_own_size_and_diff(make_program: Callable[[str], Program]) -> None:
    program = make_program(SOURCE)
    statements = [site.location for site in program.sites_of(SiteKind.STATEMENT)]
    target: Location = statements[1]  # total = 0
    ingredient: Location = statements[-1]  # return total
    one = Patch((ReplaceStatement(target, ingredient),))
    two = Patch((DeleteStatement(target), InsertStatement(target, ingredient)))
    short, long = apply(program, one), apply(program, two)
    assert short.tree_hash == long.tree_hash, "both patches make the same program"
    assert variant_measures(short)["size"] == 1 and variant_measures(long)["size"] == 2
    assert program_measures(short) == program_measures(long)


def test_text_measures_follow_the_text_not_the_tree(make_program: Callable[[str], Program]) -> None:
    tidy = make_program(SOURCE)
    messy = make_program(SOURCE.replace("total = 0", "total=0  # start"))
    assert apply(tidy, Patch()).tree_hash == apply(messy, Patch()).tree_hash
    assert variant_measures(apply(messy, Patch()))["style"] > variant_measures(apply(tidy, Patch()))["style"]
