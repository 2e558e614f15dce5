"""The time of one warm test run, this tree against another, alternating: a finer A/B than a
whole `gi run` for a change to the warm path.

python benchmarks/warm_runs.py --baseline PATH [--rounds 3] [--runs 100] [--tests-python PYTHON]

PATH is another checkout of gi (`git archive HEAD | tar -x -C /tmp/before`). Each round starts,
for each tree in turn, a process with that tree first on PYTHONPATH that makes one warm pool
(one worker, in the sandbox, the options `gi run` gives pytest for this interpreter) for
benchmarks/programs/parcel, runs its original and four variants once each, then `--runs` runs
cycling through them (three of the five fail tests, as most of a search's variants do; each test
under `evaluation.test_timeout`'s default limit, as in a run), and
prints the mean and median milliseconds of `WarmPool.run_tests`: the request, the worker's
child, the report. The ratio is the baseline's mean over this tree's, by round; the load is
printed beside it. It stops if a tree's run of a variant ran no test, was forged, or gave other
outcomes than the other tree's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from evaluation_floor import PROGRAMS, TREE, load  # noqa: E402  (a sibling script)

PROGRAM = PROGRAMS["parcel"][0]

#: parcel.py's original and four variants: (text to replace, replacement).
EDITS = [
    ("", ""),
    ('return "letter"', 'return "small"'),
    ("price += extra * 1.1", "price += extra * 1.2"),
    ("if weight < 0:", "if weight < -1:"),
    ('    if sides[0] <= 0:  # the same check again\n        raise ValueError("every side must be positive")\n', ""),
]


def measure(runs: int, python: str) -> dict[str, Any]:
    """In a process with one tree's gi: the milliseconds of `runs` warm runs, and each variant's
    outcomes (what the two trees must agree on)."""
    from gi.engine.evaluation_settings import EvaluationSettings
    from gi.engine.project import pytest_setup
    from gi.engine.sandbox.limits import Limits
    from gi.engine.warm import WarmPool
    from gi.model.program import Program

    program = Program.load(PROGRAM, ["parcel.py"])
    original = program.sources["parcel.py"]
    variants = [original.replace(old, new, 1) if old else original for old, new in EDITS]
    setup, interpreter = pytest_setup(program, Path(python))
    limits = Limits(read_only=tuple(Path(folder) for folder in interpreter.folders))
    pool = WarmPool(program, limits, 1, setup=setup)
    limit = EvaluationSettings(train=("tests",)).test_timeout  # every test timed, as in a run
    seconds = []
    outcomes: list[dict[str, str]] = []
    try:
        for index in range(len(variants) + runs):
            started = time.perf_counter()
            run = pool.run_tests({"parcel.py": variants[index % len(variants)]}, ["tests"], timeout=60, limits={},
                                 default_limit=limit)  # fmt: skip
            if index >= len(variants):  # the first of each: the worker's start, its caches
                seconds.append(time.perf_counter() - started)
            elif not run.outcomes or run.forged:
                raise SystemExit(f"variant {index} ran no test or was forged:\n{run.output_tail[-2000:]}")
            else:
                outcomes.append(run.outcomes)
    finally:
        pool.close()
    return {"mean": 1000 * statistics.mean(seconds), "median": 1000 * statistics.median(seconds),
            "outcomes": outcomes}  # fmt: skip


def main() -> None:
    if sys.argv[1:2] == ["--measure"]:
        print(json.dumps(measure(int(sys.argv[2]), sys.argv[3])))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], usage=__doc__.split("\n\n")[1])
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout of the code to compare against")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--tests-python", default=sys.executable, help="the interpreter the tests run in")
    args = parser.parse_args()
    trees = {"before": args.baseline.resolve(), "after": TREE}
    print(f"parcel, {args.runs} warm runs a round, 1 worker; {load()}")
    print("round  first   before mean/median ms   after mean/median ms   ratio")
    ratios = []
    for round_ in range(1, args.rounds + 1):
        order = ["before", "after"] if round_ % 2 else ["after", "before"]
        means: dict[str, dict[str, float]] = {}
        for name in order:
            env = {**os.environ, "PYTHONPATH": str(trees[name])}
            command = [sys.executable, __file__, "--measure", str(args.runs), args.tests_python]
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"the runs with {trees[name]} failed:\n{done.stderr[-2000:]}")
            means[name] = json.loads(done.stdout.strip().splitlines()[-1])
        before_outcomes, after_outcomes = means["before"]["outcomes"], means["after"]["outcomes"]
        if before_outcomes != after_outcomes:
            raise SystemExit(f"the two trees' runs differ: {before_outcomes} != {after_outcomes}")
        ratio = means["before"]["mean"] / means["after"]["mean"]
        ratios.append(ratio)
        before, after = means["before"], means["after"]
        print(f"{round_:>5}  {order[0]:<6}  {before['mean']:>9.1f} / {before['median']:<9.1f}"
              f"  {after['mean']:>9.1f} / {after['median']:<9.1f}  {ratio:>5.2f}x")  # fmt: skip
    print(f"median {statistics.median(ratios):.2f}x; {load()} at the end")


if __name__ == "__main__":
    main()
