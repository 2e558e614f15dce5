"""`gi init`: a commented starter config for a project, written without asking anything.

It looks at the project folder the way pytest and gi do: test files (`test_*.py`,
`*_test.py`) are the tests, by the folder named like a test folder (`tests`, `test`, `testing`)
that holds them or else by their own path; a folder named `holdout` (or `heldout`, `held_out`)
holds held-out tests; every other Python file but conftest.py, setup.py and a workload is
editable (but those of docs/). A virtual environment of the project's own (.venv, venv, .env or
env) is the interpreter the tests run in (program.python). Without a held-out folder, a seeded
share of the training tests is held out (tests.holdout_fraction), so that every run is judged
by tests the search never saw (whole test files where there are enough, else tests within the
files, left out of the training copies). Then it runs the training tests once on the original, as `gi run`
runs them (gi's evaluator: a sandboxed copy, the held-out tests left out), to fit the config to
what they do:
when the original fails some, the config is a repair's (no constraint, fewest failing tests
first, fault localisation); the time limits come from how long they took; tests that cannot
run at all (a module that does not import, pytest failing) are a `ProgramError` naming why.
The config it writes is one `gi run` accepts unchanged: tests are never editable, and the run
folder lies beside the project, outside what a run copies.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import os
import re
import textwrap
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gi.engine.project import find_environment
from gi.fitness.outcomes import TEST_SHARE
from gi.model.errors import ConfigError, ProgramError
from gi.model.program import IGNORED_DIRS

if TYPE_CHECKING:
    from gi.config import Config
    from gi.fitness.tests import TestRun

CONFIG_NAME = "gi.toml"
HOLDOUT_NAMES = frozenset({"holdout", "heldout", "held_out"})
TEST_FOLDERS = frozenset({"tests", "test", "testing"}) | HOLDOUT_NAMES
#: Python files that are part of a project's tooling, not of its program.
NOT_EDITABLE = frozenset({"conftest.py", "setup.py", "noxfile.py", "fabfile.py"})
#: Folders whose Python files are documentation, not the program (Sphinx's conf.py, examples).
DOCUMENTATION = frozenset({"docs", "doc"})
#: Top-level folders of scripts beside the program (a project's dev tools, benchmarks, examples):
#: left out of the editable files, unless nothing else is left.
SCRIPTS = frozenset({"tools", "scripts", "benchmarks", "examples"})
#: The share of the training tests' ids held out when the project has no held-out folder.
HOLDOUT_FRACTION = 0.2
#: Seconds `gi init` gives the original's whole training run, and one of its tests (a test
#: past it is failing, as one that loops forever is).
CHECK_TIMEOUT = 600.0
CHECK_TEST_TIMEOUT = 60.0
#: A test past CHECK_TEST_TIMEOUT runs again alone with this limit (the most of a whole run one
#: test may take), to tell a slow test on a loaded machine from one that hangs: more-itertools'
#: test_primes, 22 s with the machine quiet, passed the first limit at a load average of 13.
RETRY_TEST_TIMEOUT = TEST_SHARE * CHECK_TIMEOUT
#: The written limits: one test may take this many times the slowest test's time in gi init's
#: run (and at least MIN_TEST_TIMEOUT seconds), a whole run this many times the run's (and at
#: least MIN_TIMEOUT): enough that the original's own run under `gi run` never meets them.
TEST_TIMEOUT_FACTOR = 20.0
MIN_TEST_TIMEOUT = 2
TIMEOUT_FACTOR = 10.0
MIN_TIMEOUT = 60
#: The widest comment line the starter config has.
COMMENT_WIDTH = 92


@dataclass(frozen=True)
class Project:
    """What `gi init` found in a project folder (paths relative to it, sorted)."""

    root: Path
    files: tuple[str, ...]
    train: tuple[str, ...]
    holdout: tuple[str, ...]
    workload: str | None
    #: The interpreter of the project's own virtual environment, relative to root (None: gi's).
    python: str | None = None
    #: The folders of scripts (SCRIPTS) whose files were left out of the editable ones.
    scripts: tuple[str, ...] = ()


def _is_test(name: str) -> bool:
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def _test_path(test_file: Path) -> str:
    """The pytest path a test file is run by: its outermost folder named like a test folder
    (tests, test, testing, holdout, ...), else the file itself (a test beside the code)."""
    for index, part in enumerate(test_file.parts[:-1]):
        if part in TEST_FOLDERS:
            return Path(*test_file.parts[: index + 1]).as_posix()
    return test_file.as_posix()


def _python_files(root: Path) -> list[Path]:
    """Every .py file under root, relative, skipping what gi never searches (caches, VCS,
    environments) and links."""
    found = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(
            name for name in subfolders if name not in IGNORED_DIRS and not (Path(folder) / name).is_symlink()
        )
        for name in sorted(names):
            path = Path(folder) / name
            if name.endswith(".py") and path.is_file() and not path.is_symlink():
                found.append(path.relative_to(root))
    return found


def _workload(root: Path) -> str | None:
    """`workload:run` when the project has a workload.py with a no-argument `run` function."""
    path = root / "workload.py"
    if not path.is_file():
        return None
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "run":
            arguments = node.args
            positional = len(arguments.posonlyargs) + len(arguments.args)
            keywords_needed = any(default is None for default in arguments.kw_defaults)
            if positional == len(arguments.defaults) and not keywords_needed:
                return "workload:run"
    return None


def survey(root: Path) -> Project:
    """Find a project's editable files, its training and held-out tests and its workload."""
    root = root.resolve()
    if root.is_file():
        hint = f"; to run a config, gi run {root}" if root.suffix == ".toml" else ""
        raise ProgramError(f"{root}: a file, not a project folder; gi init takes the project's folder{hint}")
    if not root.is_dir():
        raise ProgramError(f"{root}: no such project folder")
    files = _python_files(root)
    test_paths = sorted({_test_path(path) for path in files if _is_test(path.name)})
    holdout = tuple(path for path in test_paths if path in HOLDOUT_NAMES)
    train = tuple(path for path in test_paths if path not in HOLDOUT_NAMES)
    if not train:
        raise ProgramError(
            f"{root}: no tests found (pytest files named test_*.py or *_test.py, outside a holdout folder);"
            " gi needs tests to tell a working variant from a broken one"
        )
    workload = _workload(root)
    protected = [Path(test) for test in test_paths]
    editable = tuple(
        path.as_posix()
        for path in files
        if not any(path == test or test in path.parents for test in protected)
        and path.name not in NOT_EDITABLE
        and not (path.parts and path.parts[0] in DOCUMENTATION)
        and not (workload and path.as_posix() == "workload.py")
    )
    scripts = tuple(sorted({file.split("/")[0] for file in editable if "/" in file and file.split("/")[0] in SCRIPTS}))
    if len(editable) > sum(file.split("/")[0] in scripts for file in editable):
        editable = tuple(file for file in editable if file.split("/")[0] not in scripts)
    else:  # nothing but scripts: they are the program
        scripts = ()
    if not editable:
        raise ProgramError(f"{root}: no Python file to improve (every .py file there is a test or tooling)")
    python = find_environment(root)
    return Project(
        root,
        editable,
        train,
        holdout,
        workload,
        None if python is None else python.relative_to(root).as_posix(),
        scripts,
    )


