"""gi and Magpie side by side: evaluations per second on the same programs, tests and budget.

python benchmarks/magpie_side_by_side.py --magpie PATH [--seeds 1 2] [--programs parcel grading]
                                         [--evaluations 100] [--tests-python PYTHON]
                                         [--magpie-python PYTHON]

PATH is a checkout of Magpie (`git clone https://github.com/bloa/magpie`; it needs only the
standard library), run by --magpie-python (default: this interpreter; its `python_to_xml` needs
Python 3.13's syntax trees for an f-string with a format spec, as grading.py has). For each
program and seed, alternating which goes first, it runs:

- Magpie's local search (`magpie local_search`, its default first-improvement walk) over the
  program's statement nodes (`python_to_xml`; deletion, replacement and insertion of statements,
  the classic operators), scored by `bloat_lines` (simplify without breaking the tests), each
  variant's tests in a fresh `python -m pytest -q tests` in a copy of the program, as Magpie
  runs every tool; `--evaluations` steps.
- `gi run` as experiments/grading.toml says (NSGA-II over failed tests, complexity and size, the
  classic operators), warm, 1 worker, in the sandbox, population 20 and as many generations as
  make `--evaluations` candidates.

Both run the tests in --tests-python (default: this interpreter), with its pytest and the plugins
installed beside it (gi as a project's own environment, `program.python`), on the same training
tests (the held-out ones stay out of Magpie's copy; gi runs them on its front at the
end). It prints, per run, the test runs each tool made (a candidate found in its cache is not
one), the search's test runs per second (Magpie from its log's START to its END; gi from
breeding to checkpoint, benchmarks/floor_probe.py), the whole command's, and the ratio; then
the time of one `python -m pytest -q tests` on the original, the floor under a fresh process
per variant.

The programs are benchmarks/programs/parcel (5 training tests) and README's grading example
(experiments/programs/grading, 4). The machine's load is printed beside each table.
"""

from __future__ import annotations

import argparse
import datetime
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from evaluation_floor import PROGRAMS, TREE, config_text, load, probe_run  # noqa: E402  (a sibling script)

#: Magpie's statement operators, its counterparts of gi's classic ones.
EDITS = ("XmlNodeDeletion<stmt>", "XmlNodeReplacement<stmt>", "XmlNodeInsertion<stmt,block>")
TESTS = "tests"
#: One step of Magpie's log: its time stamp, counter, status, and whether its cache answered.
STEP = re.compile(r"^(\S+ \S+)\t\[INFO\]\t(\d+)\s+(\S+)\s.*?(\[cached\])?\s*$")
MARK = re.compile(r"^(\S+ \S+)\t\[INFO\]\t~~~~ (START|END) ~~~~")


def stamp(text: str) -> float:
    """Seconds since the epoch of one of Magpie's log time stamps (`2026-12-05 18:50:12,768`)."""
    return datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def magpie_log(text: str) -> dict[str, Any]:
    """What a Magpie log says: its steps, those its cache answered, the statuses of the others
    and the search's seconds (START to END)."""
    marks: dict[str, float] = {}
    steps, cached, statuses = 0, 0, []
    for line in text.splitlines():
        if found := MARK.match(line):
            marks[found.group(2)] = stamp(found.group(1))
        elif found := STEP.match(line):
            steps += 1
            if found.group(4):
                cached += 1
            else:
                statuses.append(found.group(3))
    if set(marks) != {"START", "END"}:
        raise SystemExit("Magpie's log has no START and END of its search: did it run?")
    return {"steps": steps, "runs": steps - cached, "search_seconds": marks["END"] - marks["START"],
            "statuses": {status: statuses.count(status) for status in sorted(set(statuses))}}  # fmt: skip


def program_copy(program: str, folder: Path) -> tuple[Path, str]:
    """The program with its training tests only, in `folder`; and its editable file."""
    root, file = PROGRAMS[program]
    copy = folder / program
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("holdout", "__pycache__", ".pytest_cache"))
    return copy, file


