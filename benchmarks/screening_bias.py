"""Whether screening timings with several workers are biased against variants, on README's
batching example (experiments/batching.toml: the constant operator, a runtime objective).

python benchmarks/screening_bias.py [--seeds 1 2 3] [--workers 1 2]

A screening timing of a variant runs while the other workers run other variants' tests, and on
a machine with as many workers as cores they share its core; the original's timing, before the
search, ran alone. So this runs the example once per seed and per worker count (alternating
which goes first), at the same budget, and prints:

1. each run's wall time, its evaluations, the front's rigorously re-measured speed-ups and
   their screening ratios (a ratio of 0.5 is twice as fast);
2. the programs both runs of a seed timed: the geometric mean of their screening ratios with
   more workers over those with one (above 1: more workers screen the same programs as slower).

Run it on a quiet machine; the load is printed with each run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

TREE = Path(__file__).resolve().parent.parent
EXAMPLES = TREE / "experiments"


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f} (5 min {five:.1f})"


def config_text(output: Path, seed: int, workers: int) -> str:
    """experiments/batching.toml with the run's seed, output and workers."""
    text = (EXAMPLES / "batching.toml").read_text(encoding="utf-8")
    replaced = {
        'root = "programs/batching"': f'root = "{EXAMPLES / "programs" / "batching"}"',
        'output = "runs"': f'output = "{output}"',
        "seed = 1": f"seed = {seed}",
    }
    for old, new in replaced.items():
        if old not in text:
            raise SystemExit(f"experiments/batching.toml no longer says {old!r}: update {__file__}")
        text = text.replace(old, new)
    return text + f"\n[evaluation]\nworkers = {workers}\n"


def run(seed: int, workers: int, folder: Path) -> dict[str, Any]:
    """One `gi run` of the example; its screening ratios by program, its front and its wall time."""
    config = folder / f"batching-w{workers}-s{seed}.toml"
    output = folder / f"runs-w{workers}"
    config.write_text(config_text(output, seed, workers), encoding="utf-8")
    started = load()
    command = [sys.executable, "-c", "from gi.cli.main import main; raise SystemExit(main())",
               "run", str(config), "--quiet", "--fresh"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"gi run failed ({config}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    run_folder = output / f"batching-speed-seed{seed}"
    summary = json.loads((run_folder / "summary.json").read_text(encoding="utf-8"))
    ratios: dict[str, float] = {}
    for line in (run_folder / "evaluations.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        measures = record.get("measures", {})
        if record.get("individual") != "baseline" and record.get("status") == "ok" and "runtime" in measures:
            ratios.setdefault(record["tree_hash"], float(measures["runtime"]))
    front = [(member["objectives"].get("runtime"), member["speedup"]) for member in summary["front"]
             if member.get("speedup")]  # fmt: skip
    return {"ratios": ratios, "front": front, "wall": summary["wall_seconds"], "evaluations": summary["evaluations"],
            "load": started}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--workers", type=int, nargs=2, default=[1, 2], metavar=("ONE", "MORE"))
    args = parser.parse_args()
    one, more = args.workers
    folder = Path(tempfile.mkdtemp(prefix="gi-screening-bias-"))
    print(f"{os.cpu_count()} cores; runs in {folder}")
    print(f"{'seed':>4} {'workers':>7} {'wall s':>7} {'evals':>6}  front (screening ratio, rigorous speed-up)  load")
    pairs: list[float] = []
    walls: dict[int, list[float]] = {one: [], more: []}
    for index, seed in enumerate(args.seeds):
        order = [one, more] if index % 2 == 0 else [more, one]
        results = {workers: run(seed, workers, folder) for workers in order}
        for workers in order:
            result = results[workers]
            walls[workers].append(result["wall"])
            front = ", ".join(f"{ratio:.2f} ({speedup['value']:.2f}x{'' if speedup['significant'] else ', n.s.'})"
                              for ratio, speedup in result["front"]) or "-"  # fmt: skip
            counts = f"{seed:>4} {workers:>7} {result['wall']:>7.1f} {result['evaluations']:>6}"
            print(f"{counts}  {front}  {result['load']}")
        common = sorted(set(results[one]["ratios"]) & set(results[more]["ratios"]))
        logs = [math.log(results[more]["ratios"][key] / results[one]["ratios"][key]) for key in common]
        pairs += logs
        if logs:
            print(f"     {len(common)} programs timed in both: {more} workers / {one}, geometric mean "
                  f"{math.exp(statistics.mean(logs)):.2f}")  # fmt: skip
    if pairs:
        mean, median = math.exp(statistics.mean(pairs)), math.exp(statistics.median(pairs))
        print(f"\nall seeds, {len(pairs)} programs: screening ratio with {more} workers over with {one}, "
              f"geometric mean {mean:.2f} (median {median:.2f})")  # fmt: skip
    print(f"median wall: {statistics.median(walls[one]):.1f} s with {one} worker(s), "
          f"{statistics.median(walls[more]):.1f} s with {more}; {load()} at the end")  # fmt: skip


if __name__ == "__main__":
    main()
