"""How fast does gi evaluate variants, cold and warm?

Evaluates one fixed budget of variants of an example program (random one- to three-edit
patches from every operator gi has, drawn with a fixed seed) side by side in one run:

- the cold path (a fresh workspace copy, sandbox, interpreter and pytest per variant), 2 workers;
- the warm path (forking warm workers in the same sandbox), 1 and 2 workers;

and prints evaluations per second, the warm/cold ratio, and gi's overhead per evaluation
against the time the same tests take in an already warm interpreter (a forked process that
has pytest loaded runs `pytest.main` on the original: what no tool can avoid). Evaluations
are checked to be the same on every path.

Every path takes the measures a run on the examples' objectives (failed tests, complexity,
size) takes, as gi computes only what a run's objectives read.

Then tests.fail_fast on a program whose suite takes longer than pytest's start-up
(benchmarks/programs/roman: 46 tests, about half a second): warm, 2 workers, every test of
every variant against stopping at the first failure (the tests that failed most recently
first, the order renewed every 20 variants as a run renews it every generation), with the
scores checked to be the same.

Run it on a quiet machine:
python benchmarks/throughput.py [--variants 200] [--program grading] [--fail-fast-variants 100]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.engine.sandbox.bubblewrap import isolation
from gi.engine.sandbox.limits import Limits
from gi.fitness.objectives import OBJECTIVES, measures_read
from gi.fitness.outcomes import FailureOrder, per_test_limits
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.mutators import OPERATORS, MutationContext

EXAMPLES = Path(__file__).resolve().parents[1] / "experiments" / "programs"
BENCHMARK_PROGRAMS = Path(__file__).resolve().parent / "programs"
#: Variants a generation: the test order is renewed between generations, as a run does.
GENERATION = 20


def variants(program: Program, count: int, seed: int) -> list[Variant]:
    """`count` distinct programs from random patches of 1-3 classic edits."""
    rng = np.random.default_rng(seed)
    operators = [OPERATORS.get(name) for name in OPERATORS.names()]
    context = MutationContext().bind(program)
    found: dict[str, Variant] = {}
    while len(found) < count:
        patch = Patch()
        for _ in range(int(rng.integers(1, 4))):
            edit = operators[int(rng.integers(len(operators)))].propose(program, patch, rng, context)
            if edit is not None:
                patch = patch.appended(edit)
        variant = apply(program, patch)
        found.setdefault(variant.tree_hash, variant)
    return list(found.values())


def warm_pytest_seconds(root: Path, paths: list[str], repeats: int = 20) -> float:
    """Median time of `pytest.main` on the original in a forked child of a warm interpreter
    (pytest and its plugins imported, the heap frozen for the collector, as a warm worker has
    them), without gi's plugin, sandbox or anything else of gi's."""
    import gc

    import pytest

    from gi.fitness.sandboxed.warm_imports import preload

    preload([])
    gc.collect()
    gc.freeze()
    # A copy outside this repository, as gi's workspaces are: in place, pytest would take this
    # repository's pyproject.toml (its addopts start xdist workers) for the example's.
    copy = Path(tempfile.mkdtemp(prefix="gi-floor-")) / "program"
    shutil.copytree(root, copy)
    os.chdir(copy)
    sys.path.insert(0, str(copy))
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        child = os.fork()
        if child == 0:
            quiet = os.open(os.devnull, os.O_WRONLY)
            os.dup2(quiet, 1)
            os.dup2(quiet, 2)
            os._exit(int(pytest.main(["-q", "-p", "no:cacheprovider", *paths])))
        os.waitpid(child, 0)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


#: The measures a run takes (`gi.fitness.objectives.measures_read`) on the examples' objectives.
MEASURED = measures_read([OBJECTIVES.get(name) for name in ("failed_tests", "complexity", "size")])


def measure(
    program: Program, batch: list[Variant], *, engine: str, workers: int, fail_fast: bool = False,
    first_failure: bool = False,
) -> tuple[float, list[tuple[Any, ...]]]:  # fmt: skip
    """Evaluations per second on one path, and what each evaluation gave (with `first_failure`,
    its status and score: which tests ran depends on the order)."""
    settings = EvaluationSettings(train=("tests",), timeout=60, test_timeout=10, workers=workers, engine=engine,
                                  fail_fast=fail_fast, first_failure=first_failure, measures=MEASURED)  # fmt: skip
    evaluator = Evaluator(program, settings)
    baseline = evaluator.evaluate(apply(program, Patch()))
    evaluator.baseline_tests = baseline.tests
    evaluator.test_limits = per_test_limits(baseline.durations, settings.test_timeout)
    if engine == "warm":  # start the workers before the clock, as a run does at its baseline
        evaluator.warm_training(apply(program, Patch()))
        evaluator.evaluate_many([apply(program, Patch())] * workers)
    order = FailureOrder()
    results = []
    started = time.perf_counter()
    for start in range(0, len(batch), GENERATION):
        evaluator.test_order = order.order(list(baseline.tests))
        for result in evaluator.evaluate_many(batch[start : start + GENERATION]):
            order.note(result.tests)
            results.append(result)
    seconds = time.perf_counter() - started
    evaluator.close()
    if first_failure:
        return len(batch) / seconds, [(r.status, r.measures.get("failed_tests")) for r in results]
    return len(batch) / seconds, [(r.status, r.tests, r.measures.get("failed_tests")) for r in results]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", type=int, default=200)
    parser.add_argument("--program", default="grading", help="an example under experiments/programs")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--fail-fast-variants", type=int, default=100, help="variants of the roman program")
    args = parser.parse_args()
    root = EXAMPLES / args.program
    program = Program.load(root, [f"{args.program}.py"], protected=["tests", "holdout"])
    batch = variants(program, args.variants, args.seed)
    print(f"{args.program}: {len(batch)} variants (seed {args.seed}); {isolation(Limits()).description}")
    cold, cold_results = measure(program, batch, engine="cold", workers=2)
    print(f"cold, 2 workers: {cold:.2f} evaluations/s")
    warm1, warm1_results = measure(program, batch, engine="warm", workers=1)
    print(f"warm, 1 worker:  {warm1:.2f} evaluations/s")
    warm2, warm2_results = measure(program, batch, engine="warm", workers=2)
    print(f"warm, 2 workers: {warm2:.2f} evaluations/s")
    same = cold_results == warm1_results == warm2_results
    print(f"same evaluations on every path: {'yes' if same else 'NO'}")
    print(f"warm / cold, 2 workers: {warm2 / cold:.1f}x")
    # In a process of its own: preparing a warm interpreter (the warm worker's `preload`) changes
    # the process it runs in, and libcst parsed nothing right in this one after it.
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        floor = pool.submit(warm_pytest_seconds, root, ["tests"]).result()
    per_evaluation = 1 / warm1
    overhead = per_evaluation - floor
    print(f"the same tests in a warm interpreter (fork + pytest.main): {floor * 1000:.0f} ms")
    print(f"gi per evaluation, warm, 1 worker: {per_evaluation * 1000:.0f} ms;"
          f" overhead {overhead * 1000:.0f} ms = {overhead / floor:.2f}x the warm test time")  # fmt: skip
    fail_fast(args.fail_fast_variants, args.seed)


def fail_fast(count: int, seed: int) -> None:
    """tests.fail_fast on the roman program: every test against stopping at the first failure."""
    program = Program.load(BENCHMARK_PROGRAMS / "roman", ["roman.py"], protected=["tests"])
    batch = variants(program, count, seed)
    whole, whole_results = measure(program, batch, engine="warm", workers=2, fail_fast=True)
    print(f"roman: {len(batch)} variants (seed {seed}), warm, 2 workers, tests.fail_fast")
    print(f"every test of every variant:  {whole:.2f} evaluations/s")
    stopping, stopping_results = measure(program, batch, engine="warm", workers=2, fail_fast=True, first_failure=True)
    print(f"stopping at the first failure: {stopping:.2f} evaluations/s ({stopping / whole:.1f}x)")
    failing = sum(bool(result[2]) for result in whole_results)
    same = [result[0::2] for result in whole_results] == stopping_results
    print(f"failing variants: {failing} of {len(batch)}; same scores: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
