"""How many injected bugs does each arm of gi's search repair, correctly, at one budget?

Injects single bugs into correct programs (benchmarks/repair_bugs.py: the programs, the bug
classes and the reachability of each bug's fix), then runs gi on each buggy program once per
arm, every arm with the same seed and the same budget of evaluations (`search.max_evaluations`:
programs evaluated, the original aside). Three seeds by default:
each draws its own bugs (per class, `--bugs` of them) and seeds every run on them.

A bug is *repaired* (plausibly) when a front member passes every training test, and the repair
is *correct* when the repair gi presents first (the first of summary.json's `plausible`, ranked
against overfitting) also passes every held-out test; the overfitting share is repaired but not
correct, over repaired. Beside it, the share had gi presented the smallest repair of the front
(as it did before it ranked them), to measure what the ranking changes. Besides, the
benchmark reads each run's evaluations in the order they were made and reports the first that
passes every training test (evaluations to the first plausible repair) and the first such
program that passes every held-out test too (to the first correct one; the held-out tests of
at most HELD_OUT_CHECKS plausible programs a run are run, in the order found).

Beside the held-out tests, gi's behaviour oracle (tests.oracle, on by default: in a repair it
checks the functions the failing tests do not reach on drawn inputs, and those they reach on the
calls the passing tests made and, for crashes alone, on drawn inputs) judges the repair gi
presents first. Per arm the benchmark counts the bugs with a presented repair (plausible), those
the held-out tests call overfitting, those the oracle does (it found a call on which the repair
does otherwise where it should not), those only the oracle does, and how many of the oracle's
counterexamples pass on the correct program (one that fails there is a false alarm). And the
median seconds the oracle took a run. Then the truth, as far as drawn inputs show it: the oracle
once more, with the correct program in the buggy original's place and every training and held-
out test's calls recorded, counts the presented repairs that do otherwise than the correct
program, those of them the held-out tests pass (overfitting they miss), and those of them the
run's oracle flagged.

It prints one line per bug and arm, a table per arm (bugs, repaired, correct, overfitting share,
evaluations to the first plausible and first correct repair, median over the bugs where one was
found), correct repairs per seed and arm, and per bug class.

Under each bug's line, the oracle's `why` for each arm's presented repair it did not find
"same". `--keep DIR` keeps every run's folder (DIR/bugN/ARM/runs/...) to read afterwards.

    python benchmarks/repair.py [--seeds 1,2,3] [--budget 100] [--bugs 1] [--classes a,b]
                                [--arms a,b] [--jobs 2] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repair_bugs import BUG_CLASSES, REACH_DRAWS, SUBJECTS, Bug, correct_copy, inject

from gi.config import load_config
from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.engine.oracle import Oracle
from gi.engine.project import pytest_setup
from gi.engine.store import RunStore
from gi.model.errors import GIError
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.mutators import OPERATORS, names, templates
from gi.run.experiment import run_experiment

#: The operators gi had before the expression operators and fix templates.
CLASSIC = sorted(
    name
    for name in OPERATORS.names()
    if type(OPERATORS.get(name)).__module__ not in (names.__name__, templates.__name__)
)
POPULATION = 10
#: Plausible programs of one run whose held-out tests the benchmark runs (in the order found).
HELD_OUT_CHECKS = 25
#: The oracle's seconds for a presented repair against the correct program.
TRUTH_SECONDS = 30.0


@dataclass(frozen=True)
class Arm:
    """One configuration of the search: keys of the run config's [search] and [mutators]."""

    name: str
    description: str
    search: Mapping[str, Any] = field(default_factory=dict)
    mutators: Mapping[str, Any] = field(default_factory=dict)