@dataclass(frozen=True)
class OriginalRun:
    """What the original's training tests did when `gi init` ran them."""

    tests: int
    #: The failing tests' ids (failed, error, timed out), sorted.
    failing: tuple[str, ...]
    #: Seconds the slowest test took, and the whole run (the tests that timed out left out of
    #: both: their time is the limit's, not theirs).
    slowest: float
    seconds: float
    #: The tests that ran past gi init's limit on one test (among `failing`), and that limit.
    timed_out: tuple[str, ...] = ()
    limit: float = CHECK_TEST_TIMEOUT

    @property
    def repair(self) -> bool:
        """Whether the original fails training tests, so the search is a repair."""
        return bool(self.failing)

    @property
    def test_timeout(self) -> int:
        """The per-test limit to write: the original's slowest test's time with room to spare."""
        return max(MIN_TEST_TIMEOUT, math.ceil(TEST_TIMEOUT_FACTOR * self.slowest + 1))

    @property
    def timeout(self) -> int:
        """The limit on a whole test run to write: at least what one test may take is of it
        (TEST_SHARE), so the two agree as `gi run` reads them."""
        return max(MIN_TIMEOUT, math.ceil(TIMEOUT_FACTOR * self.seconds), math.ceil(self.test_timeout / TEST_SHARE))


