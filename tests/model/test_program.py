from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gi.model.errors import ProgramError
from gi.model.program import Program
from gi.model.sites import Location, SiteKind

SOURCE = """\
import os


def f(x, y):
    # a comment
    if x < y and not x:
        return x + 1
    for i in range(3):
        x -= 2.5
        if i:
            break
    return -x


async def g():
    await f(1, 2)
"""


def test_sites_of_every_kind_are_found(make_program: Callable[[str], Program]) -> None:
    program = make_program(SOURCE)
    kinds = {site.kind for site in program.sites}
    assert kinds == set(SiteKind)
    statements = program.sites_of(SiteKind.STATEMENT)
    assert [s.line for s in statements] == [1, 4, 6, 7, 8, 9, 10, 11, 12, 15, 16]
    assert {s.function for s in statements} == {"", "f", "g"}


def test_statement_context_says_what_the_syntax_allows(make_program: Callable[[str], Program]) -> None:
    program = make_program(SOURCE)
    by_line = {site.line: site.context for site in program.sites_of(SiteKind.STATEMENT)}
    assert by_line[1] is not None and not by_line[1].in_function
    assert by_line[7] is not None and by_line[7].needs_function and by_line[7].in_function
    assert by_line[11] is not None and by_line[11].in_loop and by_line[11].needs_loop
    assert by_line[10] is not None and by_line[10].needs_loop  # the `if` holding the break
    assert by_line[8] is not None and not by_line[8].needs_loop  # the loop holds its own break
    assert by_line[16] is not None and by_line[16].needs_async and by_line[16].in_async_function


def test_locations_are_stable_across_parses(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text(SOURCE)
    first = Program.load(tmp_path, ["mod.py"])
    second = Program.load(tmp_path, ["*.py"])
    assert [s.location for s in first.sites] == [s.location for s in second.sites]
    location = first.sites_of(SiteKind.NUMBER)[0].location
    assert Location.from_json(location.to_json()) == location
    assert first.node(location).deep_equals(second.node(location))


def test_containment_is_by_path() -> None:
    outer = Location("a.py", "body[1]")
    assert outer.contains(Location("a.py", "body[1].body.body[0]"))
    assert not outer.contains(Location("a.py", "body[10]"))
    assert outer.contains(outer) and not outer.contains(outer, strictly=True)
    assert not outer.contains(Location("b.py", "body[1].body"))


def test_unparseable_file_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("x = 1\ndef f(:\n")
    with pytest.raises(ProgramError, match=r"bad\.py:2: cannot parse"):
        Program.load(tmp_path, ["bad.py"])


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("import os\n\n\n\nx = = 1\n\n\n\ny = 2\n", "bad.py:5: cannot parse: invalid syntax"),
        ("import os\n\n\n\nprint 'hi'\n\ny = 2\n", "bad.py:5: cannot parse: Missing parentheses in call to 'print'"),
        ("def g():\n\tif 1:\n        return 2\n", "bad.py:3: cannot parse: inconsistent use of tabs and spaces"),
    ],
)
def test_source_errors_name_the_line_python_names(tmp_path: Path, source: str, said: str) -> None:
    """The issue saw these at lines 9, 6 and 1 (libcst's count): the interpreter's compiler
    reads the file first, as it would import it."""
    (tmp_path / "bad.py").write_text(source)
    with pytest.raises(ProgramError) as error:
        Program.load(tmp_path, ["bad.py"])
    assert said in str(error.value)


def test_compile_errors_are_caught_at_load(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("x = 1\nreturn x\n")
    with pytest.raises(ProgramError, match=r"bad\.py:2: cannot parse: 'return' outside function"):
        Program.load(tmp_path, ["bad.py"])


def test_patterns_that_match_nothing_are_errors(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    with pytest.raises(ProgramError, match=r"no Python file matches 'b\.py'"):
        Program.load(tmp_path, ["b.py"])
    with pytest.raises(ProgramError, match="does not exist"):
        Program.load(tmp_path / "missing", ["a.py"])


def test_globs_skip_caches_and_environments(tmp_path: Path) -> None:
    for relative in ("pkg/a.py", "pkg/b.py", ".venv/c.py", "pkg/__pycache__/d.py"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("x = 1\n")
    assert Program.load(tmp_path, ["*.py"]).files == ("pkg/a.py", "pkg/b.py")


def test_a_case_pattern_offers_only_its_numbers(make_program: Callable[[str], Program]) -> None:
    """`case ast.Expr(e)` is no expression: `(1).Expr(e)` or `case +1:` would not parse.
    The guard after `if` is an expression like any other."""
    program = make_program("match x:\n    case ast.Expr(e) if e > -1:\n        pass\n    case -1:\n        y = a.b\n")
    expressions = {program.code(site.location) for site in program.sites_of(SiteKind.EXPRESSION)}
    assert expressions == {"e", "-1", "1", "a.b", "a"}
    unary = [site.line for site in program.sites_of(SiteKind.UNARY_OPERATOR)]
    assert unary == [2], "the guard's -1, not the pattern's"
    assert [site.line for site in program.sites_of(SiteKind.NUMBER)] == [2, 4]


def test_no_expression_site_inside_annotations_decorators_defaults_f_strings_or_lambdas(
    make_program: Callable[[str], Program],
) -> None:
    """A copy put into `f"{self.x}"` with its own quotes does not parse before Python 3.12;
    an annotation, a decorator or a default is no value the body computes. The f-string, the
    lambda and the comprehension are sites as wholes, and `self` in `self.total = ...` is read."""
    program = make_program(
        "@deco.attr(1)\n"
        "def f(a: t.X = d.e, *, b=g[0]) -> r.Y:\n"
        '    s = f"{self.x} {a[1]}"\n'
        "    h = lambda: q.w\n"
        "    c = [z.u for z in a.b]\n"
        "    x: ann.T = 3\n"
        "    self.total = a.b\n"
    )
    expressions = [program.code(site.location) for site in program.sites_of(SiteKind.EXPRESSION)]
    assert sorted(expressions) == sorted(
        ['f"{self.x} {a[1]}"', "lambda: q.w", "[z.u for z in a.b]", "3", "self", "a.b", "a"]
    )


def test_an_editable_file_outside_the_project_is_refused(tmp_path: Path) -> None:
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "calc.py").write_text("def f():\n    return 1\n")
    project = tmp_path / "proj"
    project.mkdir()
    with pytest.raises(ProgramError, match=r"program.files: '\.\./base/calc\.py' lies outside the project folder"):
        Program.load(project, ["../base/calc.py"])
    with pytest.raises(ProgramError, match="lies outside the project folder"):
        Program.load(project, [str(tmp_path / "base" / "calc.py")])