#: Without the rings, operators drawn uniformly: nsga2 as gi ran it before them.
PLAIN = {"neighbourhood": 0.0, "operator_selection": "uniform"}
#: Sites weighted by Ochiai's suspiciousness, as gi weighed them before D* (every arm but the defaults).
OCHIAI = {"suspiciousness": "ochiai"}
ARMS: dict[str, Arm] = {
    arm.name: arm
    for arm in (
        Arm(
            "classic",
            "nsga2, the classic operators",
            search=PLAIN,
            mutators={"operators": CLASSIC, **OCHIAI},
        ),
        Arm("all", "nsga2, every operator", search=PLAIN, mutators=OCHIAI),
        Arm(
            "first",
            "nsga2 after the rings of the original (half the budget)",
            search={**PLAIN, "neighbourhood": 0.5},
            mutators=OCHIAI,
        ),
        Arm(
            "adaptive",
            "nsga2, adaptive operator selection",
            search={**PLAIN, "operator_selection": "adaptive"},
            mutators=OCHIAI,
        ),
        Arm(
            "first+adaptive",
            "nsga2 after the rings (half the budget), adaptive operator selection",
            search={"neighbourhood": 0.5, "operator_selection": "adaptive"},
            mutators=OCHIAI,
        ),
        Arm(
            "neighbourhood",
            "the rings of the original (all the budget)",
            search={**PLAIN, "algorithm": "neighbourhood"},
            mutators=OCHIAI,
        ),
        Arm("default", "gi's defaults for a repair: the rings (the whole budget), adaptive, D*"),
        Arm(
            "default+rings50",
            "the defaults with the rings for half the budget (the defaults before three quarters)",
            search={"neighbourhood": 0.5},
        ),
        Arm(
            "default+rings75",
            "the defaults with the rings for three quarters of the budget (the defaults before seeds 4-6 chose all)",
            search={"neighbourhood": 0.75},
        ),
    )
}
#: The arms a run compares unless --arms names others.
DEFAULT_ARMS = ("classic", "all", "first", "adaptive", "first+adaptive", "default")


@dataclass(frozen=True)
class Outcome:
    """What one gi run made of one bug."""

    repaired: bool
    #: The repair gi presents first (its plausible patches ranked against overfitting) passes
    #: every held-out test; and the smallest repair on the front does (gi's choice before).
    correct: bool
    smallest_correct: bool
    evaluations: int
    #: Evaluations made up to the first program passing every training test (None: none did),
    #: and up to the first that passes every held-out test too.
    first_plausible: int | None
    first_correct: int | None
    #: The repair gi presents first: whether there is one, the oracle's verdict on it ("same",
    #: "changed", "not checked"; None without one) and why, whether its counterexample passes on
    #: the correct program (None without one), and the oracle's seconds in the run.
    presented: bool = False
    oracle: str | None = None
    oracle_holds: bool | None = None
    oracle_seconds: float = 0.0
    oracle_why: str = ""
    #: The oracle's verdict on the presented repair against the correct program (not the buggy
    #: one), on calls from every training and held-out test and drawn ones: "changed" is a
    #: repair that is wrong, whatever the held-out tests say; "same", none found wrong; "not
    #: checked", the oracle could not tell (its time ran out, the calls cannot be made); "the
    #: correct program", the repair is it (None: nothing presented).
    truth: str | None = None


CONFIG = """\
[experiment]
name = "repair"
seed = {seed}
output = "runs"
report = false

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
max_evaluations = {budget}
{search}
[mutators]
{mutators}
[evaluation]
workers = {workers}
"""


def _toml(keys: Mapping[str, Any]) -> str:
    """TOML lines for `keys` (strings, numbers, booleans and lists of them: JSON spells them alike)."""
    return "".join(f"{key} = {json.dumps(value)}\n" for key, value in keys.items())


