"""The repair benchmark's bug model: correct programs, bug classes, injected bugs, reachability.

Takes correct programs with tests (the example programs, with the planted bugs of windows
and bsearch fixed, and three small modules in benchmarks/repair_programs) and injects single
bugs of each class with a seeded bug model. Each program's tests are split: `tests/` is the
training set the search sees, `holdout/` the held-out set it never sees.

Each class is one kind of one-line mistake, made by one edit to the correct program. Most
are made by the operator whose edit is the mistake's shape (a wrong name by `name_replace`,
swapped arguments by `argument_swap`, an off-by-one by `integer_offset`, ...); the three
missing-code classes delete a clamp (`max(0, e)`, `min(e, b)`, `abs(e)`, with a bound, never
`max(values)`), a guard (an early `return`/`raise`/`continue`/`break`, not one case of a chain
of `if ...: return v`) or an update a sibling branch has; the classic classes change a
comparison, an arithmetic operator or a constant, or delete a statement. A candidate counts
as a bug only when it fails a training test; per class, bugs are drawn each from another
program where possible, by a generator of the class's own (seeded from the seed and the
class's name), so asking for some classes draws the same bugs as the full run.

Each class names the operator whose one edit is its fix. For each bug the benchmark samples
that operator's proposals on the buggy program with fault localisation's weights, as a repair
run draws them: the share that makes the correct program is the reachability. The fix
templates' classes (dropped condition, missing clamp, missing guard) keep only bugs their
template can fix at all (a share above 0); the others are kept whatever their share.
"""

from __future__ import annotations

import ast
import shutil
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
import numpy as np

from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.model.describe import describe
from gi.model.edits import DeleteStatement, Edit, ReplaceExpression, node_at
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.model.sites import Location, SiteKind
from gi.mutators import OPERATORS, MutationContext, templates

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "experiments" / "programs"
VENDORED = Path(__file__).resolve().parent / "repair_programs"


@dataclass(frozen=True)
class Subject:
    """A correct program: its folder, its editable module, and text replacements that undo
    a planted bug (the examples meant for repair)."""

    name: str
    root: Path
    module: str
    fixes: tuple[tuple[str, str], ...] = ()


SUBJECTS = (
    Subject("grading", EXAMPLES / "grading", "grading.py"),
    Subject("windows", EXAMPLES / "windows", "windows.py", (("i < len(values) - width", "i <= len(values) - width"),)),
    Subject("bsearch", EXAMPLES / "bsearch", "bsearch.py", (("while lo < hi", "while lo <= hi"),)),
    Subject("dedupe", EXAMPLES / "dedupe", "dedupe.py"),
    Subject("batching", EXAMPLES / "batching", "batching.py"),
    Subject("ledger", VENDORED / "ledger", "ledger.py"),
    Subject("words", VENDORED / "words", "words.py"),
    Subject("intervals", VENDORED / "intervals", "intervals.py"),
)

Injector = Callable[[Program, np.random.Generator], list[Edit]]


def by_operator(name: str, draws: int = 200) -> Injector:
    """Bugs shaped like `name`'s edits: the distinct edits among `draws` of its proposals."""

    def inject(program: Program, rng: np.random.Generator) -> list[Edit]:
        context = MutationContext().bind(program)
        found: dict[Edit, None] = {}
        for _ in range(draws):
            edit = OPERATORS.get(name).propose(program, Patch(), rng, context)
            if edit is not None:
                found.setdefault(edit)
        return list(found)

    return inject


def _is_clamp_bound(node: cst.BaseExpression, function: str) -> bool:
    """Is `node` what a clamp bounds by: 0 for `max`, else a name, an attribute, an integer or
    a `len(...)` (the shapes a clamp of a value takes: `max(0, e)`, `min(e, limit)`)."""
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.Call):
        return isinstance(node.func, cst.Name) and node.func.value == "len"
    return isinstance(node, (cst.Name, cst.Attribute)) and function in ("max", "min")


def missing_clamp(program: Program, rng: np.random.Generator) -> list[Edit]:
    """`max(0, e)`, `max(e, b)`, `min(e, b)` or `abs(e)` becomes `e`: a clamp of a value by a
    bound (0, an integer, a name, an attribute, a `len(...)`) is dropped. Not `max(values)`,
    which takes the largest of a collection (dropping it is no missing clamp), nor a clamp of
    a literal."""
    edits: list[Edit] = []
    for site in program.sites_of(SiteKind.EXPRESSION):
        node = program.node(site.location)
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name)):
            continue
        function, args = node.func.value, node.args
        if any(arg.keyword is not None or arg.star for arg in args):
            continue
        if function == "abs" and len(args) == 1:
            kept = [0]
        elif function in ("max", "min") and len(args) == 2:
            kept = [i for i in (0, 1) if _is_clamp_bound(args[1 - i].value, function)]
        else:
            continue
        for index in kept:
            if not isinstance(args[index].value, (cst.Integer, cst.Float)):
                argument = site.location.path + f".args[{index}].value"
                edits.append(ReplaceExpression(site.location, type(site.location)(site.location.file, argument)))
    return edits


