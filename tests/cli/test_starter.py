"""`gi init`: on each example project, a starter config that validates as written, never makes
a test editable, puts run folders outside the project, fits a repair when the original fails
its tests, and runs as written to the end (shortened from the command line only)."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest

from gi.cli.main import main
from gi.cli.starter import OriginalRun, Project, starter_config, survey
from gi.config import load_config, parse_config
from gi.fitness.objectives import Constraint
from gi.fitness.outcomes import one_test_limit
from gi.model.program import Program
from tests.layouts import strict_src_layout

EXAMPLES = Path(__file__).resolve().parents[2] / "experiments" / "programs"
NAMES = sorted(path.name for path in EXAMPLES.iterdir() if path.is_dir())
#: The examples whose original fails training tests (their experiments/*.toml are repairs).
REPAIRS = {"bsearch", "windows"}
#: The budget the whole-run test gives each example: small, and smallest for those timed
#: with a workload (each passing variant is timed, each changed front member re-timed rigorously).
BUDGETS = {"dedupe": (2, 0), "batching": (2, 0)}
#: And for those, a rigorous re-measurement of 2 processes a program (the fewest) rather than 30:
#: whether a screening timing puts a variant on the front (and so the re-measurement runs) is up
#: to noise, and nothing here asserts on its verdict.
TIMED_SETTINGS = ["--set", "workload.rigorous_processes=2"]
#: Whose whole run repeats another default test's, left to `-m exhaustive`: README's Faster code
#: runs gi init then gi run on dedupe; the batching study searches batching; the quick start grading.
RUN_ELSEWHERE = {
    "dedupe": "tests/test_readme.py (Faster code)",
    "batching": "tests/studies/test_batching_speed.py",
    "grading": "tests/test_readme.py (Quick start), and test_init_writes_a_config_that_validates_unchanged",
}


def copy_example(tmp_path: Path, name: str) -> Path:
    destination = tmp_path / name
    shutil.copytree(EXAMPLES / name, destination, ignore=shutil.ignore_patterns("__pycache__"))
    return destination


def test_every_example_is_found() -> None:
    assert set(NAMES) >= {"batching", "bsearch", "dedupe", "grading", "windows"}


@pytest.mark.parametrize("name", NAMES)
def test_init_writes_a_config_that_validates_unchanged(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    project = copy_example(tmp_path, name)
    assert main(["init", str(project)]) == 0
    assert f"wrote {project / 'gi.toml'}" in capsys.readouterr().out
    config = load_config(project / "gi.toml")
    assert config.program_root == project.resolve()
    assert config.tests.train == ["tests"] and config.tests.holdout == ["holdout"]
    tests = config.tests.train + config.tests.holdout
    program = Program.load(config.program_root, config.program.files, protected=tests)
    assert program.files == (f"{name}.py",), "tests and the workload are never editable"
    assert not config.run_folder.resolve().is_relative_to(project.resolve()), "the run folder is outside the copy"
    repair = name in REPAIRS
    assert (config.objectives.constraint is Constraint.NONE) == repair, "a repair has no constraint"
    assert (config.mutators.fault_localisation is True) == repair
    assert (config.objectives.names() == ["failed_tests", "size"]) == repair
    assert config.tests.test_timeout >= 2, "a per-test limit, from the original's slowest test"
    text = (project / "gi.toml").read_text()
    assert ("So this is a repair" in text) == repair, "the config says why it is a repair"
    assert max(len(line) for line in text.splitlines()) <= 100
    timed = (project / "workload.py").exists() and not repair
    assert ("runtime" in config.objectives.names()) == timed
    assert (config.workload is not None) == timed


def test_init_never_overwrites_a_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = copy_example(tmp_path, "grading")
    (project / "gi.toml").write_text("# mine\n")
    assert main(["init", str(project)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gi: error: ") and "never overwrites" in err[0]
    assert (project / "gi.toml").read_text() == "# mine\n"


def test_init_without_tests_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "lonely").mkdir()
    (tmp_path / "lonely" / "lonely.py").write_text("X = 1\n")
    assert main(["init", str(tmp_path / "lonely")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "no tests found" in line
    assert not (tmp_path / "lonely" / "gi.toml").exists()


def test_tests_inside_a_package_and_beside_the_code(tmp_path: Path) -> None:
    project = tmp_path / "deep"
    (project / "src" / "pkg" / "tests").mkdir(parents=True)
    (project / "src" / "pkg" / "core.py").write_text("def one():\n    return 1\n")
    (project / "src" / "pkg" / "tests" / "helpers.py").write_text("ONE = 1\n")
    (project / "src" / "pkg" / "tests" / "test_core.py").write_text("def test_one():\n    assert True\n")
    (project / "src" / "pkg" / "util_test.py").write_text("def test_util():\n    assert True\n")
    assert main(["init", str(project)]) == 0
    config = load_config(project / "gi.toml")
    assert config.program.files == ["src/pkg/core.py"]
    assert config.tests.train == ["src/pkg/tests", "src/pkg/util_test.py"]


def test_top_level_test_files_and_nested_packages(tmp_path: Path) -> None:
    project = tmp_path / "pkg"
    (project / "src" / "pkg").mkdir(parents=True)
    (project / "src" / "pkg" / "core.py").write_text("def one():\n    return 1\n")
    (project / "src" / "pkg" / "__init__.py").write_text("")
    (project / "conftest.py").write_text("import sys\nsys.path.insert(0, 'src')\n")
    (project / "setup.py").write_text("")
    (project / "test_core.py").write_text("from pkg.core import one\n\n\ndef test_one():\n    assert one() == 1\n")
    assert main(["init", str(project)]) == 0
    config = load_config(project / "gi.toml")
    assert config.program.files == ["src/pkg/__init__.py", "src/pkg/core.py"]
    assert config.tests.train == ["test_core.py"] and config.tests.holdout == []


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.exhaustive) if n in RUN_ELSEWHERE else n for n in NAMES]
)
def test_every_starter_config_runs_as_written(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`gi run gi.toml` on the file gi init wrote, untouched: shortened from the command line only."""
    project = copy_example(tmp_path, name)
    assert main(["init", str(project)]) == 0
    config = project / "gi.toml"
    written = config.read_bytes()
    population, generations = BUDGETS.get(name, (4, 1))
    argv = ["run", str(config), "--quiet", "--population", str(population), "--generations", str(generations)]
    if name in BUDGETS:
        argv += TIMED_SETTINGS
    assert main(argv) == 0, capsys.readouterr().err
    assert config.read_bytes() == written
    run = tmp_path / f"{name}-gi-runs" / f"{name}-seed1"
    summary = json.loads((run / "summary.json").read_text())
    assert [entry["generation"] for entry in summary["generations"]] == list(range(generations + 1))
    baseline = summary["baseline"]
    assert (baseline["training"]["failed"] > 0) == (name in REPAIRS)
    assert baseline["holdout"]["passed"] + baseline["holdout"]["failed"] > 0
    assert summary["front"], "a run to the end has a front"
    assert (run / "report.html").is_file()