def run_gi(bug: Bug, folder: Path, arm: Arm, seed: int, budget: int, workers: int) -> Outcome:
    """One gi run on the buggy program, and what it found."""
    program = folder / "program"
    shutil.copytree(bug.subject.root, program, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    for file, text in bug.sources.items():
        (program / file).write_text(text)
    config = folder / "repair.toml"
    mutators = {"operators": "all", **arm.mutators}
    config.write_text(
        CONFIG.format(
            seed=seed,
            module=bug.subject.module,
            population=POPULATION,
            generations=budget,
            budget=budget,
            search=_toml(arm.search),
            mutators=_toml(mutators),
            workers=workers,
        )
    )
    try:
        run_experiment(load_config(config))
    except GIError as error:
        raise RuntimeError(f"gi run ({arm.name}) failed on {bug.bug_class} in {bug.subject.name}: {error}") from None
    run = folder / "runs" / f"repair-seed{seed}"
    summary = json.loads((run / "summary.json").read_text())
    repairs = [m for m in summary["front"] if m["training"]["failed"] == 0]
    repairs.sort(key=lambda member: len(member["edits"]))
    repaired = bool(repairs)
    smallest = repaired and repairs[0]["holdout"] is not None and repairs[0]["holdout"]["failed"] == 0
    ranked = summary.get("plausible") or []
    correct = bool(ranked) and "holdout" in ranked[0] and ranked[0]["holdout"]["failed"] == 0
    first_plausible, first_correct = _firsts(
        run, Program.load(program, [bug.subject.module], protected=["tests", "holdout"])
    )
    behaviour = ranked[0].get("behaviour") if ranked else None
    verdict = behaviour["verdict"] if behaviour else None
    holds = None
    if behaviour and behaviour.get("counterexample"):
        holds = _passes_on_correct(bug, folder / "correct", behaviour["counterexample"])
    seconds = float((summary.get("oracle") or {}).get("seconds") or 0.0)
    why = str(behaviour.get("why") or "") if behaviour else ""
    truth = None
    if ranked:
        buggy = Program.load(program, [bug.subject.module], protected=["tests", "holdout"])
        truth = _against_correct(bug, folder / "truth", run, ranked[0]["id"], buggy, seed)
    return Outcome(repaired, correct, smallest, int(summary["evaluations"]), first_plausible, first_correct,
                   bool(ranked), verdict, holds, seconds, why, truth)  # fmt: skip


def _against_correct(bug: Bug, folder: Path, run: Path, member: str, buggy: Program, seed: int) -> str:
    """The behaviour oracle's verdict on a repair (`member` of the run) with the correct program
    in the original's place: its functions that differ from the correct program's, called on
    the calls every training and held-out test makes of them and on drawn calls, in both."""
    store = RunStore(run / "store.sqlite", read_only=True)
    try:
        [record] = store.individuals([member])
    finally:
        store.close()
    repaired = apply(buggy, Patch.from_json(record.patch))
    correct = correct_copy(bug.subject, folder)
    variant = Variant(correct, Patch(), dict(repaired.sources), ())
    if variant.tree_hash == apply(correct, Patch()).tree_hash:
        return "the correct program"
    setup, _ = pytest_setup(correct, Path(sys.executable))
    settings = EvaluationSettings(("tests", "holdout"), timeout=30, test_timeout=2, pytest=setup)
    evaluator = Evaluator(correct, settings)
    try:
        oracle = Oracle(evaluator, None, seconds=TRUTH_SECONDS, repairing=False, seed=seed)
        return oracle.check([variant])[variant.tree_hash].verdict
    finally:
        evaluator.close()


def _passes_on_correct(bug: Bug, folder: Path, test: str) -> bool:
    """Whether a counterexample passes on the correct program (pytest in a copy of it)."""
    correct_copy(bug.subject, folder)
    (folder / "test_gi_counterexample.py").write_text(test)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_gi_counterexample.py"]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False).returncode == 0


def _firsts(run: Path, program: Program) -> tuple[int | None, int | None]:
    """From a run's evaluations in the order made: how many were made up to the first that
    passes every training test, and up to the first that passes every held-out test too."""
    store = RunStore(run / "store.sqlite", read_only=True)
    try:
        log = list(store.evaluation_log())
        baseline = next(evaluation for _, individual, _, evaluation in log if individual == "baseline")
        tests = baseline["measures"]["test_count"]
        plausible: list[tuple[int, str]] = []
        for number, (_, individual, _, evaluation) in enumerate(e for e in log if e[1] != "baseline"):
            measures = evaluation["measures"]
            if (
                evaluation["status"] == "ok"
                and measures.get("failed_tests") == 0
                and measures.get("test_count") == tests
            ):
                plausible.append((number + 1, individual))
        if not plausible:
            return None, None
        records = {record.id: record for record in store.individuals([individual for _, individual in plausible])}
    finally:
        store.close()
    evaluator = Evaluator(program, EvaluationSettings(("holdout",), timeout=30, test_timeout=2))
    try:
        for number, individual in plausible[:HELD_OUT_CHECKS]:
            variant = apply(program, Patch.from_json(records[individual].patch))
            held_out = evaluator.evaluate(variant)
            if held_out.ok and held_out.measures.get("failed_tests") == 0:
                return plausible[0][0], number
    finally:
        evaluator.close()
    return plausible[0][0], None


@dataclass(frozen=True)
class Result:
    seed: int
    bug: Bug
    outcomes: dict[str, Outcome]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1,2,3", help="each draws its bugs and seeds every run on them")
    parser.add_argument("--budget", type=int, default=100, help=f"programs evaluated a run (population {POPULATION})")
    parser.add_argument("--bugs", type=int, default=1, help="bugs per class and seed")
    parser.add_argument("--classes", default=",".join(BUG_CLASSES), help="bug classes, comma-separated")
    parser.add_argument("--arms", default=",".join(DEFAULT_ARMS), help=f"arms, comma-separated: {', '.join(ARMS)}")
    parser.add_argument("--jobs", type=int, default=2, help="gi runs at once (each with 2 // jobs workers, at least 1)")
    parser.add_argument("--keep", type=Path, help="keep each run's folder here (bugN/ARM/runs/...)")
    args = parser.parse_args()
    classes = [name for name in args.classes.split(",") if name]
    arms = [ARMS[name] for name in args.arms.split(",") if name in ARMS]
    seeds = [int(seed) for seed in args.seeds.split(",") if seed]
    if unknown := set(classes) - set(BUG_CLASSES):
        parser.error(f"unknown bug classes {sorted(unknown)}; known: {', '.join(BUG_CLASSES)}")
    if unknown := {name for name in args.arms.split(",") if name} - set(ARMS):
        parser.error(f"unknown arms {sorted(unknown)}; known: {', '.join(ARMS)}")
    if args.keep is not None and args.keep.exists() and any(args.keep.iterdir()):
        parser.error(f"--keep {args.keep}: not empty (runs would mix with those in it)")
    started = time.perf_counter()
    workers = max(1, 2 // args.jobs)
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="gi-repair-") as scratch:
        base = Path(scratch) if args.keep is None else args.keep.resolve()
        programs = {subject.name: correct_copy(subject, base / "correct" / subject.name) for subject in SUBJECTS}
        bugs = [(seed, bug) for seed in seeds for bug in inject(programs, classes, args.bugs, seed)]
        runs = [(index, arm) for index in range(len(bugs)) for arm in arms]

        found: dict[int, dict[str, Outcome]] = {}
        # Runs in worker processes of their own, each importing gi once.
        with ProcessPoolExecutor(max_workers=args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [
                pool.submit(
                    run_gi, bugs[index][1], base / f"bug{index}" / arm.name, arm, bugs[index][0], args.budget, workers
                )
                for index, arm in runs
            ]
            for (index, arm), future in zip(runs, futures, strict=True):  # each bug as soon as its arms are done
                found.setdefault(index, {})[arm.name] = future.result()
                if len(found[index]) < len(arms):
                    continue
                seed, bug = bugs[index]
                results.append(Result(seed, bug, found[index]))
                print(
                    f"seed {seed} {bug.bug_class:18} {bug.words}\n{'':25} {BUG_CLASSES[bug.bug_class].fixed_by}"
                    f" reaches the fix in {bug.reach:.1%} of {REACH_DRAWS} proposals; "
                    + ", ".join(f"{arm.name}: {_verdict(found[index][arm.name])}" for arm in arms)
                    + "".join(_why(arm.name, found[index][arm.name]) for arm in arms),
                    flush=True,
                )
    print()
    print(arm_table(results, arms))
    print()
    print(oracle_table(results, arms))
    print()
    print(seed_table(results, arms, seeds))
    print()
    print(class_table(results, arms))
    print(
        f"\nseeds {', '.join(map(str, seeds))}; budget {args.budget} evaluations a run (population {POPULATION});"
        f" {args.bugs} bug(s) a class and seed; {len(results)} bugs; {args.jobs} run(s) at once;"
        f" {time.perf_counter() - started:.0f} s"
    )


def _verdict(outcome: Outcome) -> str:
    """The held-out tests' verdict on the presented repair, the oracle's when it judged one, and
    the oracle's against the correct program."""
    oracle = f" (oracle: {outcome.oracle}; against the correct program: {outcome.truth})" if outcome.oracle else ""
    if outcome.correct:
        return "correct" + oracle
    return ("overfits" + oracle) if outcome.repaired else "-"


def _why(arm: str, outcome: Outcome) -> str:
    """The oracle's reason, on a line of its own, for a presented repair it did not find "same"."""
    if not outcome.presented or outcome.oracle == "same" or not outcome.oracle_why:
        return ""
    return f"\n{'':25} {arm}, the oracle: {outcome.oracle_why}"


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "-"


def _median(values: Sequence[int | None]) -> str:
    found = [value for value in values if value is not None]
    return f"{statistics.median(found):g} ({len(found)})" if found else "-"


def arm_table(results: Sequence[Result], arms: Sequence[Arm]) -> str:
    """Per arm: repaired, correct, overfitting share, and the median evaluations to the first
    plausible and first correct repair (over the bugs where one was found, their number in
    brackets)."""
    lines = [
        "| arm | bugs | repaired | correct | overfitting | overfitting, smallest first"
        " | evaluations to first plausible | to first correct |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for arm in arms:
        outcomes = [result.outcomes[arm.name] for result in results]
        repaired = sum(o.repaired for o in outcomes)
        correct = sum(o.correct for o in outcomes)
        smallest = sum(o.smallest_correct for o in outcomes)
        lines.append(
            f"| {arm.name}: {arm.description} | {len(outcomes)} | {repaired} | {correct} |"
            f" {_share(repaired - correct, repaired)} | {_share(repaired - smallest, repaired)} |"
            f" {_median([o.first_plausible for o in outcomes])} |"
            f" {_median([o.first_correct for o in outcomes])} |"
        )
    return "\n".join(lines)


def oracle_table(results: Sequence[Result], arms: Sequence[Arm]) -> str:
    """Per arm: the bugs with a presented repair, those the held-out tests call overfitting, those
    the oracle does (and those only it does), the oracle's counterexamples that hold on the correct
    program, and the median seconds the oracle took a run."""
    lines = [
        "| arm | presented | overfitting by held-out tests | by the oracle | by the oracle only"
        " | its counterexamples that hold on the correct program | oracle checked | oracle s a run (median)"
        " | wrong by the correct program | of them, missed by held-out tests | of them, flagged by the oracle"
        " | not told against it |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for arm in arms:
        outcomes = [result.outcomes[arm.name] for result in results]
        shown = [o for o in outcomes if o.presented]
        held = sum(not o.correct for o in shown)
        flagged = [o for o in shown if o.oracle == "changed"]
        only = sum(o.correct for o in flagged)
        holds = [o.oracle_holds for o in flagged if o.oracle_holds is not None]
        checked = sum(o.oracle in ("same", "changed") for o in shown)
        seconds = statistics.median([o.oracle_seconds for o in outcomes]) if outcomes else 0.0
        wrong = [o for o in shown if o.truth == "changed"]
        lines.append(
            f"| {arm.name} | {len(shown)} | {held} ({_share(held, len(shown))}) |"
            f" {len(flagged)} ({_share(len(flagged), len(shown))}) | {only} | {sum(holds)} of {len(holds)} |"
            f" {checked} | {seconds:.1f} | {len(wrong)} | {sum(o.correct for o in wrong)} |"
            f" {sum(o.oracle == 'changed' for o in wrong)} | {sum(o.truth == 'not checked' for o in shown)} |"
        )
    title = "the repair gi presents first, judged by the held-out tests and by the behaviour oracle:"
    return title + "\n" + "\n".join(lines)


def seed_table(results: Sequence[Result], arms: Sequence[Arm], seeds: Sequence[int]) -> str:
    """Correct repairs (of repaired) per seed and arm."""
    lines = [
        "| seed | bugs | " + " | ".join(arm.name for arm in arms) + " |",
        "| --- | --- |" + " --- |" * len(arms),
    ]
    for seed in seeds:
        mine = [result for result in results if result.seed == seed]
        cells = [
            f"{sum(r.outcomes[a.name].correct for r in mine)} of {sum(r.outcomes[a.name].repaired for r in mine)}"
            for a in arms
        ]
        lines.append(f"| {seed} | {len(mine)} | " + " | ".join(cells) + " |")
    return "correct repairs (of repaired), per seed:\n" + "\n".join(lines)


def class_table(results: Sequence[Result], arms: Sequence[Arm]) -> str:
    """Per bug class: bugs, how many of them the fixing operator reaches (its mean share of
    proposals that make the fix), and each arm's correct repairs (of repaired)."""
    lines = [
        "| bug class | bugs | fixed by | fix reachable | " + " | ".join(arm.name for arm in arms) + " |",
        "| --- | --- | --- | --- |" + " --- |" * len(arms),
    ]
    for bug_class, kind in BUG_CLASSES.items():
        mine = [result for result in results if result.bug.bug_class == bug_class]
        if not mine:
            continue
        reached = sum(result.bug.reach > 0 for result in mine)
        mean = sum(result.bug.reach for result in mine) / len(mine)
        cells = [
            f"{sum(r.outcomes[a.name].correct for r in mine)} of {sum(r.outcomes[a.name].repaired for r in mine)}"
            for a in arms
        ]
        name = bug_class + (" (classic)" if kind.classic else "")
        lines.append(
            f"| {name} | {len(mine)} | `{kind.fixed_by}` | {reached} ({mean:.1%}) | " + " | ".join(cells) + " |"
        )
    return "correct repairs (of repaired), per bug class:\n" + "\n".join(lines)


if __name__ == "__main__":
    main()
