"""Measures keyed by what they depend on: the program, the patch, or the text."""

from __future__ import annotations

import warnings
from collections.abc import Callable

from gi.engine.measures import program_measures, variant_measures
from gi.model.edits import DeleteStatement, InsertStatement, ReplaceNumber, ReplaceStatement
from gi.model.guard import risky_names
from gi.model.patch import Patch, apply
from gi.model.program import Program
from gi.model.sites import Location, SiteKind

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


WARNED = r"""
def f(x):
    pattern = "\d+"
    if x is 1:
        return pattern
    return x * 2
"""


def test_code_the_compiler_warns_about_is_judged_without_a_warning(make_program: Callable[[str], Program]) -> None:
    """'"is" with a literal' and an invalid escape are legal code the compiler warns about. gi
    parses, compiles and measures such a variant in its own process: the warnings must not reach
    the user's terminal, and under `python -W error` they must not make it a syntax error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        program = make_program(WARNED)
        two = program.sites_of(SiteKind.NUMBER)[-1].location  # the 2 of x * 2
        variant = apply(program, Patch((ReplaceNumber(two, "3"),)))
        assert variant.syntax_error is None
        assert variant.tree_hash != program.tree_hash
        assert program_measures(variant)["complexity"] == 2
        assert variant_measures(variant)["size"] == 1
        assert risky_names('import gc\npattern = "\\d+"\n') == {"import gc"}, "the guard still reads it"
    statements = [site.location for site in program.sites_of(SiteKind.STATEMENT)]
    broken = apply(program, Patch((InsertStatement(statements[0], statements[-1]),)))  # return before the def
    assert broken.syntax_error == "mod.py:2: 'return' outside function"
