"""How many injected bugs does gi repair, correctly, with and without the expression operators?

Takes correct programs with tests (the example programs, with the planted bugs of windows
and bsearch fixed, and three small modules in benchmarks/repair_programs), injects single
bugs of each class with a seeded bug model, and runs gi on each buggy program twice with
the same budget and seed: with every operator, and with the classic operators only. Each
program's tests are split: `tests/` is the training set the search sees, `holdout/` the
held-out set it never sees.

The bug model: each class is one kind of one-line mistake, made by one edit to the correct
program. Most are made by the operator whose edit is the mistake's shape (a wrong name by
`name_replace`, swapped arguments by `argument_swap`, an off-by-one by `integer_offset`,
...); the three missing-code classes delete a clamp (`max(0, e)`, `min(e, b)`, `abs(e)`, with
a bound, never `max(values)`), a guard (an early `return`/`raise`/`continue`/`break`, not one
case of a chain of `if ...: return v`) or an update a sibling branch has; the classic classes
change a comparison, an arithmetic operator or a constant, or delete a statement. A
candidate counts as a bug only when it fails a training test; per class, `--bugs` bugs are
drawn, each from another program where possible, by a generator of the class's own (seeded
from the seed and the class's name), so `--classes` draws the same bugs as the full run.

Each class names the operator whose one edit is its fix. For each bug the benchmark samples
that operator's proposals on the buggy program with fault localisation's weights, as a repair
run draws them, and prints the share that makes the correct program (the reachability). The
fix templates' classes (dropped condition, missing clamp, missing guard) keep only bugs their
template can fix at all (a share above 0); the others are kept whatever their share.

Per bug class it prints: bugs, the fixing operator and how many bugs it reaches (its mean
share), repaired on training (a front member passes every training test), correct repairs
(that member also passes every held-out test), and the overfitting share (repaired but not
correct, over repaired), for both arms side by side; then the correct repairs of each arm.

    python benchmarks/repair.py [--seed 1] [--budget 100] [--bugs 1] [--classes a,b]
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
import numpy as np

from gi.engine.evaluation import EvaluationSettings, Evaluator
from gi.model.describe import describe
from gi.model.edits import DeleteStatement, Edit, ReplaceExpression, node_at
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.model.sites import Location, SiteKind
from mutators import OPERATORS, MutationContext, names, templates

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "experiments" / "programs"
VENDORED = Path(__file__).resolve().parent / "repair_programs"
#: The operators gi had before the expression operators and fix templates.
CLASSIC = sorted(
    name
    for name in OPERATORS.names()
    if type(OPERATORS.get(name)).__module__ not in (names.__name__, templates.__name__)
)
POPULATION = 10


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


CONFIG = """\
[experiment]
name = "repair"
seed = {seed}
output = "runs"

[program]
root = "program"
files = ["{module}"]

[tests]
train = ["tests"]
holdout = ["holdout"]
timeout = 30
test_timeout = 1

[objectives]
minimize = ["failed_tests", "size"]
constraint = "none"

[search]
population = {population}
generations = {generations}

[mutators]
operators = {operators}