def run_original_tests(project: Project, config: Config) -> OriginalRun:
    """Run the project's training tests once on the original program, the way `gi run` runs
    them (gi's evaluator and sandbox, with `config`'s limits; the held-out tests are not in
    the copy); raise ProgramError, one line naming the problem, when they cannot run at all."""
    from gi.engine.evaluation import Evaluator
    from gi.engine.evaluation_settings import EvaluationSettings
    from gi.engine.project import pytest_setup
    from gi.engine.sandbox.limits import sandbox_limits
    from gi.fitness.pytest_diagnosis import cannot_run
    from gi.fitness.tests import NOT_FAILING
    from gi.model.patch import Patch, apply
    from gi.model.program import Program

    program = Program.load(project.root, list(project.files), protected=config.test_paths())
    setup, interpreter = pytest_setup(program, config.python_path())
    limits = sandbox_limits(config)
    settings = EvaluationSettings(
        train=tuple(config.tests.train),
        holdout=tuple(config.tests.holdout),
        timeout=CHECK_TIMEOUT,
        test_timeout=CHECK_TEST_TIMEOUT,
        limits=dataclasses.replace(limits, read_only=(*limits.read_only, *map(Path, interpreter.folders))),
        pytest=setup,
    )
    original = apply(program, Patch())
    run = Evaluator(program, settings).training_run(original)
    missing = None if run.forged or run.timed_out else _missing_module(run, project, setup.python)
    if missing is not None:
        raise ProgramError(f"{project.root}: {missing}")
    problem = cannot_run(run, project.train, setup.python, CHECK_TIMEOUT)
    if problem is not None:
        raise ProgramError(f"{project.root}: the original's training tests cannot run: {problem}")
    outcomes, durations, limit = dict(run.outcomes), dict(run.durations), CHECK_TEST_TIMEOUT
    seconds = run.seconds
    if hung := tuple(sorted(test for test, outcome in outcomes.items() if outcome == "timed_out")):
        alone = dataclasses.replace(settings, train=hung, test_timeout=RETRY_TEST_TIMEOUT)
        again = Evaluator(program, alone).training_run(original)
        if not again.forged:
            seconds += sum(again.durations.get(test, 0.0) - durations.get(test, 0.0) for test in hung)
            outcomes.update({test: again.outcomes.get(test, "timed_out") for test in hung})
            durations.update({test: again.durations.get(test, durations.get(test, 0.0)) for test in hung})
            limit = RETRY_TEST_TIMEOUT
    failing = tuple(sorted(test for test, outcome in outcomes.items() if outcome not in NOT_FAILING))
    timed_out = tuple(sorted(test for test, outcome in outcomes.items() if outcome == "timed_out"))
    finished = [took for test, took in durations.items() if test not in timed_out]
    seconds = max(0.0, seconds - sum(durations.get(test, 0.0) for test in timed_out))
    return OriginalRun(len(outcomes), failing, max(finished, default=0.0), seconds, timed_out, limit)


def _missing_module(run: TestRun, project: Project, python: str) -> str | None:
    """One line naming a module the training tests fail to import that is not the project's own
    (its tests then fail for the environment, not the code: no repair), with the fix; or None."""
    from gi.engine.project import own_modules
    from gi.fitness.pytest_diagnosis import declared_dependencies, install_hint, missing_modules

    missing = missing_modules(run, own_modules(project.root, project.files))
    if not missing:
        return None
    module, failing = next(iter(sorted(missing.items())))
    others = sorted(missing)[1:]
    also = f" (and {', '.join(others[:3])}{', ...' if len(others) > 3 else ''})" if others else ""
    shown = failing[0] + (", ..." if len(failing) > 1 else "")
    hint = install_hint(module, declared_dependencies(project.root), python)
    return (
        f"the training tests import {module}{also}, which the interpreter they run in ({python}) lacks:"
        f" {len(failing)} test(s) fail on it ({shown}); {hint}"
    )


def _toml_list(items: tuple[str, ...]) -> str:
    """A TOML array of strings (JSON's string escapes are TOML's basic strings')."""
    return "[" + ", ".join(json.dumps(item) for item in items) + "]"