def _returns_early(node: cst.CSTNode) -> bool:
    """`if ...:` without else whose only statement returns, raises, breaks or continues."""
    if not isinstance(node, cst.If) or node.orelse is not None or len(node.body.body) != 1:
        return False
    line = node.body.body[0]
    return isinstance(line, cst.SimpleStatementLine) and isinstance(
        line.body[0], (cst.Return, cst.Raise, cst.Break, cst.Continue)
    )


def _returns_a_case(node: cst.CSTNode) -> bool:
    """`if ...: return v`: one case of a chain of such ifs."""
    if not _returns_early(node):
        return False
    assert isinstance(node, cst.If)
    line = node.body.body[0]
    return isinstance(line, cst.SimpleStatementLine) and isinstance(line.body[0], cst.Return)


#: Consecutive `if ...: return v` statements from which on they are a dispatch chain, not guards.
CHAIN = 3


def _is_guard(block: list[cst.CSTNode], index: int) -> bool:
    """Is the `index`-th statement of a block a guard: an early exit (`_returns_early`) that
    is not one case of a dispatch chain (grading's `if score >= 90: return "A"` and the
    three ifs after it map cases to results: deleting one is a missing case, not a missing
    guard)?"""
    if not _returns_early(block[index]):
        return False
    if not _returns_a_case(block[index]):
        return True
    first = last = index
    while first > 0 and _returns_a_case(block[first - 1]):
        first -= 1
    while last + 1 < len(block) and _returns_a_case(block[last + 1]):
        last += 1
    return last - first + 1 < CHAIN


def missing_guard(program: Program, rng: np.random.Generator) -> list[Edit]:
    """A guard statement (`if not parts: return None`, `if x < 0: raise ...`) is deleted."""
    edits: list[Edit] = []
    for site in program.sites_of(SiteKind.STATEMENT):
        head, _, step = site.location.path.rpartition(".")
        block = node_at(program, Location(site.location.file, head))
        statements = list(getattr(block, "body", ()))
        index = int(step.partition("[")[2][:-1])
        if _is_guard(statements, index):
            edits.append(DeleteStatement(site.location))
    return edits


def missing_update(program: Program, rng: np.random.Generator) -> list[Edit]:
    """An update statement that another branch of its `if` chain also has is deleted."""
    statements = {(site.location.file, site.location.path): site for site in program.sites_of(SiteKind.STATEMENT)}
    edits: list[Edit] = []
    for site in statements.values():
        node = program.node(site.location)
        if not isinstance(node, cst.If):
            continue
        blocks = [
            [s for key, s in statements.items() if key[0] == site.location.file and key[1].rpartition(".")[0] == path]
            for path in templates.branches(node, site.location.path)
        ]
        for index, block in enumerate(blocks):
            elsewhere = {
                program.code(s.location) for other, sibling in enumerate(blocks) if other != index for s in sibling
            }
            edits.extend(
                DeleteStatement(s.location)
                for s in block
                if templates.is_update(program.node(s.location)) and program.code(s.location) in elsewhere
            )
    return edits


@dataclass(frozen=True)
class BugClass:
    """How bugs of a class are made, whether it is a classic operator's, the operator whose
    edit is its fix, and whether its bugs must be ones that operator can fix (`restricted`)."""

    inject: Injector
    classic: bool
    fixed_by: str
    restricted: bool = False


#: The bug classes. A fix template's class is restricted to bugs its template can fix: a
#: dropped condition whose operand the program has elsewhere, a clamp or a guard the
#: template can write. The others report how often the operator reaches the fix, and are kept
#: whether it does or not.
BUG_CLASSES: dict[str, BugClass] = {
    "wrong_name": BugClass(by_operator("name_replace"), False, "name_replace"),
    "swapped_arguments": BugClass(by_operator("argument_swap"), False, "argument_swap"),
    "off_by_one": BugClass(by_operator("integer_offset"), False, "integer_offset"),
    "wrong_function": BugClass(by_operator("call_replace"), False, "call_replace"),
    "negation": BugClass(by_operator("negate"), False, "negate"),
    "wrong_return": BugClass(by_operator("return_replace"), False, "return_replace"),
    "wrong_expression": BugClass(by_operator("expression_replace"), False, "expression_replace"),
    "extra_condition": BugClass(by_operator("condition_extend"), False, "condition_drop"),
    "dropped_condition": BugClass(by_operator("condition_drop"), False, "condition_extend", restricted=True),
    "missing_clamp": BugClass(missing_clamp, False, "clamp", restricted=True),
    "missing_guard": BugClass(missing_guard, False, "guard", restricted=True),
    "missing_update": BugClass(missing_update, False, "sibling_update"),
    "comparison": BugClass(by_operator("comparison_operator"), True, "comparison_operator"),
    "arithmetic": BugClass(by_operator("binary_operator"), True, "binary_operator"),
    "constant": BugClass(by_operator("constant"), True, "constant"),
    "deleted_statement": BugClass(by_operator("statement_delete"), True, "statement_copy"),
}
#: Proposals of the fixing operator sampled on each buggy program (the reachability check).
REACH_DRAWS = 500


