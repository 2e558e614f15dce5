"""How trustworthy are gi's runtime measurements on this machine?

Prints, measured side by side in one run:
- the coefficient of variation of repeated screening and rigorous timings of one program;
- the false-positive rate of rigorous A/A comparisons (the program against itself): how often
  gi would call a speed-up or slow-down that is not there (the target is at most 5%);
- the detection rate of a variant doing 10% more work (the target is at least 90%);
- the same two rates for screening-mode comparisons, for contrast.

Run it on a quiet machine: python benchmarks/timing_noise.py [--comparisons 20] [--repeats 10]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from fitness.runtime import RIGOROUS, SCREENING, Workload, compare, scaled_loops
from gi.evaluation import EvaluationSettings, Evaluator
from gi.patch import Patch, Variant, apply
from gi.program import Program

WORK = """\
SIZE = {size}


def run():
    total = 0
    for i in range(SIZE):
        total += i * i % 7
    return total
"""


def coefficient_of_variation(values: list[float]) -> float:
    return float(np.std(values, ddof=1) / np.mean(values))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--comparisons", type=int, default=20, help="A/A and A/B comparisons in each mode")
    parser.add_argument("--repeats", type=int, default=10, help="repeated timings for the coefficient of variation")
    parser.add_argument("--size", type=int, default=20000, help="loop iterations of the timed function")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "work.py").write_text(WORK.format(size=args.size))
        program = Program.load(root, ["work.py"])
        evaluator = Evaluator(program, EvaluationSettings(train=(), workload=Workload(call="work:run")))
        original = apply(program, Patch())
        slower = Variant(program, Patch(), {"work.py": WORK.format(size=int(args.size * 1.1))}, ())
        started = time.perf_counter()
        calibration = evaluator.timing(original)
        loops = calibration.loops
        rigorous_loops = scaled_loops(loops, SCREENING, RIGOROUS)
        print(f"workload: {calibration.median * 1e3:.3f} ms a call, {loops} loops a value (screening)")

        screening = [evaluator.timing(original, loops=loops).median for _ in range(args.repeats)]
        rigorous_means = []
        for _ in range(args.repeats):
            first, _ = evaluator.rigorous_timings(original, original, loops=rigorous_loops)
            rigorous_means.append(first.mean)
        print(
            f"coefficient of variation, screening ({SCREENING.processes} processes): "
            f"{coefficient_of_variation(screening):.2%} over {args.repeats} timings"
        )
        print(
            f"coefficient of variation, rigorous (20 processes): "
            f"{coefficient_of_variation(rigorous_means):.2%} over {args.repeats} timings"
        )

        for mode in ("screening", "rigorous"):
            false_positives = detections = 0
            for index in range(args.comparisons):
                if mode == "rigorous":
                    aa = evaluator.rigorous(original, original, loops=rigorous_loops, seed=index)
                    ab = evaluator.rigorous(original, slower, loops=rigorous_loops, seed=index)
                else:
                    aa = compare(evaluator.timing(original, loops=loops), evaluator.timing(original, loops=loops),
                                 seed=index)  # fmt: skip
                    ab = compare(evaluator.timing(original, loops=loops), evaluator.timing(slower, loops=loops),
                                 seed=index)  # fmt: skip
                false_positives += aa.significant
                detections += ab.significant and ab.value < 1
            print(
                f"{mode:>9}: A/A false-positive rate {false_positives / args.comparisons:.0%}, "
                f"detection of a 10% slowdown {detections / args.comparisons:.0%} "
                f"({args.comparisons} comparisons each)"
            )
        print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
