"""Where one evaluation's time goes, the floor under it, and gi against the code it is compared with.

python benchmarks/evaluation_floor.py --baseline PATH [--seeds 1 2 3] [--programs grading parcel]
                                      [--generations 9] [--population 20]

PATH is another checkout of gi (the code before a change: `git worktree add /tmp/before
4ee159a`, or `git archive 4ee159a | tar -x -C /tmp/before`); both run with this interpreter,
each with its own tree first on PYTHONPATH, unless --baseline-python names the baseline's own
(an environment with the baseline's dependencies, as it was installed then: a plugin installed
here for this tree, such as Hypothesis's, would otherwise load in the baseline's test runs too).
The programs are README's grading example (experiments/programs/grading: 4 training tests, 3
held-out) and benchmarks/programs/parcel (5 training tests, 2 held-out), each searched as
experiments/grading.toml says (nsga2 over failed tests, complexity and size, the classic
operators), warm, in the sandbox. It prints:

1. The breakdown: one `gi run` of each tree, 1 and 2 workers, each part of an evaluation in
   milliseconds per evaluation (benchmarks/floor_probe.py takes the time of gi's own functions;
   benchmarks/floor_timer.py, loaded in each test run, that of the test run's phases). gi's own
   parts, pytest's, and the tests' own code are summed apart; gi's share is its parts over the
   whole.
2. The floor: the same tests on the same variants in a warm forked interpreter with nothing
   else (benchmarks/floor_harness.py), and pytest in a warm fork for comparison.
3. Side by side: `gi run` of each tree on each seed, alternating which goes first, 1 worker
   (or each of --side-by-side-workers):
   the search's evaluations per second (the generations, from breeding to checkpoint; the
   same count of evaluations on both), the whole command's, the ratio, and whether the two
   made the same front.

Each figure is measured in this one run; the machine's load is printed beside each section.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
PROGRAMS = {
    "grading": (TREE / "experiments" / "programs" / "grading", "grading.py"),
    "parcel": (HERE / "programs" / "parcel", "parcel.py"),
}


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f} (5 min {five:.1f}) on {os.cpu_count()} cores"


def config_text(program: str, output: Path, seed: int, workers: int, generations: int, population: int,
                tests_python: str | None = None) -> str:  # fmt: skip
    """experiments/grading.toml for `program`, with the run's seed, workers and size (and the
    interpreter its tests run in, `program.python`, when given)."""
    root, file = PROGRAMS[program]
    text = (TREE / "experiments" / "grading.toml").read_text(encoding="utf-8")
    replaced = {
        'name = "grading-simplify"': f'name = "{program}-w{workers}"',
        "seed = 1": f"seed = {seed}",
        'output = "runs"': f'output = "{output}"',
        'root = "programs/grading"': f'root = "{root}"',
        'files = ["grading.py"]': f'files = ["{file}"]',
        "population = 20": f"population = {population}",
        "generations = 10": f"generations = {generations}",
    }
    if tests_python is not None:
        replaced["[program]\n"] = f"[program]\npython = {json.dumps(tests_python)}\n"
    for old, new in replaced.items():
        if old not in text:
            raise SystemExit(f"experiments/grading.toml no longer says {old!r}: update {__file__}")
        text = text.replace(old, new)
    return text + f'\n[evaluation]\nworkers = {workers}\nengine = "warm"\n'


def gi_run(tree: Path, program: str, seed: int, workers: int, args: argparse.Namespace, *,
           breakdown: bool = False) -> dict[str, Any]:  # fmt: skip
    """One `gi run` with `tree`'s code in a process of its own (benchmarks/floor_probe.py)."""
    python = args.baseline_python if tree == args.baseline.resolve() and args.baseline_python else sys.executable

    def text(folder: Path) -> str:
        return config_text(program, folder / "runs", seed, workers, args.generations, args.population)

    return probe_run(tree, str(python), program, text, breakdown=breakdown)