def _name(root: Path) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", root.name).strip("-.")
    return name or "project"


def _comment(text: str) -> str:
    """Text for a TOML comment: on one line, without control characters."""
    return re.sub(r"[\x00-\x1f\x7f]+", " ", text)


def _comments(text: str) -> str:
    """`text` as TOML comment lines of at most COMMENT_WIDTH characters (a long test id alone
    on its line)."""
    lines = textwrap.wrap(_comment(text), COMMENT_WIDTH - 2, break_long_words=False, break_on_hyphens=False)
    return "\n".join(f"# {line}" for line in lines)


def _seconds(value: float) -> str:
    """A measured time for a comment: '0.93 s', '154 s', or 'under 0.01 s'."""
    if value < 0.01:
        return "under 0.01 s"
    return f"{value:.2g} s" if value < 10 else f"{value:.0f} s"


def _failing_words(original: OriginalRun) -> str:
    """'3 of its 6 training tests (tests/a.py::one, tests/a.py::two timed out, ...)'."""
    shown = ", ".join(
        _comment(test) + (f" timed out after {original.limit:g} s" if test in original.timed_out else "")
        for test in original.failing[:3]
    )
    more = ", ..." if len(original.failing) > 3 else ""
    return f"{len(original.failing)} of its {original.tests} training tests ({shown}{more})"


