"""Does gi work on the projects people have?

Takes pinned source distributions of real libraries from PyPI (their sdists carry their tests),
each with the layout and pytest settings its maintainers gave it, and does what README tells a
new user to do, as written:

    gi init PROJECT && gi run PROJECT/gi.toml --generations G --population P

Each project gets a virtual environment in its folder (`.venv`), as a developer's checkout has
one: the project installed in it editable (`pip install -e .`), pytest and the test dependencies
its packaging names, pinned; nothing of gi's.

Per project it prints:
- init: whether `gi init` wrote a config (else the one line it said);
- suite: the project's suite run alone, as its maintainers run it (`.venv/bin/python -m pytest`
  in the project folder, its own settings; median of 3 runs), its tests and seconds;
- evals/s: evaluations a second over the run's generations after generation 0 (the arrival of
  its progress lines), and that rate times the suite's seconds: how many times faster than
  running the whole suite alone once per variant gi judges variants (above 1: faster);
- tests/eval: the training tests an evaluation ran on average, of the training tests (a run
  that stops at a variant's first failing test runs fewer);
- to gen 0: seconds from the start of `gi run` to its generation 0 (reading and indexing the
  files, the original's test runs, its coverage per test);
- all: the same run with every training test judging every variant (tests.select = "all"):
  its rate, tests an evaluation ran, and how many times faster the run as written is; then
  whether the two runs reached the same front (each member's edits, objectives and training
  verdict) and the same verdict for each program both evaluated (a program confirmed by every
  test counts by its confirmation);
- held-out: the held-out tests that judged the run (0: none did);
- left out: the sites the run left out because no training test executes them;
- front: its members other than the original, with their held-out verdicts.

For the projects --reference names (none by default), the same run again, side by side, the way
gi judged every variant before issue 33: a cold copy and interpreter per variant, every test run
(evaluation.engine = "cold", evaluation.shortcuts = false, tests.select = "all"). The seed and the
scores are the same, so the runs evaluate the same programs: the benchmark checks each got the
same verdict (status and failed tests) both ways, and prints both rates.

Sdists, environments and project folders live in a cache outside the repository (default
~/.cache/gi-benchmarks; --cache names another), so CI never runs this: it needs PyPI. Every
run extracts each sdist afresh (the environment is kept), so earlier runs leave nothing.

python benchmarks/real_projects.py [--projects parse,toolz] [--generations 3] [--population 10]
    [--reference toolz] [--no-every-test]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The pytest every project's environment gets (gi's own, so the comparison is like for like).
PYTEST = "pytest==9.2.0"


@dataclass(frozen=True)
class RealProject:
    """A library whose sdist carries its tests, and what its maintainers' test environment has."""

    name: str
    version: str
    layout: str
    requirements: tuple[str, ...] = (PYTEST,)

    @property
    def folder_name(self) -> str:
        """The sdist's name and the folder it unpacks to (PEP 625 spells the name with underscores)."""
        return f"{self.name.replace('-', '_')}-{self.version}"


PROJECTS = (
    RealProject(
        "parse",
        "1.22.4",
        "one package beside tests/; addopts asks for pytest-cov and doctests of the modules",
        (PYTEST, "pytest-cov==7.1.0"),
    ),
    RealProject("cachetools", "8.0.2", "src layout: src/cachetools, tests/ beside src/"),
    RealProject("funcy", "2.1", "package beside tests/, tests import a test dependency", (PYTEST, "whatever==0.7")),
    RealProject("toolz", "1.2.0", "tests inside the package (toolz/tests), testpaths, warnings are errors"),
    RealProject("six", "1.17.0", "one module, its test file beside it"),
    RealProject(
        "iso8601",
        "2.1.0",
        "tests inside the package; hypothesis (writes its database where it runs) and pytz",
        (PYTEST, "hypothesis==6.170.17", "pytz==2026.6"),
    ),
    RealProject("more-itertools", "11.2.1", "one package beside tests/, 600 tests of a 5,000-line module"),
    RealProject("python-slugify", "9.1.3", "src layout, warnings are errors (filterwarnings = error)"),
)


def gi_command() -> list[str]:
    """The `gi` of the interpreter running this benchmark (the one README installs)."""
    return [str(Path(sys.executable).parent / "gi")]


def fetch(project: RealProject, cache: Path) -> Path:
    """The project's sdist in the cache, downloaded with pip the first time."""
    folder = cache / "sdists"
    for candidate in folder.glob(f"{project.folder_name}.tar.gz"):
        return candidate
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
         "--dest", str(folder), f"{project.name}=={project.version}"],
        check=True,
    )  # fmt: skip
    found = sorted(folder.glob(f"{project.folder_name}.tar.gz"))
    if not found:
        raise SystemExit(f"pip downloaded no {project.folder_name}.tar.gz into {folder}")
    return found[0]


