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
...); the three missing-code classes delete a clamp, a guard or an update a sibling branch
has; the classic classes change a comparison, an arithmetic operator or a constant, or
delete a statement. A candidate counts as a bug only when it fails a training test; per
class, `--bugs` bugs are drawn, each from another program where possible.

Per bug class it prints: bugs, repaired on training (a front member passes every training
test), correct repairs (that member also passes every held-out test), and the overfitting
share (repaired but not correct, over repaired), for both arms side by side.

    python benchmarks/repair.py [--seed 1] [--budget 100] [--bugs 1] [--classes a,b]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
import numpy as np

from gi.edits import DeleteStatement, Edit, ReplaceExpression
from gi.evaluation import EvaluationSettings, Evaluator
from gi.patch import Patch, apply
from gi.program import Program, SiteKind
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


def missing_clamp(program: Program, rng: np.random.Generator) -> list[Edit]:
    """`max(0, e)`, `min(e, b)` or `abs(e)` becomes `e`."""
    edits: list[Edit] = []
    for site in program.sites_of(SiteKind.EXPRESSION):
        node = program.node(site.location)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("max", "min", "abs"):
            for index, arg in enumerate(node.args):
                if not isinstance(arg.value, (cst.Integer, cst.Float)) and len(node.args) <= 2:
                    argument = site.location.path + f".args[{index}].value"
                    edits.append(ReplaceExpression(site.location, type(site.location)(site.location.file, argument)))
    return edits


def _is_guard(node: cst.CSTNode) -> bool:
    """`if ...:` whose only statement returns, raises, breaks or continues, without else."""
    if not isinstance(node, cst.If) or node.orelse is not None or len(node.body.body) != 1:
        return False
    line = node.body.body[0]
    return isinstance(line, cst.SimpleStatementLine) and isinstance(
        line.body[0], (cst.Return, cst.Raise, cst.Break, cst.Continue)
    )


def missing_guard(program: Program, rng: np.random.Generator) -> list[Edit]:
    """A guard statement (`if not parts: return None`) is deleted."""
    return [
        DeleteStatement(site.location)
        for site in program.sites_of(SiteKind.STATEMENT)
        if _is_guard(program.node(site.location))
    ]


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


#: Bug class -> (how the bug is made, whether the class is one of the classic operators').
BUG_CLASSES: dict[str, tuple[Injector, bool]] = {
    "wrong_name": (by_operator("name_replace"), False),
    "swapped_arguments": (by_operator("argument_swap"), False),
    "off_by_one": (by_operator("integer_offset"), False),
    "wrong_function": (by_operator("call_replace"), False),
    "negation": (by_operator("negate"), False),
    "wrong_return": (by_operator("return_replace"), False),
    "wrong_expression": (by_operator("expression_replace"), False),
    "extra_condition": (by_operator("condition_extend"), False),
    "dropped_condition": (by_operator("condition_drop"), False),
    "missing_clamp": (missing_clamp, False),
    "missing_guard": (missing_guard, False),
    "missing_update": (missing_update, False),
    "comparison": (by_operator("comparison_operator"), True),
    "arithmetic": (by_operator("binary_operator"), True),
    "constant": (by_operator("constant"), True),
    "deleted_statement": (by_operator("statement_delete"), True),
}


@dataclass
class Bug:
    bug_class: str
    subject: Subject
    edit: Edit
    sources: dict[str, str]


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


def inject(
    programs: dict[str, Program], classes: list[str], bugs: int, rng: np.random.Generator, tries: int = 4
) -> Iterator[Bug]:
    """`bugs` bugs of each class, each from another program where possible."""
    evaluators = {
        name: Evaluator(program, EvaluationSettings(("tests",), timeout=30, test_timeout=2))
        for name, program in programs.items()
    }
    try:
        tests = {}
        for name, evaluator in evaluators.items():
            original = evaluator.evaluate_sources({})
            if not original.ok or original.measures["failed_tests"] or not original.measures["test_count"]:
                raise RuntimeError(f"{name}: the correct program fails its training tests: {original.detail}")
            tests[name] = original.measures["test_count"]
        for bug_class in classes:
            injector = BUG_CLASSES[bug_class][0]
            order = [SUBJECTS[int(i)] for i in rng.permutation(len(SUBJECTS))]
            found = 0
            for subject in order:
                if found == bugs:
                    break
                program = programs[subject.name]
                candidates = injector(program, rng)
                for index in rng.permutation(len(candidates))[:tries]:
                    edit = candidates[int(index)]
                    variant = apply(program, Patch((edit,)))
                    if variant.syntax_error is None and _is_bug(
                        variant.sources, evaluators[subject.name], tests[subject.name]
                    ):
                        yield Bug(bug_class, subject, edit, variant.sources)
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
    rng = np.random.default_rng(args.seed)
    arms = {"all": '"all"', "classic": json.dumps(CLASSIC)}
    results: dict[str, list[dict[str, dict[str, bool]]]] = {name: [] for name in classes}
    with tempfile.TemporaryDirectory(prefix="gi-repair-") as scratch:
        base = Path(scratch)
        programs = {subject.name: correct_copy(subject, base / "correct" / subject.name) for subject in SUBJECTS}
        for number, bug in enumerate(inject(programs, classes, args.bugs, rng)):
            outcome = {}
            for arm, operators in arms.items():
                outcome[arm] = run_gi(bug, base / f"bug{number}" / arm, operators, args.seed, args.budget)
            results[bug.bug_class].append(outcome)
            print(
                f"{bug.bug_class:18} {bug.subject.name:9} {bug.edit.describe()[:70]:70} "
                + " ".join(f"{arm}: {_verdict(outcome[arm])}" for arm in arms),
                flush=True,
            )
    print()
    print(_table(results, list(arms)))
    print(
        f"\nseed {args.seed}, budget {args.budget} evaluations a run (population {POPULATION}), "
        f"{args.bugs} bugs a class; {time.perf_counter() - started:.0f} s"
    )


def _verdict(outcome: dict[str, bool]) -> str:
    if outcome["correct"]:
        return "correct"
    return "overfits" if outcome["repaired"] else "-"


def _table(results: dict[str, list[dict[str, dict[str, bool]]]], arms: list[str]) -> str:
    header = f"| bug class | bugs | {' | '.join(f'{a}: repaired | {a}: correct | {a}: overfitting' for a in arms)} |"
    lines = [header, "|" + " --- |" * (2 + 3 * len(arms))]
    totals = {arm: [0, 0] for arm in arms}
    count = 0
    for bug_class, outcomes in results.items():
        count += len(outcomes)
        cells = [bug_class + (" (classic)" if BUG_CLASSES[bug_class][1] else ""), str(len(outcomes))]
        for arm in arms:
            repaired = sum(o[arm]["repaired"] for o in outcomes)
            correct = sum(o[arm]["correct"] for o in outcomes)
            totals[arm][0] += repaired
            totals[arm][1] += correct
            cells += [str(repaired), str(correct), _share(repaired - correct, repaired)]
        lines.append("| " + " | ".join(cells) + " |")
    cells = ["all", str(count)]
    for arm in arms:
        repaired, correct = totals[arm]
        cells += [str(repaired), str(correct), _share(repaired - correct, repaired)]
    lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "-"


if __name__ == "__main__":
    main()