def probe_run(tree: Path, python: str, program: str, text: Callable[[Path], str], *,
              breakdown: bool = False) -> dict[str, Any]:  # fmt: skip
    """`gi run` of the config `text(folder)` gives, with `tree`'s code in `python`, in a folder of
    its own (benchmarks/floor_probe.py): its result, and its folder."""
    folder = Path(tempfile.mkdtemp(prefix=f"gi-floor-{program}-"))
    config = folder / "gi.toml"
    config.write_text(text(folder))
    out = folder / "result.json"
    command = [python, str(HERE / "floor_probe.py"), str(config), str(out)]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([*command, *(["--breakdown"] if breakdown else [])], env=env, capture_output=True,
                          text=True, check=False)  # fmt: skip
    if done.returncode != 0 or not out.exists():
        raise SystemExit(f"gi run with {tree} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    if result["exit"] != 0:
        raise SystemExit(f"gi run with {tree} exited {result['exit']}:\n{done.stdout[-2000:]}")
    result["folder"] = str(folder)
    return result


#: The parts of a test run between two of its timestamps (benchmarks/floor_timer.py), whichever
#: are there (a warm child that joins a session the worker prepared has no configuration or
#: session start of its own): (first mark, next mark) -> (part, owner, gi's hooks' phase).
PHASES = {
    ("sent", "fork0"): ("the request, to the fork", "gi", None),
    ("fork0", "fork1"): ("the fork", "fork", None),
    ("fork1", "plugin0"): ("the child's set-up (the variant's modules)", "gi", None),
    ("sent", "handed"): ("the request, to the spare child", "gi", None),
    ("handed", "plugin0"): ("the child's set-up (the variant's modules)", "gi", None),
    ("plugin0", "plugin1"): ("importing gi's plugin", "gi", None),
    ("plugin1", "configure0"): ("pytest's start (capture, command line)", "pytest", None),
    ("plugin1", "collect0"): ("the child's own session start (capture, terminal)", "pytest", "session"),
    ("configure0", "session0"): ("pytest's configuration", "pytest", "configure"),
    ("session0", "collect0"): ("pytest's session start", "pytest", "session"),
    ("collect0", "collect1"): ("collection", "pytest", "collection"),
    ("collect1", "loop0"): ("collection", "pytest", None),
    ("loop0", "loop1"): ("pytest's machinery around each test", "pytest", "tests"),
    ("loop1", "finish0"): ("pytest's session end and summary", "pytest", None),
    ("finish0", "end"): ("pytest's session end and summary", "pytest", "finish"),
    ("end", "ended"): ("pytest's own end after its last hook", "pytest", None),
    ("ended", "answered"): ("the child's end, reaping, cleaning, the answer", "gi", None),
    ("end", "answered"): ("the child's end, reaping, cleaning, the answer", "gi", None),
}
MARKS = ("sent", "fork0", "fork1", "handed", "plugin0", "plugin1", "configure0", "session0", "collect0", "collect1",
         "loop0", "loop1", "finish0", "end", "ended", "answered")  # fmt: skip


#: A spare child's parts before its request, beside the last child's run.
AHEAD = ("a spare's fork, ahead (overlaps the above)", "a spare populating pages, ahead (overlaps the above)")


def child_parts(child: dict[str, Any]) -> dict[str, tuple[str, float]]:
    """One test run's parts in seconds, with their owners, from the timestamps it has. A spare
    child's fork and populating come before its request, beside the last child's run."""
    ahead = ("fork0", "fork1") if "handed" in child else ()
    marks = [mark for mark in MARKS if mark in child and mark not in ahead]
    parts: dict[str, tuple[str, float]] = {}
    if ahead:
        parts[AHEAD[0]] = ("overlaps", child["fork1"] - child["fork0"])
        parts[AHEAD[1]] = ("overlaps", child.get("populate", 0.0))
    for start, end in itertools.pairwise(marks):
        name, owner, hooks = PHASES.get((start, end), (f"{start} to {end}", "gi", None))
        seconds = child[end] - child[start] - (child["gi"].get(hooks, 0.0) if hooks else 0.0)
        if (start, end) == ("loop0", "loop1"):
            seconds -= child["calls"]
        parts[name] = (owner, parts.get(name, (owner, 0.0))[1] + seconds)
    parts["the tests' own code"] = ("tests", child["calls"])
    parts["gi's plugin: records, signatures, checks"] = ("gi", sum(child["gi"].values()))
    return parts


#: gi's own parts in its process: (part, the probe's name for it).
GI_PARTS = (
    ("compiling the edited files", "compiling the edited files"),
    ("the guard", "the guard"),
    ("static measures", "static measures"),
    ("the request's files", "the request's files"),
    ("reading the report", "reading the report"),
    ("the store (batch writes)", "the store"),
    ("tell, teaching, checkpoint", ("tell", "teaching the operators", "checkpoint")),
    ("held-out runs of new front members", "held-out runs"),
    ("waiting for the worker to settle", "waiting for the worker to settle"),
)


def breakdown(result: dict[str, Any]) -> dict[str, tuple[str, float]]:
    """Each part's milliseconds per evaluation (summed over threads), with its owner: gi, pytest,
    fork, tests, or "overlaps" for the breeding thread's."""
    evaluations = max(1, len(result["variants"]))
    totals: dict[str, float] = result["totals"]
    children = result["children"]
    per = 1000 / evaluations
    parts: dict[str, tuple[str, float]] = {name: (owner, 0.0) for name, owner, _ in PHASES.values()}
    parts.update({name: ("overlaps", 0.0) for name in AHEAD})
    for child in children:
        for name, (owner, seconds) in child_parts(child).items():
            parts[name] = (owner, parts.get(name, (owner, 0.0))[1] + seconds * per)
    for name, names in GI_PARTS:
        keys = (names,) if isinstance(names, str) else names
        parts[name] = ("gi", sum(totals.get(key, 0.0) for key in keys) * per)
    accounted = sum(seconds for owner, seconds in parts.values() if owner != "overlaps") / per
    rest = result["search_seconds"] * result.get("workers", 1) - accounted
    parts["the rest of gi's loop (waiting for breeding, threads)"] = ("gi", rest * per)
    parts["breeding, in a thread of its own (overlaps the above)"] = ("overlaps", totals.get("breeding", 0.0) * per)
    parts["  of which edits applied, code generated"] = (
        "overlaps", totals.get("edit application and code generation", 0.0) * per)  # fmt: skip
    parts["  of which tree hashes"] = ("overlaps", totals.get("tree hash", 0.0) * per)
    return parts


def print_breakdown(program: str, runs: dict[str, dict[str, Any]]) -> None:
    """One table: each part's ms per evaluation for each run, and the shares."""
    tables = {label: breakdown(result) for label, result in runs.items()}
    labels = list(tables)
    print(f"\n{program}: ms per evaluation (threads' time summed; 2 workers: two evaluations at once)")
    print(f"{'part':<58}{'owner':>9}" + "".join(f"{label:>16}" for label in labels))
    for name, (owner, _) in next(iter(tables.values())).items():
        print(f"{name:<58}{owner:>9}" + "".join(f"{tables[label][name][1]:>16.1f}" for label in labels))
    for owner in ("gi", "fork", "pytest", "tests"):
        sums = [sum(ms for o, ms in tables[label].values() if o == owner) for label in labels]
        print(f"{'  all of ' + owner:<67}" + "".join(f"{value:>16.1f}" for value in sums))
    totals = [sum(ms for o, ms in tables[label].values() if o != "overlaps") for label in labels]
    print(f"{'  one evaluation (all but breeding)':<67}" + "".join(f"{value:>16.1f}" for value in totals))
    shares = [sum(ms for o, ms in tables[label].values() if o == "gi") / total for label, total in
              zip(labels, totals, strict=True)]  # fmt: skip
    print(f"{'  gi share':<67}" + "".join(f"{share:>16.0%}" for share in shares))
    for part, name in (("gi", "gi's process (all its threads)"), ("warm", "the warm workers and their children"),
                       ("cold", "cold runs (held-out tests)")):  # fmt: skip
        cpu = [1000 * runs[label]["cpu"][part] / max(1, runs[label]["evaluations"]) for label in labels]
        print(f"{'  CPU ms: ' + name:<67}" + "".join(f"{value:>16.1f}" for value in cpu))
    faults = [statistics.median([child.get("faults", 0) for child in runs[label]["children"]] or [0])
              for label in labels]  # fmt: skip
    print(f"{'  page faults in a test run (median; a warm child: since its fork)':<67}"
          + "".join(f"{value:>16.0f}" for value in faults))  # fmt: skip
    walls = [1000 * runs[label]["search_seconds"] / max(1, runs[label]["evaluations"]) for label in labels]
    print(f"{'  wall per evaluation (the search over its evaluations)':<67}"
          + "".join(f"{value:>16.1f}" for value in walls))  # fmt: skip


def floor(program: str, result: dict[str, Any], count: int) -> dict[str, float]:
    """The floor and pytest in a warm fork on the first `count` variants `result` evaluated."""
    root, file = PROGRAMS[program]
    folder = Path(result["folder"])
    request = {"root": str(root), "files": [file], "train": ["tests"], "exclude": ["holdout"],
               "variants": result["variants"][:count]}  # fmt: skip
    (folder / "floor.json").write_text(json.dumps(request), encoding="utf-8")
    subprocess.run([sys.executable, str(HERE / "floor_harness.py"), str(folder / "floor.json"),
                    str(folder / "floor-out.json")], check=True, cwd=folder)  # fmt: skip
    out = json.loads((folder / "floor-out.json").read_text(encoding="utf-8"))
    return {"floor": 1000 * statistics.mean(out["floor"]), "pytest": 1000 * statistics.mean(out["pytest"]),
            "floor median": 1000 * statistics.median(out["floor"]),
            "pytest median": 1000 * statistics.median(out["pytest"])}  # fmt: skip


def side_by_side(program: str, seeds: list[int], baseline: Path, args: argparse.Namespace, workers: int = 1) -> None:
    print(f"\n{program}, {workers} worker{'s' if workers > 1 else ''}, side by side ({load()} at the start)")
    print(f"{'seed':>4} {'first':>8} {'before/s':>9} {'after/s':>9} {'ratio':>6}"
          f" {'whole before/s':>15} {'whole after/s':>14} {'same front':>11}")  # fmt: skip
    ratios, wholes = [], []
    for index, seed in enumerate(seeds):
        order = [("before", baseline), ("after", TREE)]
        if index % 2:
            order.reverse()
        results = {label: gi_run(tree, program, seed, workers, args) for label, tree in order}
        before, after = results["before"], results["after"]
        rate = {label: r["evaluations"] / r["search_seconds"] for label, r in results.items()}
        whole = {label: r["evaluations"] / r["wall_seconds"] for label, r in results.items()}
        same = before["front"] == after["front"] and before["evaluations"] == after["evaluations"]
        ratios.append(rate["after"] / rate["before"])
        wholes.append(whole["after"] / whole["before"])
        print(f"{seed:>4} {order[0][0]:>8} {rate['before']:>9.2f} {rate['after']:>9.2f} {ratios[-1]:>5.2f}x"
              f" {whole['before']:>15.2f} {whole['after']:>14.2f} {'yes' if same else 'NO':>11}",
              flush=True)  # fmt: skip
    print(f"median ratio {statistics.median(ratios):.2f}x (search), {statistics.median(wholes):.2f}x (whole command);"
          f" {load()} at the end")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout of the code to compare against")
    parser.add_argument("--baseline-python", type=Path, help="the baseline's interpreter (default: this one)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--programs", nargs="+", default=list(PROGRAMS), choices=list(PROGRAMS))
    parser.add_argument("--generations", type=int, default=9, help="after generation 0 (20 + 9 x 20 candidates)")
    parser.add_argument("--population", type=int, default=20)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="the breakdown's workers")
    parser.add_argument("--side-by-side-workers", type=int, nargs="+", default=[1], help="the side by side's workers")
    parser.add_argument("--floor-variants", type=int, default=50, help="the variants the floor is measured on")
    parser.add_argument("--skip", nargs="*", default=[], choices=["breakdown", "side-by-side"])
    args = parser.parse_args()
    baseline = args.baseline.resolve()
    print(f"this tree {TREE}; compared with {baseline} ({args.baseline_python or sys.executable}); {load()}")
    for program in args.programs:
        if "breakdown" not in args.skip:
            runs: dict[str, dict[str, Any]] = {}
            for workers in args.workers:
                for label, tree in (("before", baseline), ("after", TREE)):
                    result = gi_run(tree, program, args.seeds[0], workers, args, breakdown=True)
                    result["workers"] = workers
                    runs[f"{label}, {workers}w"] = result
            print(f"\n[{load()} after the breakdown's runs]")
            print_breakdown(program, runs)
            measured = floor(program, runs["after, 1w"], args.floor_variants)
            one = 1000 * runs["after, 1w"]["search_seconds"] / max(1, runs["after, 1w"]["evaluations"])
            shown = min(args.floor_variants, len(runs["after, 1w"]["variants"]))
            print(f"\nthe floor ({program}, the first {shown} of the same variants, {load()}):"
                  f" the tests in a warm forked interpreter, nothing else: {measured['floor']:.1f} ms"
                  f" (median {measured['floor median']:.1f}); pytest.main in a warm fork, without gi's plugin:"
                  f" {measured['pytest']:.1f} ms (median {measured['pytest median']:.1f}); gi, 1 worker:"
                  f" {one:.1f} ms a evaluation, {one / measured['floor']:.1f}x the floor")  # fmt: skip
        if "side-by-side" not in args.skip:
            for workers in args.side_by_side_workers:
                side_by_side(program, args.seeds, baseline, args, workers)


if __name__ == "__main__":
    main()