def prepare(project: RealProject, cache: Path) -> Path:
    """A fresh copy of the project's sdist under cache/projects, with its environment (.venv,
    made once and kept), and no run folder of an earlier benchmark."""
    sdist = fetch(project, cache)
    projects = cache / "projects"
    folder = projects / project.folder_name
    kept = projects / f".{project.folder_name}-venv"  # the environment, while the folder is renewed
    if (folder / ".venv").is_dir():
        shutil.rmtree(kept, ignore_errors=True)
        (folder / ".venv").rename(kept)
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(projects / f"{project.folder_name}-gi-runs", ignore_errors=True)
    projects.mkdir(parents=True, exist_ok=True)
    with tarfile.open(sdist) as archive:
        archive.extractall(projects, filter="data")
    if kept.is_dir():
        kept.rename(folder / ".venv")
    else:
        # Without pip's own upgrade: the interpreter's pip is what a developer has.
        subprocess.run([sys.executable, "-m", "venv", str(folder / ".venv")], check=True)
        python = str(folder / ".venv" / "bin" / "python")
        install = [python, "-m", "pip", "install", "--quiet", *project.requirements, "-e", "."]
        subprocess.run(install, cwd=folder, check=True)
    return folder


@dataclass
class SuiteAlone:
    seconds: float
    summary: str