def starter_config(project: Project, original: OriginalRun | None = None) -> str:
    """The text of a commented starter config for a surveyed project, for a file in its folder:
    fitted to what its training tests did on the original (`original`; None: not run yet, the
    defaults of a project whose tests pass)."""
    name = _name(project.root)
    repair = original is not None and original.repair
    timed = project.workload is not None and not repair
    if repair:
        minimize = ["failed_tests", "size"]
    else:
        minimize = ["failed_tests", "runtime", "size"] if timed else ["failed_tests", "complexity", "size"]
    if project.holdout:
        holdout = (
            "# Never seen by the search: run on the front as it grows, to see what overfits.\n"
            f"holdout = {_toml_list(project.holdout)}"
        )
    elif original is not None and original.tests < 2:
        holdout = _comments(
            f"No held-out folder was found, and {original.tests} training test is too few to hold a share"
            ' out: a folder of tests the search never sees, e.g. holdout = ["holdout"], shows what overfits.'
        )
    else:
        holdout = (
            _comments(
                "No held-out folder was found, so a share of the training tests (a split seeded by"
                " experiment.seed) is held out: whole test files where there are five or more, else tests"
                " within the files, which every training copy leaves out of its files. No variant reads them"
                " while it is trained, and they judge the front as it grows, to see which patches change what"
                " no training test checks (summary.json says which split was used). A folder of held-out tests"
                ' instead: holdout = ["holdout"], and holdout_fraction = 0.'
            )
            + f"\nholdout_fraction = {HOLDOUT_FRACTION}"
        )
    fail_fast = (
        ""
        if repair
        else "\n"
        + _comments(
            "A variant failing any training test is infeasible, so its tests stop at the first failure:"
            " the tests that execute a line it edits run first (the original's coverage), then those that"
            " failed most recently. The verdicts are those of running every test."
        )
        + "\nfail_fast = true"
    )
    kind = "faster" if timed else "simpler"
    goal = "code that passes its failing tests" if repair else f"{kind} code that passes the same tests"
    if original is None:
        limits = "# Seconds for one whole test run.\ntimeout = 60"
    else:
        loops = " A repair's edits often make a loop run forever: such a test fails alone at its limit."
        limits = (
            _comments(f"Seconds for one whole test run ({_seconds(original.seconds)} when gi init ran them).")
            + f"\ntimeout = {original.timeout}\n"
            + _comments(
                f"Seconds one test may take (the slowest took {_seconds(original.slowest)} when gi init ran them);"
                " in a variant's run each test gets 10x its time in the original's + 0.5 s, at most this."
                + (loops if repair else "")
            )
            + f"\ntest_timeout = {original.test_timeout}"
        )
    python = (
        "\n"
        + _comments(
            "The project's own environment: its tests run in this interpreter (it needs pytest; gi brings its"
            " own plugin), so their dependencies need not be in gi's."
        )
        + f"\npython = {json.dumps(project.python)}"
        if project.python
        else ""
    )
    scripts = (
        "\n"
        + _comments(
            f"Left out: the scripts in {', '.join(folder + '/' for folder in project.scripts)}, beside the program"
            " (add their files here to edit them)."
        )
        if project.scripts
        else ""
    )
    if repair and original is not None:
        why = (
            f"gi init ran the training tests: the original fails {_failing_words(original)}. So this is a"
            " repair: fewest failing tests first, then the smallest patch, and no constraint, since no variant"
            ' passes every test yet ("train_pass" once the tests pass).'
        )
        objectives = f'{_comments(why)}\nminimize = {_toml_list(tuple(minimize))}\nconstraint = "none"\n'
    else:
        checked = "gi init ran the training tests: the original passes them all. " if original else ""
        why = f'{checked}Variants must pass every training test; "none" to repair code whose tests fail.'
        objectives = f'minimize = {_toml_list(tuple(minimize))}\n{_comments(why)}\nconstraint = "train_pass"\n'
    localisation = (
        """
# Edit where the failing tests go: sites are weighted by the suspiciousness of their line
# (run by failing tests more than by passing ones; D* unless mutators.suspiciousness says).
fault_localisation = true"""
        if repair
        else ""
    )
    if timed:
        workload = f"""
# The runtime objective times this no-argument function; a variant must return what the
# original does.
[workload]
call = "{project.workload}"
check_output = true
"""
    elif project.workload:
        workload = f"""
# Speed comes after the repair: once the tests pass, make "runtime" an objective and time the
# workload gi init found:
# [workload]
# call = "{project.workload}"
"""
    else:
        workload = """
# To make the code faster: a no-argument function that exercises it, and "runtime" in
# objectives.minimize.
# [workload]
# call = "workload:run"
"""
    return f"""\
# A starter config `gi init` wrote for {name}: `gi run {CONFIG_NAME}` runs it as it is.
# Goal: {goal}. Every key is explained in gi's config reference
# (docs/reference/config.md; `gi config --schema` lets an editor check this file); paths are
# relative to this file. gi never changes your files: variants run on copies, and `gi apply`
# applies a result only when you ask.

[experiment]
name = "{name}"
# One seed fixes every random choice of a run.
seed = 1
# Run folders go beside the project, never inside it.
output = "../{name}-gi-runs"

[program]
# The project folder, only ever read.
root = "."
# The files gi may edit (globs allowed); tests and conftest.py never are.{scripts}
files = {_toml_list(project.files)}{python}

[tests]
# Pytest paths used during the search.
train = {_toml_list(project.train)}
{holdout}
{limits}{fail_fast}

[objectives]
{objectives}
[search]
# `gi algorithms` lists the others.
algorithm = "nsga2"
# About population x (generations + 1) test runs in all; `gi run --population N --generations N`
# tries fewer without changing this file.
population = 20
generations = 10
# In a repair, gi first evaluates every one-edit program in order of suspiciousness, then
# breeds with operators drawn by their success (neighbourhood and operator_selection "auto").

[mutators]
# Or a list of names from `gi operators`.
operators = "all"{localisation}
{workload}"""


def _parse(text: str, path: Path) -> Config:
    """The config a starter text makes, validated as `gi run` validates a file."""
    from gi.config import parse_config

    return parse_config(tomllib.loads(text), path)


def write_starter_config(
    folder: Path, before_tests: Callable[[Config], None] | None = None
) -> tuple[Path, Project, OriginalRun]:
    """Survey a project, run its training tests once on the original (`before_tests` is told
    the config they run under first) and write the starter config fitted to them as gi.toml in
    it; refuse to overwrite one, before running anything."""
    project = survey(folder)
    path = project.root / CONFIG_NAME

    def refuse_an_existing_config() -> None:
        if path.exists() or path.is_symlink():
            raise ConfigError(f"{path}: a config is already there; gi init never overwrites one (remove it first)")

    refuse_an_existing_config()
    draft = _parse(starter_config(project), path)
    if before_tests is not None:
        before_tests(draft)
    original = run_original_tests(project, draft)
    text = starter_config(project, original)
    _parse(text, path)  # what gi run will read: a mistake here is gi's, caught before the file exists
    refuse_an_existing_config()
    with path.open("x", encoding="utf-8") as stream:
        stream.write(text)
    return path, project, original
