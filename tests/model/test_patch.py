from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

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
    SwapArguments,
    SwapStatements,
)
from gi.model.errors import EditError
from gi.model.patch import Patch, apply
from gi.model.program import Program
from gi.model.sites import Location, SiteKind

SOURCE = """\
def f(x):
    y = x * 2  # double
    if y > 3:
        y = y - 1
        z = -y
    return y
"""


def statements(program: Program) -> list[Location]:
    return [site.location for site in program.sites_of(SiteKind.STATEMENT)]


def test_empty_patch_gives_every_real_world_file_back_byte_for_byte(real_world: Program) -> None:
    variant = apply(real_world, Patch())
    assert len(real_world.files) == 5
    for file in real_world.files:
        assert variant.sources[file] == real_world.sources[file]
    assert variant.diff() == ""
    assert variant.tree_hash == real_world.tree_hash


def test_edits_keep_formatting_and_comments_elsewhere(make_program: Callable[[str], Program]) -> None:
    program = make_program(SOURCE)
    s = statements(program)  # 0 def, 1 y=, 2 if, 3 y=y-1, 4 z=, 5 return
    variant = apply(program, Patch((DeleteStatement(s[3]),)))
    assert variant.sources["mod.py"] == SOURCE.replace("        y = y - 1\n", "")


def test_emptied_block_gets_pass(make_program: Callable[[str], Program]) -> None:
    program = make_program(SOURCE)
    s = statements(program)
    variant = apply(program, Patch((DeleteStatement(s[3]), DeleteStatement(s[4]))))
    assert "    if y > 3:\n        pass\n" in variant.sources["mod.py"]
    assert variant.effective == (True, True)


def test_edit_inside_a_deleted_statement_is_a_no_op(make_program: Callable[[str], Program]) -> None:
    program = make_program(SOURCE)
    s = statements(program)
    binary = program.sites_of(SiteKind.BINARY_OPERATOR)[1].location  # y - 1
    variant = apply(program, Patch((DeleteStatement(s[2]), ReplaceOperator(binary, "Add"))))
    assert variant.effective == (True, False)
    assert variant.effective_size == 1
    assert "y + 1" not in variant.sources["mod.py"]


def test_later_removal_voids_an_earlier_edit(make_program: Callable[[str], Program]) -> None:
    program = make_program(SOURCE)
    s = statements(program)
    binary = program.sites_of(SiteKind.BINARY_OPERATOR)[1].location
    variant = apply(program, Patch((ReplaceOperator(binary, "Add"), DeleteStatement(s[2]))))
    assert variant.effective == (False, True)
    assert variant.minimal() == Patch((DeleteStatement(s[2]),))
    assert apply(program, variant.minimal()).sources == variant.sources


def test_last_rewrite_of_a_node_wins(make_program: Callable[[str], Program]) -> None:
    program = make_program(SOURCE)
    number = program.sites_of(SiteKind.NUMBER)[0].location  # the 2 in x * 2
    variant = apply(program, Patch((ReplaceNumber(number, "5"), ReplaceNumber(number, "-1"))))
    assert variant.effective == (False, True)
    assert "y = x * -1  # double" in variant.sources["mod.py"]


def test_insertion_before_a_deleted_statement_still_happens(make_program: Callable[[str], Program]) -> None:
    program = make_program(SOURCE)
    s = statements(program)
    variant = apply(program, Patch((DeleteStatement(s[4]), InsertStatement(s[4], s[1]))))
    assert variant.effective == (True, True)
    assert "        y = y - 1\n        y = x * 2  # double\n    return y" in variant.sources["mod.py"]


def test_swap_move_and_control(make_program: Callable[[str], Program]) -> None:
    program = make_program(SOURCE)
    s = statements(program)
    swapped = apply(program, Patch((SwapStatements(s[3], s[4]),))).sources["mod.py"]
    assert "        z = -y\n        y = y - 1\n" in swapped
    moved = apply(program, Patch((MoveStatement(s[4], s[5]),))).sources["mod.py"]
    assert "        y = y - 1\n    z = -y\n    return y\n" in moved
    returned = apply(program, Patch((InsertControl(s[3], "return"),))).sources["mod.py"]
    assert "    if y > 3:\n        return\n        y = y - 1\n" in returned


def test_tree_hash_ignores_formatting_and_comments(make_program: Callable[[str], Program]) -> None:
    plain = make_program(SOURCE)
    reformatted = make_program(SOURCE.replace("x * 2  # double", "(x*2)").replace("y > 3", "y>3"))
    changed = make_program(SOURCE.replace("x * 2", "x * 3"))
    assert plain.tree_hash == reformatted.tree_hash
    assert plain.tree_hash != changed.tree_hash


def test_patches_making_the_same_program_share_a_hash(make_program: Callable[[str], Program]) -> None:
    program = make_program(SOURCE)
    s = statements(program)
    one = apply(program, Patch((DeleteStatement(s[3]),)))
    two = apply(program, Patch((DeleteStatement(s[3]), DeleteStatement(s[3]))))
    assert one.tree_hash == two.tree_hash and two.effective == (True, False)