def write_broken(folder: Path, test: str) -> Path:
    (folder / "tests").mkdir(parents=True)
    (folder / "code.py").write_text("def one():\n    return 1\n")
    (folder / "tests" / "test_code.py").write_text(test)
    return folder


@pytest.mark.parametrize(
    ("test", "problem"),
    [
        (
            "import not_installed_anywhere\n\n\ndef test_one():\n    assert True\n",
            "the training tests import not_installed_anywhere, which the interpreter they run in",
        ),
        ("import sys\n\nsys.exit(4)\n", "pytest could not run the training tests"),
        ("def helper():\n    return 1\n", "pytest collects no test in tests"),
    ],
    ids=["does-not-import", "pytest-stops", "no-test"],
)
def test_tests_that_cannot_run_are_one_line_and_no_config(
    tmp_path: Path, test: str, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    project = write_broken(tmp_path / "broken", test)
    assert main(["init", str(project)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("gi: error: ")]
    assert len(err) == 1, err
    assert f"gi: error: {project}: " in err[0]
    assert problem in err[0], err[0]
    assert not (project / "gi.toml").exists()


LAZY_IMPORT = """\
def one():
    return 1


def transliterate(text):
    from ascii_tables_gi_lacks import table

    return table(text)
"""


def test_init_names_a_module_the_tests_lack_and_writes_no_repair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The code imports a dependency when called (python-slugify's text_unidecode): without it in
    the environment, tests fail. That is no repair: gi init names the module and its fix."""
    project = write_broken(
        tmp_path / "lazy",
        "from code import one, transliterate\n\n\ndef test_one():\n    assert one() == 1\n\n\n"
        "def test_plain():\n    assert transliterate('a') == 'a'\n\n\n"
        "def test_accents():\n    assert transliterate('é') == 'e'\n",
    )
    (project / "code.py").write_text(LAZY_IMPORT)
    (project / "pyproject.toml").write_text('[project]\nname = "lazy"\ndependencies = ["Ascii-Tables-Gi-Lacks>=1.3"]\n')
    assert main(["init", str(project)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("gi: error: ")]
    assert len(err) == 1, err
    assert "the training tests import ascii_tables_gi_lacks, which the interpreter they run in" in err[0]
    assert "2 test(s) fail on it (tests/test_code.py::test_accents, ...)" in err[0]
    assert "-m pip install Ascii-Tables-Gi-Lacks)" in err[0] and "program.python" in err[0], err[0]
    assert not (project / "gi.toml").exists(), "no repair config"


def test_init_leaves_scripts_beside_the_program_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = write_broken(tmp_path / "scripts", "from code import one\n\n\ndef test_one():\n    assert one() == 1\n")
    for folder in ("tools", "scripts", "benchmarks", "examples"):
        (project / folder).mkdir()
        (project / folder / "check.py").write_text("print('a script')\n")
    assert main(["init", str(project)]) == 0
    said = capsys.readouterr().out
    assert "left out: benchmarks/, examples/, scripts/, tools/ (scripts beside the program" in said, said
    assert load_config(project / "gi.toml").program.files == ["code.py"]
    assert "# Left out: the scripts in benchmarks/, examples/, scripts/, tools/" in (project / "gi.toml").read_text()


def test_a_project_of_scripts_alone_keeps_them_editable(tmp_path: Path) -> None:
    project = tmp_path / "only"
    (project / "scripts").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "scripts" / "tally.py").write_text("def tally(n):\n    return n + 1\n")
    (project / "tests" / "test_tally.py").write_text("def test_tally():\n    assert True\n")
    assert survey(project).files == ("scripts/tally.py",)


def test_init_holds_out_a_share_and_stops_at_the_first_failure(tmp_path: Path) -> None:
    """A project without a held-out folder: 20% of the training tests are held out (seeded), and
    an improvement run stops each variant's tests at the first failure."""
    project = tmp_path / "shop"
    (project / "tests").mkdir(parents=True)
    (project / "shop.py").write_text("def price(n):\n    return 2 * n\n")
    tests = "".join(
        f"def test_{n}():\n    from shop import price\n    assert price({n}) == {2 * n}\n\n\n" for n in range(5)
    )
    (project / "tests" / "test_shop.py").write_text(tests)
    (project / "docs").mkdir()
    (project / "docs" / "conf.py").write_text("project = 'shop'\n")
    assert main(["init", str(project)]) == 0
    config = load_config(project / "gi.toml")
    assert config.tests.holdout_fraction == 0.2 and not config.tests.holdout
    assert config.tests.fail_fast
    assert config.program.files == ["shop.py"], "docs/conf.py is documentation, not the program"
    assert config.program.python is None


def test_init_calls_a_hanging_test_timed_out_and_writes_limits_that_agree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gi.cli import starter

    monkeypatch.setattr(starter, "CHECK_TEST_TIMEOUT", 1.0)
    monkeypatch.setattr(starter, "RETRY_TEST_TIMEOUT", 2.0)
    project = write_broken(
        tmp_path / "hangs",
        "import time\n\nfrom code import one\n\n\ndef test_one():\n    assert one() == 1\n\n\n"
        "def test_two():\n    assert one() + 1 == 2\n\n\ndef test_hangs():\n    time.sleep(60)\n",
    )
    assert main(["init", str(project)]) == 0
    said = capsys.readouterr().out
    assert "the original fails 1 of 3 training tests, 1 of them timed out after 2 s" in said, said
    config = load_config(project / "gi.toml")
    assert config.tests.test_timeout <= config.tests.timeout
    assert config.tests.test_timeout < 10, "the hanging test's time is the limit's, not its own"
    assert "tests/test_code.py::test_hangs timed out after 2 s" in (project / "gi.toml").read_text()


def test_init_names_a_test_its_time_limit_cannot_interrupt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test that spends its time in C code never returns to Python for its time limit to
    raise: it is stopped at its hard deadline, and gi init names it rather than waiting for the
    whole run's limit."""
    from gi.cli import starter

    monkeypatch.setattr(starter, "CHECK_TEST_TIMEOUT", 1.0)
    project = write_broken(
        tmp_path / "c", "from code import one\n\n\ndef test_in_c():\n    assert sum(range(10**12)) == one()\n"
    )
    assert main(["init", str(project)]) == 2
    err = capsys.readouterr().err
    assert "tests/test_code.py::test_in_c ran past its time limit of 1 s in code the limit could not interrupt" in err
    assert not (project / "gi.toml").exists()


def test_init_writes_limits_gi_run_takes_as_they_are(tmp_path: Path) -> None:
    """more-itertools' figures (its slowest test 22 s, the run 45.7 s) once gave test_timeout = 441
    beside timeout = 457, which gi run warned about: one test may take at most TEST_SHARE of a
    whole run."""
    (tmp_path / "m.py").write_text("x = 1\n")
    (tmp_path / "tests").mkdir()
    project = Project(tmp_path, ("m.py",), ("tests",), (), None)
    for slowest, seconds in ((22.0, 45.7), (0.01, 0.5), (3.0, 4.0), (100.0, 1000.0)):
        text = starter_config(project, OriginalRun(tests=612, failing=(), slowest=slowest, seconds=seconds))
        tests = parse_config(tomllib.loads(text), tmp_path / "gi.toml").tests
        assert tests.test_timeout > 20 * slowest, "what the slowest test took, with room to spare"
        assert one_test_limit(tests.test_timeout, tests.timeout) == tests.test_timeout, (slowest, seconds)


def test_init_runs_a_test_past_its_limit_again_alone_to_tell_slow_from_hanging(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test past gi init's limit on one test (more-itertools' test_primes on a loaded machine)
    runs again alone with a longer one: slow, it passes, and the limits written fit its time."""
    from gi.cli import starter

    monkeypatch.setattr(starter, "CHECK_TEST_TIMEOUT", 1.0)
    monkeypatch.setattr(starter, "RETRY_TEST_TIMEOUT", 30.0)
    project = write_broken(
        tmp_path / "slow",
        "import time\n\nfrom code import one\n\n\ndef test_one():\n    assert one() == 1\n\n\n"
        "def test_slow():\n    time.sleep(2)\n    assert one() == 1\n",
    )
    assert main(["init", str(project)]) == 0
    assert "the original passes all 2 training tests" in capsys.readouterr().out
    config = load_config(project / "gi.toml")
    assert config.objectives.constraint is Constraint.TRAIN_PASS
    assert config.tests.test_timeout >= 20 * 2, "its time, with room to spare"


def test_a_projects_environment_is_the_one_the_tests_run_in(tmp_path: Path) -> None:
    """A .venv in the project: gi init names it, and the tests run there (its pytest, gi's
    plugin brought in). Here the environment is one that sees gi's own packages (no network)."""
    import subprocess
    import sys

    project = write_broken(tmp_path / "env", "from code import one\n\n\ndef test_one():\n    assert one() == 1\n")
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(project / ".venv")],
                   check=True)  # fmt: skip
    site = next(path for path in sys.path if path.endswith("site-packages"))
    python = str(project / ".venv" / "bin" / "python")
    where = "import sysconfig; print(sysconfig.get_path('purelib'))"
    purelib = subprocess.run([python, "-c", where], capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "gi-test.pth").write_text(site + "\n")  # gi's site-packages: its pytest
    assert main(["init", str(project)]) == 0
    config = load_config(project / "gi.toml")
    assert config.program.python == ".venv/bin/python"
    assert config.program.files == ["code.py"], "nothing of the environment is editable"


@pytest.mark.slow
def test_a_src_layout_that_turns_warnings_into_errors_runs_warm_from_init_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """gi init, then gi run as written, on a src layout with filterwarnings = error: the run keeps
    the warm engine (no fallback), reads coverage, splits held-out tests, and its front has the
    verdicts of the same run on the cold engine."""
    project = strict_src_layout(tmp_path / "strict")
    assert main(["init", str(project)]) == 0
    fronts = {}
    for engine in ("warm", "cold"):
        argv = ["run", str(project / "gi.toml"), "--quiet", "--population", "6", "--generations", "1"]
        if engine == "cold":
            argv += ["--set", "evaluation.engine=cold", "--set", "experiment.output=../cold-runs"]
        assert main(argv) == 0, capsys.readouterr().err
        folder = tmp_path / ("strict-gi-runs" if engine == "warm" else "cold-runs") / "strict-seed1"
        summary = json.loads((folder / "summary.json").read_text())
        assert summary["engine"]["training_tests"] == engine, summary["engine"]
        assert not [warning for warning in summary["warnings"] if "engine" in warning or "coverage" in warning]
        assert len(summary["holdout_split"]["holdout"]) == 1 and summary["sites"] is not None
        fronts[engine] = sorted((member["id"], json.dumps(member["objectives"])) for member in summary["front"])
    assert fronts["warm"] == fronts["cold"]