def run_suite_alone(folder: Path, repeats: int = 3) -> SuiteAlone:
    """The project's whole suite, as its maintainers run it, in its own environment."""
    times = []
    summary = ""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    for _ in range(repeats):
        started = time.perf_counter()
        done = subprocess.run(
            [str(folder / ".venv" / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
            cwd=folder, capture_output=True, text=True, env=env, check=False,
        )  # fmt: skip
        times.append(time.perf_counter() - started)
        lines = [line.strip("= ") for line in done.stdout.splitlines() if line.strip()]
        summary = lines[-1] if lines else f"exit {done.returncode}, no output"
    return SuiteAlone(statistics.median(times), summary)


@dataclass
class Arm:
    """One `gi run` of a project's written config: what it said, its rate and its folder."""

    said: str = ""
    #: Evaluations a second over generations 1.. (the arrival of the progress lines).
    rate: float | None = None
    #: Seconds from the start of `gi run` to generation 0 (reading, the original's runs, coverage).
    setup: float | None = None
    #: The machine's load (1-minute average) when the run ended.
    load: float = 0.0
    summary: dict[str, Any] | None = None
    folder: Path | None = None


@dataclass
class Outcome:
    """What the benchmark saw of one project."""

    project: RealProject
    suite: SuiteAlone
    init: str = ""
    init_ok: bool = False
    #: The config as written (tests.select = "coverage"), and with every test (tests.select = "all").
    selected: Arm = field(default_factory=Arm)
    every: Arm | None = None
    reference: Arm | None = None
    #: Programs both runs evaluated, and those of them with the same verdict both ways.
    compared: tuple[int, int] | None = None
    #: Programs both the selecting run and the every-test run evaluated, the same verdict both ways.
    selection_compared: tuple[int, int] | None = None

    @property
    def rate(self) -> float | None:
        return self.selected.rate

    @property
    def summary(self) -> dict[str, Any] | None:
        return self.selected.summary


def gi_init(folder: Path) -> tuple[bool, str]:
    done = subprocess.run([*gi_command(), "init", str(folder)], capture_output=True, text=True, check=False)
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    said = next((line for line in lines if "error" in line), lines[-1] if lines else "")
    return done.returncode == 0, said.strip()


#: What makes a run judge each variant the way gi did before: cold, every test.
REFERENCE = ("--set", 'evaluation.engine="cold"', "--set", "evaluation.shortcuts=false", "--set",
             'tests.select="all"', "--set", "experiment.name=reference")  # fmt: skip
#: The written config without test selection: every training test judges every variant.
EVERY_TEST = ("--set", 'tests.select="all"', "--set", "experiment.name=every-test")


def gi_run(folder: Path, generations: int, population: int, timeout: float, extra: tuple[str, ...] = ()) -> Arm:
    """Run the written config for a few generations: the last line said, the evaluations a
    second over generations 1.. (from the arrival of the progress lines), the seconds to
    generation 0 and the run folder."""
    command = [*gi_command(), "run", str(folder / "gi.toml"), "--generations", str(generations),
               "--population", str(population), *extra]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    arrivals: list[tuple[float, int]] = []  # (time, evaluations) at each generation's line
    lines: list[str] = []
    started = time.perf_counter()
    setup = None
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line.rstrip())
        words = line.split()
        if setup is None and line.startswith("gi: generation 0:"):
            setup = time.perf_counter() - started
        if len(words) >= 6 and words[0] == "gen" and words[1].isdigit() and words[4] == "evals":
            arrivals.append((time.perf_counter(), int(words[5])))
        if time.perf_counter() - started > timeout:
            process.kill()
            lines.append(f"(killed after {timeout:g} s)")
            break
    process.wait()
    rate = None
    if len(arrivals) >= 2 and arrivals[-1][0] > arrivals[0][0]:
        rate = (arrivals[-1][1] - arrivals[0][1]) / (arrivals[-1][0] - arrivals[0][0])
    said = next((line for line in lines if "error" in line), lines[-1] if lines else "")
    run_folder = next((Path(line.split()[2]) for line in lines if line.startswith("run folder: ")), None)
    load = os.getloadavg()[0]
    if process.returncode != 0 or run_folder is None:
        return Arm(f"exit {process.returncode}: {said.strip()}", rate, setup, load=load)
    summary = json.loads((run_folder / "summary.json").read_text(encoding="utf-8"))
    return Arm(f"ok (load {load:.2f} at its end)", rate, setup, load, summary, run_folder)


def verdicts(run_folder: Path) -> dict[str, tuple[str, float | None]]:
    """Each evaluated program's verdict (status, failed tests), by tree hash: that of its run of
    every training test where it ran only those selected by coverage and was confirmed."""
    found = {}
    for line in (run_folder / "evaluations.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        row = row.get("confirmation") or row
        found[row["tree_hash"]] = (row["status"], row["measures"].get("failed_tests"))
    return found


def agreement(ours: Path, theirs: Path) -> tuple[int, int]:
    """Programs both runs evaluated, and those with the same verdict both ways."""
    mine, other = verdicts(ours), verdicts(theirs)
    both = set(mine) & set(other)
    return len(both), sum(mine[key] == other[key] for key in both)


def front_of(summary: dict[str, Any]) -> list[tuple[Any, ...]]:
    """A run's front as the report gives it: each member's edits, objectives, feasibility and
    training verdict (passed, failed, skipped)."""
    return [
        (json.dumps(m["edits"], sort_keys=True), m["objectives"], m["feasible"], m["training"])
        for m in summary["front"]
    ]


def tests_run(summary: dict[str, Any] | None) -> str:
    """Training tests an evaluation ran on average, of the training tests."""
    tests = (summary or {}).get("tests") or {}
    if tests.get("run_per_evaluation") is None:
        return "-"
    return f"{tests['run_per_evaluation']:.1f}/{tests['training']}"


def describe_front(summary: dict[str, Any]) -> list[str]:
    """One line per front member other than the original: its edits and held-out verdict."""
    lines = []
    for member in summary["front"]:
        if member["id"] == "original":
            continue
        holdout = member.get("holdout") or {}
        verdict = "no held-out run"
        if holdout:
            verdict = f"held-out {holdout.get('passed', 0)} passed, {holdout.get('failed', 0)} failed"
        if member.get("overfits"):
            verdict += ", overfits"
        for index, description in enumerate(member["descriptions"]):
            head = f"{member['id']} ({verdict})" if index == 0 else ""
            lines.append(f"    {head:<40} {description}")
    return lines or ["    (the original alone)"]


def holdout_tests(summary: dict[str, Any]) -> int:
    holdout = summary["baseline"].get("holdout") or {}
    return sum(int(holdout.get(key, 0)) for key in ("passed", "failed", "skipped"))


def left_out(summary: dict[str, Any]) -> str:
    sites = summary.get("sites")
    if not isinstance(sites, dict):
        return "-"
    return f"{sites.get('left_out', 0)} of {sites.get('total', 0)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "gi-benchmarks")
    parser.add_argument("--projects", default=",".join(project.name for project in PROJECTS))
    parser.add_argument("--generations", type=int, default=3)
    parser.add_argument("--population", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds one gi run may take")
    parser.add_argument("--reference", default="", help="projects also run cold with every test (gi before issue 33)")
    parser.add_argument("--no-every-test", action="store_true", help="skip the runs with every test (tests.select)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="passed to every `gi run` (e.g. evaluation.engine='\"cold\"')")  # fmt: skip
    args = parser.parse_args()
    known = {project.name: project for project in PROJECTS}
    wanted = [name.strip() for name in args.projects.split(",") if name.strip()]
    if unknown := [name for name in wanted if name not in known]:
        raise SystemExit(f"--projects: unknown {', '.join(unknown)}; known: {', '.join(known)}")
    cache = args.cache.expanduser().resolve()
    given = tuple(word for pair in args.set for word in ("--set", pair))
    print(f"cache {cache}; gi {' '.join(gi_command())}; load {os.getloadavg()[0]:.2f} at the start")
    outcomes = []
    for name in wanted:
        project = known[name]
        print(f"== {project.folder_name}: {project.layout}", flush=True)
        folder = prepare(project, cache)
        outcome = Outcome(project, run_suite_alone(folder))
        print(f"  suite alone: {outcome.suite.summary} (median {outcome.suite.seconds:.2f} s)", flush=True)
        outcome.init_ok, outcome.init = gi_init(folder)
        print(f"  gi init: {'ok' if outcome.init_ok else outcome.init}", flush=True)
        if outcome.init_ok:
            outcome.selected = gi_run(folder, args.generations, args.population, args.timeout, given)
            print(f"  gi run (as written, tests selected by coverage): {outcome.selected.said}", flush=True)
            if outcome.selected.folder is not None and not args.no_every_test:
                outcome.every = gi_run(folder, args.generations, args.population, args.timeout, (*given, *EVERY_TEST))
                print(f"  gi run with every test (tests.select = 'all'): {outcome.every.said}", flush=True)
                if outcome.every.folder is not None:
                    outcome.selection_compared = agreement(outcome.selected.folder, outcome.every.folder)
            if outcome.selected.folder is not None and name in args.reference.split(","):
                outcome.reference = gi_run(
                    folder, args.generations, args.population, args.timeout, (*given, *REFERENCE)
                )
                print(f"  reference run (cold, every test): {outcome.reference.said}", flush=True)
                if outcome.reference.folder is not None:
                    outcome.compared = agreement(outcome.selected.folder, outcome.reference.folder)
        outcomes.append(outcome)
    print()
    print(f"{'project':<22} {'init':<5} {'suite s':>8} {'evals/s':>8} {'x suite':>8} {'tests/eval':>11}"
          f" {'to gen 0':>9} {'all: evals/s':>13} {'tests/eval':>11} {'ratio':>6} {'held-out':>9}"
          f" {'left out':>12}")  # fmt: skip
    for outcome in outcomes:
        rate = "-" if outcome.rate is None else f"{outcome.rate:.2f}"
        times = "-" if outcome.rate is None else f"{outcome.rate * outcome.suite.seconds:.2f}"
        held = "-" if outcome.summary is None else str(holdout_tests(outcome.summary))
        left = "-" if outcome.summary is None else left_out(outcome.summary)
        setup = "-" if outcome.selected.setup is None else f"{outcome.selected.setup:.0f} s"
        alone = outcome.every or Arm()
        every_rate = "-" if alone.rate is None else f"{alone.rate:.3f}"
        ratio = "-" if alone.rate is None or outcome.rate is None else f"{outcome.rate / alone.rate:.1f}x"
        print(
            f"{outcome.project.folder_name:<22} {'ok' if outcome.init_ok else 'no':<5} {outcome.suite.seconds:>8.2f}"
            f" {rate:>8} {times:>8} {tests_run(outcome.summary):>11} {setup:>9} {every_rate:>13}"
            f" {tests_run(alone.summary):>11} {ratio:>6} {held:>9} {left:>12}"
        )
    for outcome in outcomes:
        if (
            (every := outcome.every) is None
            or every.summary is None
            or outcome.summary is None
            or outcome.selection_compared is None
        ):
            continue
        both, same = outcome.selection_compared
        same_front = front_of(outcome.summary) == front_of(every.summary)
        tests = outcome.summary.get("tests") or {}
        print(
            f"{outcome.project.folder_name}: selection by coverage {outcome.rate or 0:.2f} evaluations/s against"
            f" {every.rate or 0:.3f} with every test; front {'the same' if same_front else 'NOT the same'} both ways"
            f" ({len(outcome.summary['front'])} members); the same verdict for {same} of the {both} programs both"
            f" runs evaluated; {tests.get('confirmed', 0)} confirmed by every test, {tests.get('overturned', 0)}"
            " overturned"
        )
    for outcome in outcomes:
        reference = outcome.reference
        if reference is not None and reference.rate is not None and outcome.rate is not None and outcome.compared:
            both, same = outcome.compared
            print(
                f"{outcome.project.folder_name}: {outcome.rate:.2f} evaluations/s against {reference.rate:.2f}"
                f" cold with every test ({outcome.rate / reference.rate:.1f}x); the same verdict for {same}"
                f" of the {both} programs both runs evaluated"
            )
    for outcome in outcomes:
        print(f"{outcome.project.folder_name}:")
        if not outcome.init_ok:
            print(f"    gi init: {outcome.init}")
        elif outcome.summary is None:
            print(f"    gi run: {outcome.selected.said}")
        else:
            print("\n".join(describe_front(outcome.summary)))
    print(f"load {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