@pytest.mark.parametrize("tool", ["patch", "git"])
def test_diff_applies_with_standard_tools(make_program: Callable[[str], Program], tmp_path: Path, tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed")
    program = make_program(SOURCE.rstrip("\n"))  # no newline at the end of the file
    s = statements(program)
    variant = apply(
        program,
        Patch(
            (
                DeleteStatement(s[3]),
                ReplaceNumber(program.sites_of(SiteKind.NUMBER)[0].location, "7"),
                DeleteStatement(s[5]),
            )
        ),
    )
    folder = tmp_path / "apply"
    shutil.copytree(program.root, folder)
    (folder / "change.diff").write_text(variant.diff())
    command = ["patch", "-p1", "-i", "change.diff"] if tool == "patch" else ["git", "apply", "change.diff"]
    subprocess.run(command, cwd=folder, check=True, capture_output=True)
    assert (folder / "mod.py").read_text() == variant.sources["mod.py"]


def every_kind(program: Program) -> list[Edit]:
    s = statements(program)
    return [
        DeleteStatement(s[1]),
        InsertStatement(s[2], s[1]),
        ReplaceStatement(s[3], s[1]),
        SwapStatements(s[3], s[4]),
        MoveStatement(s[4], s[1]),
        InsertControl(s[3], "return"),
        ReplaceOperator(program.sites_of(SiteKind.COMPARISON)[0].location, "LessThan"),
        RemoveUnary(program.sites_of(SiteKind.UNARY_OPERATOR)[0].location),
        ReplaceNumber(program.sites_of(SiteKind.NUMBER)[0].location, "0.5"),
        ReplaceFunction(s[0], "def f(x):\n    return x\n", model="m", prompt_hash="h", prompt_tokens=3),
    ]


EXPRESSIONS = """\
def f(x, y):
    if x > 0 and y:
        return divmod(x, y)
    return x - 1
"""


def expression_kinds(program: Program) -> list[Edit]:
    """One edit of each expression-level kind, on EXPRESSIONS."""
    at = {program.code(site.location): site.location for site in program.sites_of(SiteKind.EXPRESSION)}
    return [
        ReplaceExpression(at["x - 1"], at["divmod(x, y)"]),
        ReplaceName(at["y"], "x"),
        SwapArguments(at["divmod(x, y)"], 0, 1),
        OffsetExpression(at["x - 1"], -1),
        Negate(at["x > 0"]),
        Clamp(at["x - 1"], "min", "y"),
        KeepOperand(at["x > 0 and y"], "right"),
        ExtendCondition(at["x > 0 and y"], "Or", at["x > 0"]),
        AddCheck(at["x > 0 and y"], "And", "y is not None"),
        InsertGuard(statements(program)[1], "y is None", "return 0"),
    ]


def test_every_edit_kind_round_trips_through_json(make_program: Callable[[str], Program]) -> None:
    program, expressions = make_program(SOURCE), make_program(EXPRESSIONS)
    edits = {program: every_kind(program), expressions: expression_kinds(expressions)}
    assert {edit.kind for kinds in edits.values() for edit in kinds} == set(EDIT_KINDS)
    for target, kinds in edits.items():
        patch = Patch(tuple(kinds))
        again = Patch.from_json(json.loads(json.dumps(patch.to_json())))
        assert again == patch and hash(again) == hash(patch)
        assert again.key() == patch.key()
        again.check(target)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"target": {"file": "a", "path": "b"}}, "with a 'kind'"),
        ({"kind": "explode", "target": {"file": "a", "path": "b"}}, "unknown edit kind 'explode'"),
        ({"kind": "delete_statement"}, "lacks the field 'target'"),
        ({"kind": "delete_statement", "target": "body[0]"}, "a location is"),
        ({"kind": "replace_number", "target": {"file": "a", "path": "b"}, "value": "x"}, "not a numeric literal"),
        ({"kind": "delete_statement", "target": {"file": "a", "path": "b"}, "extra": 1}, "unknown fields"),
    ],
)
def test_malformed_edits_are_clear_errors(data: dict[str, object], message: str) -> None:
    with pytest.raises(EditError, match=message):
        Edit.from_json(data)


def test_patch_naming_a_missing_site_fails_check(make_program: Callable[[str], Program]) -> None:
    program = make_program(SOURCE)
    with pytest.raises(EditError, match="no site of the program"):
        Patch((DeleteStatement(Location("mod.py", "body[9]")),)).check(program)


PRECEDENCE = """\
def f(a, b, items):
    c = a + b
    if a and b:
        items.append(c)
    return a * b
"""


@pytest.mark.parametrize(
    ("make", "line"),
    [
        (lambda at: ReplaceExpression(at["b", 5], at["a + b", 2]), "    return a * (a + b)\n"),
        (lambda at: OffsetExpression(at["b", 5], 1), "    return a * (b + 1)\n"),
        (lambda at: OffsetExpression(at["a * b", 5], -1), "    return a * b - 1\n"),
        (lambda at: Clamp(at["a", 5], "max", "0"), "    return max(0, a) * b\n"),
        (lambda at: Clamp(at["a * b", 5], "min", "c"), "    return min(a * b, c)\n"),
        (lambda at: ReplaceExpression(at["items", 4], at["1", 8]), "        (1).append(c)\n"),
        (lambda at: Negate(at["a and b", 3]), "    if not (a and b):\n"),
        (lambda at: KeepOperand(at["a and b", 3], "right"), "    if b:\n"),
        (lambda at: ExtendCondition(at["a", 3], "Or", at["a + b", 2]), "    if (a or (a + b)) and b:\n"),
        (lambda at: AddCheck(at["a", 3], "Or", "a is None"), "    if (a is None or a) and b:\n"),
        (lambda at: AddCheck(at["a and b", 3], "And", "not b", first=False), "    if (a and b) and not b:\n"),
    ],
)
def test_expression_edits_keep_their_meaning_where_they_go(
    make_program: Callable[[str], Program], make: Callable[[dict[tuple[str, int], Location]], Edit], line: str
) -> None:
    program = make_program(PRECEDENCE + "\n\nONE = 1\n")
    at = {(program.code(s.location), s.line): s.location for s in program.sites_of(SiteKind.EXPRESSION)}
    source = apply(program, Patch((make(at),))).sources["mod.py"]
    assert line in source.splitlines(keepends=True), source
    compile(source, "mod.py", "exec")