def magpie_run(magpie: Path, runner: str, program: str, seed: int, evaluations: int, python: str) -> dict[str, Any]:
    """One `magpie local_search` on `program` by the interpreter `runner`, the tests in `python`,
    in a folder of its own."""
    folder = Path(tempfile.mkdtemp(prefix=f"gi-magpie-{program}-"))
    copy, file = program_copy(program, folder)
    xml = subprocess.run([runner, str(magpie / "magpie"), "python_to_xml", file], cwd=copy,
                         capture_output=True, text=True, check=False)  # fmt: skip
    if xml.returncode != 0:
        last = (xml.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"Magpie's python_to_xml failed on {file} ({last}): try --magpie-python with Python 3.13")
    (copy / f"{file}.xml").write_text(xml.stdout, encoding="utf-8")
    edits = "".join(f"\n    {edit}" for edit in EDITS)
    scenario = folder / "scenario.txt"
    scenario.write_text(
        f"[magpie]\nseed = {seed}\nlog_dir = {folder / 'logs'}\nwork_dir = {folder / 'work'}\n\n"
        "[magpie.log]\ncolor_output = False\n\n"
        f"[software]\npath = {copy}\ntarget_files =\n    {file}.xml\nfitness = bloat_lines\n"
        f"test_cmd = {python} -m pytest -q {TESTS}\ntest_timeout = 10\n\n"
        "[srcml]\nfocus = stmt block\ninternodes = block\n\n"
        f"[search]\nmax_steps = {evaluations}\npossible_edits ={edits}\n",
        encoding="utf-8",
    )
    started = time.perf_counter()
    done = subprocess.run([runner, str(magpie / "magpie"), "local_search", "--scenario", str(scenario)],
                          cwd=magpie, capture_output=True, text=True, check=False)  # fmt: skip
    wall = time.perf_counter() - started
    logs = sorted((folder / "logs").glob("*.log"))
    if done.returncode != 0 or not logs:
        raise SystemExit(f"Magpie failed on {program}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    result = magpie_log(logs[-1].read_text(encoding="utf-8"))
    shutil.rmtree(folder, ignore_errors=True)
    return {**result, "wall_seconds": wall}


def gi_run(program: str, seed: int, evaluations: int, population: int, python: str) -> dict[str, Any]:
    """One `gi run` of this tree on `program`, 1 worker, its tests in `python`
    (benchmarks/floor_probe.py, which times the search)."""
    generations = max(0, round(evaluations / population) - 1)

    def text(folder: Path) -> str:
        return config_text(program, folder / "runs", seed, 1, generations, population, tests_python=python)

    result = probe_run(TREE, sys.executable, program, text)
    shutil.rmtree(result["folder"], ignore_errors=True)
    return {"runs": result["evaluations"], "search_seconds": result["search_seconds"],
            "wall_seconds": result["wall_seconds"]}  # fmt: skip


def fresh_pytest(program: str, python: str, times: int = 5) -> float:
    """The median seconds of `python -m pytest -q tests` on the original, in a fresh process."""
    folder = Path(tempfile.mkdtemp(prefix=f"gi-magpie-pytest-{program}-"))
    copy, _ = program_copy(program, folder)
    seconds = []
    for _ in range(times):
        started = time.perf_counter()
        subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", TESTS], cwd=copy,
                       capture_output=True, check=False)  # fmt: skip
        seconds.append(time.perf_counter() - started)
    shutil.rmtree(folder, ignore_errors=True)
    return statistics.median(seconds)


def rate(result: dict[str, Any], seconds: str) -> float:
    return float(result["runs"]) / result[seconds] if result[seconds] > 0 else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], usage=__doc__.split("\n\n")[1])
    parser.add_argument("--magpie", type=Path, required=True, help="a checkout of Magpie")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--programs", nargs="+", choices=sorted(PROGRAMS), default=["parcel", "grading"])
    parser.add_argument("--evaluations", type=int, default=100, help="Magpie's steps; gi's candidates")
    parser.add_argument("--population", type=int, default=20)
    parser.add_argument("--tests-python", default=sys.executable, help="the interpreter the tests run in")
    parser.add_argument("--magpie-python", default=sys.executable, help="the interpreter Magpie runs in")
    args = parser.parse_args()
    magpie = args.magpie.resolve()
    if not (magpie / "magpie" / "bin" / "local_search.py").is_file():
        raise SystemExit(f"{magpie} is no checkout of Magpie (no magpie/bin/local_search.py)")
    python = str(Path(args.tests_python).absolute())
    listed = (
        "import importlib.metadata as m; print(', '.join(sorted(e.name for e in m.entry_points(group='pytest11'))))"
    )
    plugins = subprocess.run([python, "-c", listed], capture_output=True, text=True, check=True).stdout.strip()
    print(f"gi {TREE}, Magpie {magpie}; the tests in {python} (pytest's plugins installed: {plugins or 'none'});"
          f" {load()}")  # fmt: skip
    for program in args.programs:
        print(f"\n{program}, {args.evaluations} candidates, 1 process at a time ({load()} at the start)")
        print("seed  first    Magpie runs   runs/s  whole/s     gi runs   runs/s  whole/s   gi/Magpie  whole")
        ratios, wholes = [], []
        for index, seed in enumerate(args.seeds):
            order = ["magpie", "gi"] if index % 2 == 0 else ["gi", "magpie"]
            done: dict[str, dict[str, Any]] = {}
            for tool in order:
                done[tool] = (magpie_run(magpie, args.magpie_python, program, seed, args.evaluations, python)
                              if tool == "magpie"
                              else gi_run(program, seed, args.evaluations, args.population, python))  # fmt: skip
            them, us = done["magpie"], done["gi"]
            ratio = rate(us, "search_seconds") / max(rate(them, "search_seconds"), 1e-9)
            whole = rate(us, "wall_seconds") / max(rate(them, "wall_seconds"), 1e-9)
            ratios.append(ratio)
            wholes.append(whole)
            print(f"{seed:>4}  {order[0]:<6}  {them['runs']:>11}  {rate(them, 'search_seconds'):>7.2f}"
                  f"  {rate(them, 'wall_seconds'):>7.2f}  {us['runs']:>10}  {rate(us, 'search_seconds'):>7.2f}"
                  f"  {rate(us, 'wall_seconds'):>7.2f}  {ratio:>9.1f}x  {whole:>4.1f}x"
                  f"   Magpie's runs: {them['statuses']}")  # fmt: skip
        print(f"median {statistics.median(ratios):.1f}x (search), {statistics.median(wholes):.1f}x (whole command);"
              f" {load()} at the end")  # fmt: skip
        fresh = fresh_pytest(program, python)
        print(f"one fresh `python -m pytest -q {TESTS}` on the original: {fresh:.3f} s (median of 5)")


if __name__ == "__main__":
    main()
