"""Where in the walk of ring 1 does each injected bug's repair come? No search is run.

For the bugs benchmarks/repair.py draws (the same seeds draw the same bugs), this runs each
buggy program's training tests once under coverage, builds the context a repair run builds
(the lines no training test executes left out, sites weighted by a suspiciousness formula) and
walks the one-edit neighbourhood of every operator in `gi.mutators.neighbourhood.walk`'s order,
counting the distinct programs made (each tree once, as the rings count them) until one is a
correct repair: one that passes every training and held-out test, as the benchmark judges it
(each program's tests run once, whichever formula's walk meets it), or with `--exact` the
correct program itself, up to formatting (then no test runs but the coverage run: quick, and
blind to repairs that compute the same another way). A repair at place n is evaluated by a
ring-1 walk of n programs; the rings of a repair run with budget B walk at most 3B/4 of them
(three quarters of the budget, and ring 2's pairs take turns with ring 1 once there are any), so the
places say what an order can win before any search runs, at no cost in evaluations.

It prints each bug's places (first plausible / first correct) under each formula, and per
formula how many come within 25, 50, 100 and 150 programs. Use other seeds than the
benchmark's to choose between orders (the default, 4-6), and the benchmark's (1-3) only to
confirm a choice.

    python benchmarks/repair_walk.py [--seeds 4,5,6] [--bugs 1] [--classes a,b] [--limit 150]
                                     [--formulas ochiai,dstar,...] [--exact]
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from repair_bugs import BUG_CLASSES, SUBJECTS, Bug, canonical, correct_copy, inject

from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.fitness.faults import FORMULAS, LineCoverage, suspiciousness
from gi.fitness.selection import Coverage
from gi.fitness.tests import NOT_FAILING
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.mutators import OPERATORS, MutationContext
from gi.mutators.neighbourhood import walk

#: Formulas gi does not offer, to compare with its own (gi.fitness.faults.FORMULAS): (failing
#: tests that run the line, passing tests that run it, failing tests, passing tests) to a score.
OTHERS: dict[str, Callable[[int, int, int, int], float]] = {
    # D* as a ranking has it: a line every failing test and no passing test runs comes first.
    "dstar_strict": lambda ef, ep, nf, np_: ef**2 / (ep + nf - ef) if ep + nf - ef else 1e6 * ef,
    "tarantula": lambda ef, ep, nf, np_: (ef / nf) / (ef / nf + (ep / np_ if np_ else 0.0)),
    "op2": lambda ef, ep, nf, np_: ef - ep / (np_ + 1),
}


def scores(formula: str, coverage: LineCoverage, outcomes: Mapping[str, str]) -> dict[tuple[str, int], float]:
    """Each line's suspiciousness by `formula`: gi's own, or one of OTHERS."""
    if formula in FORMULAS:
        return suspiciousness(coverage, outcomes, formula)
    failing = {test for test, outcome in outcomes.items() if outcome not in NOT_FAILING}
    passing = {test for test, outcome in outcomes.items() if outcome == "passed"}
    found: dict[tuple[str, int], float] = {}
    for file, lines in coverage.items():
        for line, tests in lines.items():
            ef, ep = len(tests & failing), len(tests & passing)
            if ef:
                found[(file, line)] = max(OTHERS[formula](ef, ep, len(failing), len(passing)), 1e-9)
    return found


def walked(program: Program, context: MutationContext, limit: int) -> Iterator[Variant]:
    """The first `limit` distinct programs of the walk (each tree once, as the rings count them)."""
    operators = [OPERATORS.get(name) for name in OPERATORS.names()]
    seen = {program.tree_hash}
    for neighbour in walk(program, operators, context.bind(program)):
        variant = apply(program, Patch((neighbour.edit,)))
        if variant.tree_hash in seen or variant.syntax_error is not None:
            continue
        seen.add(variant.tree_hash)
        yield variant
        if len(seen) > limit:
            return


class Verdicts:
    """Whether a program passes every training test (plausible) and every held-out test too
    (correct, as benchmarks/repair.py judges it), each program run once."""

    def __init__(self, program: Program) -> None:
        self.train = Evaluator(program, EvaluationSettings(("tests",), timeout=30, test_timeout=2, engine="warm"))
        self.holdout = Evaluator(program, EvaluationSettings(("holdout",), timeout=30, test_timeout=2))
        self.known: dict[str, tuple[bool, bool]] = {}

    def __call__(self, variant: Variant) -> tuple[bool, bool]:
        if variant.tree_hash not in self.known:
            train = self.train.evaluate(variant)
            plausible = train.ok and train.measures.get("failed_tests") == 0
            correct = False
            if plausible:
                held_out = self.holdout.evaluate(variant)
                correct = held_out.ok and held_out.measures.get("failed_tests") == 0
            self.known[variant.tree_hash] = (plausible, correct)
        return self.known[variant.tree_hash]

    def close(self) -> None:
        self.train.close()
        self.holdout.close()


def places(
    bug: Bug, correct: Program, formulas: list[str], limit: int, *, exact: bool = False
) -> dict[str, tuple[int | None, int | None]]:
    """Per formula: the places of the first plausible and the first correct program of the walk
    (`exact`: of the correct program itself, up to formatting, and no test is run but the
    coverage run: both places are that one's)."""
    buggy = Program(correct.root, bug.sources)
    verdicts = Verdicts(buggy)
    try:
        run, lines = verdicts.train.line_coverage(apply(buggy, Patch()))
        coverage = Coverage.of(lines, buggy.sources)
        found: dict[str, tuple[int | None, int | None]] = {}
        for name in formulas:
            weights = scores(name, lines, run.outcomes)
            context = MutationContext(
                executed_lines=coverage.executed_lines(),
                tested_lines=coverage.tested_lines(),
                line_weights=weights,
                line_floor=0.05 * max(weights.values(), default=0.0),
            )
            first_plausible = first_correct = None
            target = canonical(dict(correct.sources))
            for number, variant in enumerate(walked(buggy, context, limit), start=1):
                if exact:
                    plausible = right = canonical(variant.sources) == target
                else:
                    plausible, right = verdicts(variant)
                if plausible and first_plausible is None:
                    first_plausible = number
                if right:
                    first_correct = number
                    break
            found[name] = (first_plausible, first_correct)
    finally:
        verdicts.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="4,5,6")
    parser.add_argument("--bugs", type=int, default=1, help="bugs per class and seed")
    parser.add_argument("--classes", default=",".join(BUG_CLASSES))
    parser.add_argument("--formulas", default=",".join([*FORMULAS, *OTHERS]))
    parser.add_argument("--limit", type=int, default=150, help="programs walked at most per bug")
    parser.add_argument("--exact", action="store_true", help="find the correct program itself; run no test")
    args = parser.parse_args()
    formulas = [name for name in args.formulas.split(",") if name]
    classes = [name for name in args.classes.split(",") if name]
    rows: list[tuple[int, Bug, dict[str, tuple[int | None, int | None]]]] = []
    with tempfile.TemporaryDirectory(prefix="gi-walk-") as scratch:
        programs = {s.name: correct_copy(s, Path(scratch) / s.name) for s in SUBJECTS}
        for seed in (int(seed) for seed in args.seeds.split(",") if seed):
            for bug in inject(programs, classes, args.bugs, seed):
                found = places(bug, programs[bug.subject.name], formulas, args.limit, exact=args.exact)
                rows.append((seed, bug, found))
                cells = ", ".join(f"{name} {_cell(found[name][0])}/{_cell(found[name][1])}" for name in formulas)
                print(f"seed {seed} {bug.bug_class:18} {bug.subject.name:10} {cells}", flush=True)
    print()
    print("places of the first correct program (plausible in brackets):")
    print("| formula | bugs | within 25 | within 50 | within 100 | within 150 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in formulas:
        cells = []
        for n in (25, 50, 100, 150):
            correct = sum(row[2][name][1] is not None and row[2][name][1] <= n for row in rows)  # type: ignore[operator]
            plausible = sum(row[2][name][0] is not None and row[2][name][0] <= n for row in rows)  # type: ignore[operator]
            cells.append(f"{correct} ({plausible})")
        print(f"| {name} | {len(rows)} | " + " | ".join(cells) + " |")


def _cell(place: int | None) -> str:
    return "-" if place is None else str(place)


if __name__ == "__main__":
    main()