@dataclass
class Bug:
    bug_class: str
    subject: Subject
    edit: Edit
    sources: dict[str, str]
    #: The edit in words (gi.model.describe, on the correct program).
    words: str
    #: The share of REACH_DRAWS proposals of the fixing operator that make the correct program.
    reach: float


def class_generator(seed: int, bug_class: str) -> np.random.Generator:
    """The generator of one class's bugs: the same bugs whichever other classes are asked."""
    return np.random.default_rng([seed, zlib.crc32(bug_class.encode())])


def correct_copy(subject: Subject, folder: Path) -> Program:
    """A copy of the subject with its planted bug fixed: the correct program."""
    shutil.copytree(subject.root, folder, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    path = folder / subject.module
    text = path.read_text()
    for old, new in subject.fixes:
        assert old in text, (subject.name, old)
        text = text.replace(old, new)
    path.write_text(text)
    return Program.load(folder, [subject.module], protected=["tests", "holdout"])


def _is_bug(sources: dict[str, str], evaluator: Evaluator, tests: int) -> bool:
    """Does the program `sources` make still run all `tests` training tests, and fail one?
    (A deleted `def` that breaks the tests' imports is no bug a repair run can start from.)"""
    evaluation = evaluator.evaluate_sources(sources)
    counts = evaluation.measures
    return evaluation.ok and counts.get("test_count") == tests and counts.get("failed_tests", 0) >= 1


class _Commuted(ast.NodeTransformer):
    """`max(a, b)` and `min(a, b)` with their arguments in a fixed order: the same program."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in ("max", "min") and len(node.args) == 2:
            node.args.sort(key=ast.dump)
        return node


def canonical(sources: dict[str, str]) -> tuple[str, ...]:
    """The programs' syntax trees without formatting, with max/min's two arguments ordered."""
    return tuple(ast.dump(_Commuted().visit(ast.parse(sources[file]))) for file in sorted(sources))


def reachability(
    fixed_by: str, correct: Program, buggy: Variant, evaluator: Evaluator, rng: np.random.Generator
) -> float:
    """The share of REACH_DRAWS proposals of the operator `fixed_by` on the buggy program, its
    sites weighted by fault localisation as a repair run weights them, whose one edit makes
    the correct program (up to the order of max's and min's arguments)."""
    program = Program(correct.root, buggy.sources)
    suspicious = evaluator.suspiciousness(buggy)
    context = MutationContext(line_weights=suspicious, line_floor=0.05 * max(suspicious.values(), default=0.0)).bind(
        program
    )
    target = canonical(dict(correct.sources))
    operator = OPERATORS.get(fixed_by)
    verdicts: dict[Edit, bool] = {}
    hits = 0
    for _ in range(REACH_DRAWS):
        edit = operator.propose(program, Patch(), rng, context)
        if edit is None:
            continue
        if edit not in verdicts:
            variant = apply(program, Patch((edit,)))
            verdicts[edit] = variant.syntax_error is None and canonical(variant.sources) == target
        hits += verdicts[edit]
    return hits / REACH_DRAWS


def inject(programs: dict[str, Program], classes: list[str], bugs: int, seed: int, tries: int = 4) -> Iterator[Bug]:
    """`bugs` bugs of each class, each from another program where possible; each class's
    draws come from its own generator (`class_generator`)."""
    evaluators = {
        name: Evaluator(program, EvaluationSettings(("tests",), timeout=30, test_timeout=2))
        for name, program in programs.items()
    }
    try:
        tests: dict[str, int] = {}
        for name, evaluator in evaluators.items():
            original = evaluator.evaluate_sources({})
            if not original.ok or original.measures["failed_tests"] or not original.measures["test_count"]:
                raise RuntimeError(f"{name}: the correct program fails its training tests: {original.detail}")
            tests[name] = int(original.measures["test_count"])
        for bug_class in classes:
            kind = BUG_CLASSES[bug_class]
            rng = class_generator(seed, bug_class)
            order = [SUBJECTS[int(i)] for i in rng.permutation(len(SUBJECTS))]
            found = 0
            for subject in order:
                if found == bugs:
                    break
                program = programs[subject.name]
                candidates = kind.inject(program, rng)
                # A restricted class tries every candidate: most fail the reachability check.
                limit = len(candidates) if kind.restricted else tries
                for index in rng.permutation(len(candidates))[:limit]:
                    edit = candidates[int(index)]
                    variant = apply(program, Patch((edit,)))
                    if variant.syntax_error is not None or not _is_bug(
                        variant.sources, evaluators[subject.name], tests[subject.name]
                    ):
                        continue
                    reach = reachability(kind.fixed_by, program, variant, evaluators[subject.name], rng)
                    if kind.restricted and reach == 0:
                        continue
                    yield Bug(bug_class, subject, edit, variant.sources, describe(edit, program), reach)
                    found += 1
                    break
    finally:
        for evaluator in evaluators.values():
            evaluator.close()
