"""Real pytest runs of projects laid out as people lay them out: a src layout, an installed
copy of the original, pytest settings asking for a plugin the interpreter lacks."""

from __future__ import annotations

import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.engine.project import import_roots, module_names
from gi.engine.sandbox.bubblewrap import bubblewrap_available
from gi.engine.sandbox.limits import Limits
from gi.engine.sandbox.runner import Sandbox
from gi.engine.sandbox.workspace import workspace
from gi.engine.warm import WarmPool
from gi.fitness.faults import covered_test_run
from gi.fitness.pytest_diagnosis import why_not_run
from gi.fitness.tests import PytestSetup, run_tests
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from tests.layouts import strict_src_layout

CACHE = "def get(key):\n    return key * 2\n"
TESTS = "from shop.cache import get\n\n\ndef test_get():\n    assert get(2) == 4\n"


def src_layout(folder: Path) -> Path:
    (folder / "src" / "shop").mkdir(parents=True)
    (folder / "src" / "shop" / "__init__.py").write_text("")
    (folder / "src" / "shop" / "cache.py").write_text(CACHE)
    (folder / "tests").mkdir()
    (folder / "tests" / "test_cache.py").write_text(TESTS)
    return folder


def setup_for(root: Path, files: list[str], **extra: object) -> PytestSetup:
    roots = import_roots(root, files)
    return PytestSetup(import_roots=roots, modules=tuple(sorted(module_names(files, roots).items())), **extra)  # type: ignore[arg-type]


def test_a_src_layout_imports_the_variant_from_the_copy(tmp_path: Path) -> None:
    root = src_layout(tmp_path / "project")
    files = ["src/shop/__init__.py", "src/shop/cache.py"]
    setup = setup_for(root, files)
    assert setup.import_roots == ("src",)
    with workspace(root, {}) as space:
        plain = run_tests(["tests"], timeout=60, runner=Sandbox(Limits(), space))
    assert plain.collect_errors  # as the issue saw it: No module named 'shop'
    broken = {"src/shop/cache.py": "def get(key):\n    return key * 3\n"}
    with workspace(root, broken) as space:
        run = run_tests(["tests"], timeout=60, runner=Sandbox(Limits(), space), setup=setup)
    assert run.outcomes == {"tests/test_cache.py::test_get": "failed"}
    assert run.foreign_imports == {}


def test_an_installed_copy_of_the_original_is_named(tmp_path: Path) -> None:
    """A copy of the package elsewhere on the path (as a site-packages install would be) that the
    tests import instead of the variant: the run says where they imported it from."""
    root = src_layout(tmp_path / "project")
    installed = tmp_path / "site"
    (installed / "shop").mkdir(parents=True)
    (installed / "shop" / "__init__.py").write_text("")
    (installed / "shop" / "cache.py").write_text(CACHE)
    files = ["src/shop/__init__.py", "src/shop/cache.py"]
    # The copy's src/ left off the path: the installed copy is what the tests find.
    setup = PytestSetup(import_roots=(), modules=setup_for(root, files).modules, lent=(str(installed),))
    with workspace(root, {}) as space:
        run = run_tests(["tests"], timeout=60, runner=Sandbox(Limits(read_only=(installed,)), space), setup=setup)
    assert run.outcomes == {"tests/test_cache.py::test_get": "passed"}
    assert set(run.foreign_imports) == {"shop", "shop.cache"}
    assert run.foreign_imports["shop.cache"] == str(installed / "shop" / "cache.py")


def test_a_plugin_the_settings_ask_for_is_named_with_the_fix(tmp_path: Path) -> None:
    root = src_layout(tmp_path / "project")
    settings = '[tool.pytest.ini_options]\naddopts = "--cov=shop --cov-report=term-missing"\n'
    (root / "pyproject.toml").write_text(settings)
    files = ["src/shop/__init__.py", "src/shop/cache.py"]
    with workspace(root, {}) as space:
        run = run_tests(["tests"], timeout=60, runner=Sandbox(Limits(), space), setup=setup_for(root, files))
    assert not run.outcomes
    message = why_not_run(run, sys.executable)
    assert message.startswith("pyproject.toml's addopts (the project's pytest settings) use --cov=shop")
    assert f"install it there ({sys.executable} -m pip install pytest-cov)" in message