[evaluation]
workers = 2
"""


def run_gi(bug: Bug, folder: Path, operators: str, seed: int, budget: int) -> dict[str, bool]:
    """One gi run on the buggy program; whether it repaired it on training and correctly."""
    program = folder / "program"
    shutil.copytree(bug.subject.root, program, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    for file, text in bug.sources.items():
        (program / file).write_text(text)
    generations = max(budget // POPULATION - 1, 1)
    config = folder / "repair.toml"
    config.write_text(
        CONFIG.format(
            seed=seed, module=bug.subject.module, population=POPULATION, generations=generations, operators=operators
        )
    )
    result = subprocess.run(
        [sys.executable, "-m", "gi.cli", "run", str(config), "--quiet"], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"gi run failed on {bug.bug_class} in {bug.subject.name}: {result.stderr[-2000:]}")
    summary = json.loads((folder / "runs" / f"repair-seed{seed}" / "summary.json").read_text())
    repairs = [m for m in summary["front"] if m["training"]["failed"] == 0]
    repairs.sort(key=lambda member: len(member["edits"]))
    repaired = bool(repairs)
    correct = repaired and repairs[0]["holdout"] is not None and repairs[0]["holdout"]["failed"] == 0
    return {"repaired": repaired, "correct": correct}


Outcome = dict[str, dict[str, bool]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1, help="fixes the bugs drawn and every gi run")
    parser.add_argument("--budget", type=int, default=100, help=f"evaluations per gi run (population {POPULATION})")
    parser.add_argument("--bugs", type=int, default=1, help="bugs per class")
    parser.add_argument("--classes", default=",".join(BUG_CLASSES), help="bug classes, comma-separated")
    args = parser.parse_args()
    classes = [name for name in args.classes.split(",") if name]
    unknown = set(classes) - set(BUG_CLASSES)
    if unknown:
        parser.error(f"unknown bug classes {sorted(unknown)}; known: {', '.join(BUG_CLASSES)}")
    started = time.perf_counter()
    arms = {"all": '"all"', "classic": json.dumps(CLASSIC)}
    results: dict[str, list[tuple[Bug, Outcome]]] = {name: [] for name in classes}
    with tempfile.TemporaryDirectory(prefix="gi-repair-") as scratch:
        base = Path(scratch)
        programs = {subject.name: correct_copy(subject, base / "correct" / subject.name) for subject in SUBJECTS}
        for number, bug in enumerate(inject(programs, classes, args.bugs, args.seed)):
            outcome = {}
            for arm, operators in arms.items():
                outcome[arm] = run_gi(bug, base / f"bug{number}" / arm, operators, args.seed, args.budget)
            results[bug.bug_class].append((bug, outcome))
            print(
                f"{bug.bug_class:18} {bug.words}\n{'':18} {BUG_CLASSES[bug.bug_class].fixed_by} reaches the fix in"
                f" {bug.reach:.1%} of {REACH_DRAWS} proposals; "
                + ", ".join(f"{arm}: {_verdict(outcome[arm])}" for arm in arms),
                flush=True,
            )
    print()
    print(_table(results, list(arms)))
    correct = {arm: sum(o[arm]["correct"] for found in results.values() for _, o in found) for arm in arms}
    ratio = f"{correct['all'] / correct['classic']:.2f} times" if correct["classic"] else "no classic repair"
    print(f"\ncorrect repairs: all {correct['all']}, classic {correct['classic']} ({ratio})")
    print(
        f"seed {args.seed}, budget {args.budget} evaluations a run (population {POPULATION}), "
        f"{args.bugs} bugs a class; {time.perf_counter() - started:.0f} s"
    )


def _verdict(outcome: dict[str, bool]) -> str:
    if outcome["correct"]:
        return "correct"
    return "overfits" if outcome["repaired"] else "-"


def _table(results: dict[str, list[tuple[Bug, Outcome]]], arms: list[str]) -> str:
    """Per class: bugs, how many of them the fixing operator reaches (and its mean share of
    proposals that make the fix), then each arm's repaired, correct and overfitting share."""
    titles = " | ".join(f"{a}: repaired | {a}: correct | {a}: overfitting" for a in arms)
    lines = [f"| bug class | bugs | fixed by | fix reachable | {titles} |", "|" + " --- |" * (4 + 3 * len(arms))]
    totals = {arm: [0, 0] for arm in arms}
    count = reachable = 0
    for bug_class, found in results.items():
        kind = BUG_CLASSES[bug_class]
        count += len(found)
        reached = sum(bug.reach > 0 for bug, _ in found)
        reachable += reached
        mean = sum(bug.reach for bug, _ in found) / len(found) if found else 0.0
        cells = [
            bug_class + (" (classic)" if kind.classic else ""),
            str(len(found)),
            f"`{kind.fixed_by}`",
            f"{reached} ({mean:.1%})" if found else "-",
        ]
        for arm in arms:
            repaired = sum(o[arm]["repaired"] for _, o in found)
            correct = sum(o[arm]["correct"] for _, o in found)
            totals[arm][0] += repaired
            totals[arm][1] += correct
            cells += [str(repaired), str(correct), _share(repaired - correct, repaired)]
        lines.append("| " + " | ".join(cells) + " |")
    cells = ["all", str(count), "", str(reachable)]
    for arm in arms:
        repaired, correct = totals[arm]
        cells += [str(repaired), str(correct), _share(repaired - correct, repaired)]
    lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "-"


if __name__ == "__main__":
    main()
