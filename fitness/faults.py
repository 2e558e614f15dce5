"""Fault localisation: which lines the failing tests run, scored by a suspiciousness formula.

The tests run once on the original under coverage.py, with one coverage context per test
(our pytest plugin switches them), so each line knows the tests that executed it. A line
run by many failing and few passing tests is suspicious; repair runs weight edit sites by it.
Two formulas of spectrum-based fault localisation (`FORMULAS`): Ochiai, the one most repair
tools use (GenProg's successors, ARJA, PraPR), and Wong et al.'s D* (DStar, * = 2), which
studies of single faults found as good or better (Wong et al. 2014; Pearson et al. 2017 on
real faults) and which weighs a line every failing test runs and no passing test runs far
above the rest, where Ochiai keeps every line the failing tests run within a factor of a few.
"""

from __future__ import annotations

import dataclasses
import math
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from coverage import CoverageData

from gi.fitness.tests import DEFAULT_SETUP, NOT_FAILING, PytestSetup, TestRun, run_tests
from gi.model.results import CommandRunner

COVERAGE_FILE = ".gi-coverage"
#: gi's coverage.py settings file (in the run's tools), read in place of the project's.
COVERAGE_SETTINGS = "gi_coveragerc"

#: Per file, per line: the node ids of the tests that executed it, and "" when it also ran
#: outside any test (while modules were imported for collection).
LineCoverage = dict[str, dict[int, set[str]]]


def lend_coverage(runner: CommandRunner) -> str:
    """A folder in the run's tools holding (a link to) gi's own coverage.py, for an interpreter
    that has none: the project's environment need not have it for gi's coverage runs."""
    import coverage

    folder = runner.tools / "gi-lent"
    folder.mkdir(exist_ok=True)
    link = folder / "coverage"
    if not link.is_symlink():
        link.symlink_to(Path(coverage.__file__).parent, target_is_directory=True)
    return str(folder)


def covered_test_run(
    paths: Sequence[str],
    files: Sequence[str],
    *,
    timeout: float,
    runner: CommandRunner,
    default_limit: float = 0.0,
    setup: PytestSetup = DEFAULT_SETUP,
    on_test: Callable[[int], None] | None = None,
) -> tuple[TestRun, LineCoverage]:
    """Run the tests under coverage.py with a context per test; return outcomes and coverage
    (`on_test` as for `gi.fitness.tests.run_tests`)."""
    if setup.lend_coverage:
        setup = dataclasses.replace(setup, lent=(*setup.lent, lend_coverage(runner)))
    runner.clear_output(COVERAGE_FILE)
    include = ",".join(str(runner.workdir / file) for file in files)
    # gi's settings alone, not the project's ([tool.coverage.run] in pyproject.toml, .coveragerc,
    # setup.cfg, tox.ini): its `source` would override the files, `parallel` rename the data file
    # and `relative_files` store paths gi does not look under.
    settings = runner.install_tool(COVERAGE_SETTINGS, "[run]\n")
    prefix = ["-m", "coverage", "run", f"--rcfile={settings}", f"--data-file={runner.outputs / COVERAGE_FILE}",
              f"--include={include}", "-m", "pytest"]  # fmt: skip
    run = run_tests(paths, timeout=timeout, runner=runner, env={"GI_COVERAGE_CONTEXT": "1"}, prefix=prefix,
                    default_limit=default_limit, setup=setup, on_test=on_test)  # fmt: skip
    coverage: LineCoverage = {}
    data = runner.read_output(COVERAGE_FILE)
    if data is None:
        return run, coverage
    with tempfile.TemporaryDirectory(prefix="gi-coverage-") as private:
        copy = Path(private) / COVERAGE_FILE  # read from gi's own copy, not from where the tests wrote
        copy.write_bytes(data)
        recorded = CoverageData(basename=str(copy))
        recorded.read()
        for file in files:
            by_line = recorded.contexts_by_lineno(str(runner.workdir / file))
            coverage[file] = {line: set(contexts) for line, contexts in by_line.items()}
    return run, coverage


def _ochiai(failed_here: int, passed_here: int, failing: int) -> float:
    return failed_here / math.sqrt(failing * (failed_here + passed_here))


def _dstar(failed_here: int, passed_here: int, failing: int) -> float:
    """failed(l)² / (passed(l) + failing tests that do not run l); a line run by every
    failing test and no passing test (a zero denominator) as if the denominator were 1/2."""
    return failed_here**2 / max(passed_here + failing - failed_here, DSTAR_PERFECT)


#: D*'s denominator for a line every failing test and no passing test runs: half of the
#: least a line that some passing test runs has, so the perfect line weighs twice the best of those.
DSTAR_PERFECT = 0.5
#: Suspiciousness formulas by name: (failing tests that run the line, passing tests that run
#: it, failing tests) to a score, for lines some failing test runs.
FORMULAS: dict[str, Callable[[int, int, int], float]] = {"ochiai": _ochiai, "dstar": _dstar}


def suspiciousness(
    coverage: LineCoverage, outcomes: Mapping[str, str], formula: str = "ochiai"
) -> dict[tuple[str, int], float]:
    """The `formula`'s suspiciousness (FORMULAS) of every line some failing test runs."""
    score = FORMULAS[formula]
    failing = {test for test, outcome in outcomes.items() if outcome not in NOT_FAILING}
    passing = {test for test, outcome in outcomes.items() if outcome == "passed"}
    scores: dict[tuple[str, int], float] = {}
    if not failing:
        return scores
    for file, lines in coverage.items():
        for line, tests in lines.items():
            failed_here = len(tests & failing)
            if failed_here:
                scores[(file, line)] = score(failed_here, len(tests & passing), len(failing))
    return scores