def test_coverage_keeps_what_ran_outside_any_test(tmp_path: Path) -> None:
    root = src_layout(tmp_path / "project")
    files = ["src/shop/__init__.py", "src/shop/cache.py"]
    with workspace(root, {}) as space:
        run, coverage = covered_test_run(
            ["tests"], files, timeout=60, runner=Sandbox(Limits(), space), setup=setup_for(root, files)
        )
    assert run.outcomes == {"tests/test_cache.py::test_get": "passed"}
    assert coverage["src/shop/cache.py"] == {1: {""}, 2: {"tests/test_cache.py::test_get"}}


def test_subtests_in_the_summary_line_are_not_a_forgery(tmp_path: Path) -> None:
    """pytest 9 counts subtests in its summary ('1 passed, 2 subtests passed'), as cachetools'
    suite has it: the report checks read that line as pytest's own."""
    root = src_layout(tmp_path / "project")
    (root / "tests" / "test_sub.py").write_text(
        "def test_each(subtests):\n    for value in (1, 2):\n        with subtests.test(value=value):\n"
        "            assert value\n"
    )
    files = ["src/shop/__init__.py", "src/shop/cache.py"]
    with workspace(root, {}) as space:
        run = run_tests(["tests"], timeout=60, runner=Sandbox(Limits(), space), setup=setup_for(root, files))
    assert not run.forged, run.forged
    assert run.outcomes["tests/test_sub.py::test_each"] == "passed"


WRITING_TESTS = """\
import os

from calc import add

HERE = os.path.dirname(__file__)


def test_writes_beside_itself():
    with open(os.path.join(HERE, "out.txt"), "w") as stream:
        stream.write("x")
    assert add(1, 2) == 3


def test_cannot_rewrite_a_test():
    try:
        with open(__file__, "a") as stream:
            stream.write("# changed")
    except OSError:
        return
    raise AssertionError("a test file was writable")
"""


