"""How trustworthy are gi's runtime measurements on this machine?

Prints, measured side by side in one run:
- the coefficient of variation of repeated screening and rigorous timings of one program;
- the false-positive rate of rigorous A/A comparisons (the program against itself): how often
  gi would call a speed-up or slow-down that is not there (the target is at most 5%);
- the detection rate of a variant doing 10% more work (the target is at least 90%);
- the same two rates for screening-mode comparisons, for contrast.
Each rate comes with its 95% Clopper-Pearson interval: 20 comparisons pin a rate down only
so far.

Run it on a quiet machine: python benchmarks/timing_noise.py [--comparisons 20]
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.fitness.runtime import RIGOROUS, SCREENING, SpeedUp, Workload, compare, loops_for
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program

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


def rate(hits: int, total: int) -> str:
    """A rate with its exact 95% interval."""
    interval = stats.binomtest(hits, total).proportion_ci()
    return f"{hits}/{total} = {hits / total:.0%} (95% CI {interval.low:.0%}-{interval.high:.0%})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--comparisons", type=int, default=20, help="A/A and A/B comparisons in each mode")
    parser.add_argument("--repeats", type=int, default=20, help="repeated screening timings for their variation")
    parser.add_argument("--processes", type=int, default=RIGOROUS.processes, help="rigorous processes a program")
    parser.add_argument("--size", type=int, default=20000, help="loop iterations of the timed function")
    args = parser.parse_args()
    if min(args.comparisons, args.repeats) < 2:
        parser.error("--comparisons and --repeats need at least 2 (a coefficient of variation takes two timings)")

    rigorous = dataclasses.replace(RIGOROUS, processes=args.processes)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "work.py").write_text(WORK.format(size=args.size))
        program = Program.load(root, ["work.py"])
        settings = EvaluationSettings(train=(), workload=Workload(call="work:run"), rigorous=rigorous)
        evaluator = Evaluator(program, settings)
        original = apply(program, Patch())
        slower = Variant(program, Patch(), {"work.py": WORK.format(size=int(args.size * 1.1))}, ())
        started = time.perf_counter()
        # The fastest of three calibrations: a burst of load on a shared machine must not shorten the values.
        calibration = min((evaluator.timing(original) for _ in range(3)), key=lambda timing: min(timing.process_means))
        loops = calibration.loops
        rigorous_loops = loops_for(calibration, rigorous)
        print(
            f"workload: {calibration.median * 1e3:.3f} ms a call; {loops} loops a screening value "
            f"(>= {SCREENING.min_time * 1e3:.0f} ms), {rigorous_loops} a rigorous one "
            f"(>= {rigorous.min_time * 1e3:.0f} ms)"
        )

        screening_medians = [evaluator.timing(original, loops=loops).median for _ in range(args.repeats)]
        rigorous_means: list[float] = []
        outcomes: dict[str, tuple[list[SpeedUp], list[SpeedUp]]] = {"screening": ([], []), "rigorous": ([], [])}
        for index in range(args.comparisons):
            first, second = evaluator.rigorous_timings(original, original, loops=rigorous_loops)
            rigorous_means.append(first.mean)
            outcomes["rigorous"][0].append(compare(first, second, seed=index))
            outcomes["rigorous"][1].append(evaluator.rigorous(original, slower, loops=rigorous_loops, seed=index))
            for results, variant in zip(outcomes["screening"], (original, slower), strict=True):
                results.append(compare(evaluator.timing(original, loops=loops), evaluator.timing(variant, loops=loops),
                                       seed=index))  # fmt: skip

        print(
            f"coefficient of variation, screening ({SCREENING.processes} processes): "
            f"{coefficient_of_variation(screening_medians):.1%} over {args.repeats} timings"
        )
        print(
            f"coefficient of variation, rigorous ({rigorous.processes} processes): "
            f"{coefficient_of_variation(rigorous_means):.1%} over {args.comparisons} timings"
        )
        for mode, (same, slowed) in outcomes.items():
            false_positives = sum(result.significant for result in same)
            detections = sum(result.significant and result.value < 1 for result in slowed)
            print(
                f"{mode:>9}: A/A false positives {rate(false_positives, len(same))}; "
                f"10% slowdown detected {rate(detections, len(slowed))}; "
                f"median measured speed-up of the slower variant {np.median([r.value for r in slowed]):.3f}"
            )
        print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
