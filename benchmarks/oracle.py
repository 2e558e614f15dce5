"""Does the behaviour oracle flag the front member of issue 36 on more-itertools 11.2.1?

The member shrinks `is_prime`'s quick check `n & 1 and n % 3 and ... and n % 13` to `n % 13`;
every training and held-out test passes it, and is_prime(18) raises AssertionError where the
original returns False. A search reaches it slowly today, so this script builds that patch (gi's
own edit, `keep_operand` on the quick check) and checks it the way a run's front validation does,
on the project as `gi init` sets it up (README's new-user path, as benchmarks/real_projects.py
takes it: the sdist from PyPI, its own environment, `gi init`), with the issue's objectives (a
simplification) and time limits no loaded machine trips:

- the training tests on the member (they must all pass), the held-out tests (the share `gi init`
  holds out) and whether they call it overfitting;
- the behaviour oracle (tests.oracle's defaults): its verdict, the counterexample, the calls it
  made and its seconds; then pytest runs the counterexample on copies of the original and the
  member, here, outside gi, to show it passes on one and fails on the other;
- the same for a member that changes nothing a caller sees (the docstring of `is_prime`
  deleted), which the oracle must find "not checked" (no function changes), never "changed".

    python benchmarks/oracle.py [--cache ~/.cache/gi-benchmarks] [--seconds 60] [--fresh]

A second run reuses the project, its config and the run store (the original's training,
held-out and coverage runs, the members' evaluations); the oracle itself reads and records
nothing there, so each run of this script measures its recording and checks afresh. As in a run,
the original's coverage by the training tests (measured once, recorded) tells the oracle which
tests call the functions it checks: only they are recorded.

Run it with an absolute path to the interpreter: the project's environment is made from it, and
the sandbox shows only the folders an interpreter's real path names.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from real_projects import RealProject, gi_init, prepare

from gi.config import load_config
from gi.engine.oracle import Oracle
from gi.fitness.objectives import Constraint
from gi.fitness.outcomes import overfits, test_counts
from gi.model.edits import DeleteStatement, KeepOperand
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.model.sites import Location, SiteKind
from gi.run.experiment import Experiment

PROJECT = RealProject("more_itertools", "11.2.1", "one package beside tests/")
RECIPES = "more_itertools/recipes.py"
QUICK_CHECK = "if not (n & 1 and n % 3 and n % 5 and n % 7 and n % 11 and n % 13):"


def quick_check(program: Program) -> Location:
    """The location of is_prime's quick check (the whole `and` chain)."""
    line = program.sources[RECIPES].splitlines().index(f"    {QUICK_CHECK}") + 1
    found = [
        site.location
        for site in program.sites
        if site.location.file == RECIPES and site.kind is SiteKind.BOOLEAN_OPERATOR and site.line == line
    ]
    return min(found, key=lambda location: len(location.path))


def docstring(program: Program, location: Location) -> Location:
    """The docstring statement of the function holding `location`."""
    function = location.path.split(".body.body[")[0]
    return Location(RECIPES, f"{function}.body.body[0]")


def pytest_passes(root: Path, variant: Variant, test: str, python: Path) -> bool:
    """pytest on the counterexample, in a copy of the project with the variant's sources."""
    with tempfile.TemporaryDirectory(prefix="gi-oracle-bench-") as scratch:
        copy = Path(scratch) / "project"
        shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".venv", "*-gi-runs", "__pycache__"))
        for name, text in variant.sources.items():
            (copy / name).write_text(text)
        (copy / "test_gi_counterexample.py").write_text(test)
        command = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_gi_counterexample.py"]
        env = {**os.environ, "PYTHONPATH": str(copy)}
        return subprocess.run(command, cwd=copy, capture_output=True, text=True, env=env, check=False).returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "gi-benchmarks")
    parser.add_argument("--seconds", type=float, default=60.0, help="tests.oracle_seconds")
    parser.add_argument("--fresh", action="store_true", help="a fresh copy, config and run store, as on a first run")
    args = parser.parse_args()
    print(f"load {os.getloadavg()[0]:.2f} at the start", flush=True)
    cache = args.cache.expanduser().resolve()
    folder = cache / "projects" / PROJECT.folder_name
    if args.fresh or not (folder / "gi.toml").is_file():
        folder = prepare(PROJECT, cache)
        ok, said = gi_init(folder)
        if not ok:
            raise SystemExit(f"gi init failed: {said}")
    else:
        print(f"reusing {folder}, its gi.toml and run store (--fresh: a new one)")
    config = load_config(folder / "gi.toml")
    # The run: a simplification (complexity 714 -> 709), so behaviour is to be kept; and
    # time limits a loaded machine cannot trip (gi init sets them from the suite's times here).
    tests = config.tests.model_copy(
        update={"oracle_seconds": args.seconds, "oracle": "auto", "timeout": 3600.0, "test_timeout": 600.0}
    )
    objectives = config.objectives.model_copy(
        update={"minimize": ["failed_tests", "complexity", "size"], "constraint": Constraint.TRAIN_PASS}
    )
    config = config.model_copy(update={"tests": tests, "objectives": objectives})
    experiment = Experiment(config, fresh=args.fresh)
    try:
        started = time.perf_counter()
        baseline = experiment.reopen()
        print(f"training tests on the original: {test_counts(baseline.tests)} ({time.perf_counter() - started:.0f} s)")
        program = experiment.program
        check = quick_check(program)
        members = {
            "is_prime's quick check shrunk to `n % 13`": apply(program, Patch((KeepOperand(check, "right"),))),
            "is_prime's docstring deleted": apply(program, Patch((DeleteStatement(docstring(program, check)),))),
        }
        held = experiment.held_out
        started = time.perf_counter()
        experiment.evaluator.coverage = experiment.steering.coverage()
        seconds = time.perf_counter() - started
        print(f"coverage of the original by its training tests: {seconds:.0f} s (0: recorded before)")
        oracle = Oracle(experiment.evaluator, None, seconds=args.seconds, repairing=False, seed=config.experiment.seed)
        for words, variant in members.items():
            print(f"\n== {words}\n{variant.diff()}", flush=True)
            [evaluation] = experiment.measure([variant], "oracle benchmark")
            print(f"training tests: {test_counts(evaluation.tests)}")
            if held is not None:
                [outcomes] = held.outcomes([variant])
                flag = overfits(evaluation.tests, baseline.tests, outcomes, held.baseline)
                print(f"held-out tests: {test_counts(outcomes)}; overfits by them: {'yes' if flag else 'no'}")
            verdict = oracle.check([variant])[variant.tree_hash]
            print(f"oracle: {json.dumps(verdict.to_json(), indent=2)}")
            if verdict.counterexample:
                python = Path(config.python_path())
                original = apply(program, Patch())
                on_original = pytest_passes(folder, original, verdict.counterexample, python)
                on_member = pytest_passes(folder, variant, verdict.counterexample, python)
                print(f"pytest here on the counterexample: original {'passes' if on_original else 'FAILS'},"
                      f" member {'passes' if on_member else 'fails'}")  # fmt: skip
        recorded = oracle.section([], "auto")["tests_recorded"]
        print(f"\noracle: {oracle.recording_seconds:.1f} s recording the calls of {recorded} training tests,"
              f" {oracle.spent:.1f} s checking, of its {oracle.seconds:g} s")  # fmt: skip
    finally:
        experiment.close()
    print(f"\nload {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