def writing_project(folder: Path) -> Program:
    (folder / "tests").mkdir(parents=True)
    (folder / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (folder / "tests" / "test_calc.py").write_text(WRITING_TESTS)
    return Program.load(folder, ["calc.py"])


@pytest.mark.skipif(not bubblewrap_available(), reason="the copy's test files are held read-only by bubblewrap")
def test_tests_that_write_where_they_stand_pass_but_cannot_touch_the_verdict(tmp_path: Path) -> None:
    program = writing_project(tmp_path / "project")
    evaluator = Evaluator(program, EvaluationSettings(train=("tests",), timeout=60))
    run = evaluator.training_run(apply(program, Patch()))
    assert run.outcomes == {
        "tests/test_calc.py::test_writes_beside_itself": "passed",
        "tests/test_calc.py::test_cannot_rewrite_a_test": "passed",
    }, run.failure_report()
    assert not run.forged


def test_a_conftest_the_run_adds_makes_it_forged(tmp_path: Path) -> None:
    """What pytest loads by name (a conftest.py, compiled code) must be the project's own: a
    run that adds one to its writable copy is not trusted."""
    program = writing_project(tmp_path / "project")
    planting = (
        "import os\n\ndef add(a, b):\n    open(os.path.join('tests', 'sub', 'conftest.py'), 'w').close()\n"
        "    return a + b\n"
    )
    (tmp_path / "project" / "tests" / "sub").mkdir()
    evaluator = Evaluator(program, EvaluationSettings(train=("tests",), timeout=60))
    run = evaluator.training_run(Variant(program, Patch(), {"calc.py": planting}, ()))
    assert run.forged == "the test run added tests/sub/conftest.py to the project's copy"


def test_a_src_layout_that_turns_warnings_into_errors_runs_warm_as_cold(tmp_path: Path) -> None:
    """python-slugify's pytest settings (filterwarnings = error) in a src layout, with coverage
    settings of the project's own: the warm workers give the original and a variant the cold
    path's outcomes (they imported pytest's plugins without its assertion rewriter, and pytest's
    warning about it stopped every run), and coverage reads the lines each test ran."""
    assert list(entry_points(group="pytest11")), "needs a pytest plugin installed (gi's dev extras have two)"
    root = strict_src_layout(tmp_path / "strict")
    files = ["src/shop/__init__.py", "src/shop/prices.py"]
    setup = setup_for(root, files)
    program = Program.load(root, files, protected=["tests"])
    broken = {"src/shop/prices.py": (root / "src/shop/prices.py").read_text().replace("0.9", "0.8")}
    pool = WarmPool(program, Limits(), 1, preload=["pytest", "warnings"], setup=setup)
    try:
        warm = [pool.run_tests(sources, ["tests"], timeout=60, limits={}, default_limit=10) for sources in ({}, broken)]
    finally:
        pool.close()
    cold = []
    for sources in ({}, broken):
        with workspace(root, sources) as space:
            cold.append(run_tests(["tests"], timeout=60, runner=Sandbox(Limits(), space), setup=setup))
    assert [run.outcomes for run in warm] == [run.outcomes for run in cold]
    assert set(cold[0].outcomes.values()) == {"passed"} and len(cold[0].outcomes) == 5
    assert cold[1].outcomes["tests/test_prices.py::test_discount"] == "failed"
    assert not any(run.forged for run in warm + cold)
    with workspace(root, {}) as space:
        _, coverage = covered_test_run(["tests"], files, timeout=60, runner=Sandbox(Limits(), space), setup=setup)
    assert "tests/test_prices.py::test_discount" in coverage["src/shop/prices.py"][16]


HONEST_BYTECODE = """\
import os
import subprocess
import sys


def add(a, b):
    # A Python of an environment of its own (no PYTHONDONTWRITEBYTECODE) caches calc's bytecode.
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": os.getcwd()}
    subprocess.run([sys.executable, "-c", "import calc"], env=env, check=True)
    return a + b
"""

PLANTED_BYTECODE = """\
import importlib.util
import marshal
import os
import sys


def add(a, b):
    # The cache of calc with other code than calc's: a later import would run it.
    status = os.stat("calc.py")
    code = compile("def add(a, b):\\n    return 0\\n", os.path.abspath("calc.py"), "exec")
    stamp = [int(status.st_mtime), status.st_size]
    header = importlib.util.MAGIC_NUMBER + bytes(4) + b"".join(n.to_bytes(4, "little") for n in stamp)
    os.makedirs("__pycache__", exist_ok=True)
    with open(os.path.join("__pycache__", f"calc.{sys.implementation.cache_tag}.pyc"), "wb") as stream:
        stream.write(header + marshal.dumps(code))
    return a + b
"""


def test_the_bytecode_python_writes_of_a_source_is_no_plant_other_bytecode_is(tmp_path: Path) -> None:
    """A test that starts Python with an environment of its own leaves bytecode in the copy: the
    cache of the source beside it, which runs that source's code; the run is trusted. Bytecode of
    other code under the source's cache name is planted: the run is not."""
    program = writing_project(tmp_path / "project")
    evaluator = Evaluator(program, EvaluationSettings(train=("tests",), timeout=60))
    honest = evaluator.training_run(Variant(program, Patch(), {"calc.py": HONEST_BYTECODE}, ()))
    planted = evaluator.training_run(Variant(program, Patch(), {"calc.py": PLANTED_BYTECODE}, ()))
    assert set(honest.outcomes.values()) == {"passed"} and not honest.forged, honest.failure_report()
    cache = f"__pycache__/calc.{sys.implementation.cache_tag}.pyc"
    assert planted.forged == f"the test run added {cache} to the project's copy"
