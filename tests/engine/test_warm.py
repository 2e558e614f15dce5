"""The warm engine's prepared pytest start-up, and where it must not be used."""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.engine.held_out import HeldOut
from gi.engine.sandbox.limits import Limits
from gi.engine.sandbox.runner import Sandbox
from gi.engine.sandbox.workspace import workspace
from gi.engine.warm import CLEANING_NAME, SPARE_NAME, WORKER_NAME, WarmError, WarmPool, third_party_imports
from gi.fitness.sandboxed.warm_imports import CLEANING_FILE, SPARE_FILE, WORKER_FILE, CompiledOriginals
from gi.fitness.sandboxed.warm_worker import REPORT_PLUGIN, without_report_plugin
from gi.fitness.tests import PLUGIN_MODULE, Checks, PytestSetup, run_tests
from gi.model.patch import Patch, Variant
from gi.model.program import Program

ORIGINAL = "def answer():\n    return 1\n"
VARIANT = "def answer():\n    return 2\n"

CONFTEST = """\
import pytest

from calc import answer


@pytest.fixture
def answered():
    return answer()
"""

TESTS = """\
from calc import answer


def test_answer():
    assert answer() == 2


def test_through_the_conftest(answered):
    assert answered == 2
"""


@contextmanager
def warm_pool(program: Program, **options: Any) -> Iterator[WarmPool]:
    """A pool of one warm worker for `program`, closed after."""
    pool = WarmPool(program, Limits(), 1, **options)
    try:
        yield pool
    finally:
        pool.close()


def test_the_worker_loads_the_plugin_gi_names() -> None:
    assert REPORT_PLUGIN == PLUGIN_MODULE
    assert WORKER_FILE == WORKER_NAME, "the worker's imports leave the worker's file out of the tools they cache"
    assert CLEANING_FILE == CLEANING_NAME, "and its cleaning's"
    assert SPARE_FILE == SPARE_NAME, "and its spares'"
    argv = ["-p", PLUGIN_MODULE, "-p", "no:cacheprovider", "-q", "tests"]
    assert without_report_plugin(argv) == ["-p", "no:cacheprovider", "-q", "tests"]


def outcomes(tmp_path: Path, conftest: bool) -> tuple[list[dict[str, str]], int]:
    """The tests on the original, the variant, then the original again, in one warm worker;
    and how many of those runs started from a prepared pytest configuration."""
    project = tmp_path / ("with" if conftest else "without")
    (project / "tests").mkdir(parents=True)
    (project / "calc.py").write_text(ORIGINAL)
    (project / "tests" / "test_calc.py").write_text(TESTS)
    if conftest:
        (project / "tests" / "conftest.py").write_text(CONFTEST)
    else:
        (project / "tests" / "test_calc.py").write_text(
            TESTS.replace("(answered)", "()").replace("answered ==", "answer() ==")
        )
    with warm_pool(Program.load(project, ["calc.py"])) as pool:
        runs = [
            pool.run_tests({"calc.py": source}, ["tests"], timeout=60, limits={}, default_limit=0)
            for source in (ORIGINAL, VARIANT, ORIGINAL)
        ]
    assert pool.started == 1, "one worker served all three"
    assert not any(run.forged for run in runs)
    return [run.outcomes for run in runs], pool.prepared_runs


def test_each_child_sees_its_own_variant_with_a_prepared_start_up(tmp_path: Path) -> None:
    (first, variant, again), prepared = outcomes(tmp_path, conftest=False)
    assert prepared == 3, "every child started from the prepared configuration"
    assert set(first.values()) == {"failed"} and set(variant.values()) == {"passed"} and again == first


def test_a_prepared_sessions_child_with_the_audit_in_its_plan_freezes_again(tmp_path: Path) -> None:
    """The worker froze pytest's machinery for its prepared session without the audit's profiler,
    which a child whose plan asks for the audit sets: that child freezes again at its session's
    start (its own profiler would otherwise read as tampering) and records the types the variant
    returned; the children before and after it, without the audit, record none."""
    project = tmp_path / "audited"
    (project / "tests").mkdir(parents=True)
    (project / "calc.py").write_text(ORIGINAL)
    (project / "tests" / "test_calc.py").write_text(TESTS.split("\n\ndef test_through", maxsplit=1)[0] + "\n")
    with warm_pool(Program.load(project, ["calc.py"])) as pool:
        plans = [Checks(editable=("calc.py",), audit=audit) for audit in (False, True, False)]
        runs = [
            pool.run_tests({"calc.py": VARIANT}, ["tests"], timeout=60, limits={}, default_limit=0, checks=checks)
            for checks in plans
        ]
    assert pool.prepared_runs == 3
    assert [run.forged for run in runs] == ["", "", ""]
    assert [run.outcomes for run in runs] == [{"tests/test_calc.py::test_answer": "passed"}] * 3
    assert [run.returned for run in runs] == [{}, {"builtins.int": ""}, {}]


def test_threads_asking_a_pool_of_one_worker_at_once_share_it(tmp_path: Path) -> None:
    """An early confirmation runs beside the generation's evaluations: with `workers = 1` it
    waits for the one worker, never starts a second."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "calc.py").write_text(ORIGINAL)
    (tmp_path / "tests" / "test_calc.py").write_text(TESTS.split("\n\n\ndef test_through", maxsplit=1)[0] + "\n")
    with warm_pool(Program.load(tmp_path, ["calc.py"])) as pool, ThreadPoolExecutor(max_workers=3) as threads:
        sources = [ORIGINAL, VARIANT] * 3
        runs = list(threads.map(lambda source: pool.run_tests({"calc.py": source}, ["tests"], timeout=60, limits={},
                                                               default_limit=0), sources))  # fmt: skip
    assert pool.started == 1, "the threads waited for the one worker"
    assert [run.outcomes["tests/test_calc.py::test_answer"] for run in runs] == ["failed", "passed"] * 3


def test_a_thread_waiting_for_the_one_worker_as_the_pool_closes_stops_waiting(tmp_path: Path) -> None:
    """A run that ends (or is interrupted) while an early confirmation waits: the waiting thread
    gets an error, and no worker starts after the pool closed."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "calc.py").write_text(ORIGINAL)
    (tmp_path / "tests" / "test_calc.py").write_text(
        "import time\n\nfrom calc import answer\n\n\ndef test_answer():\n    time.sleep(3)\n    assert answer() == 2\n"
    )
    pool = WarmPool(Program.load(tmp_path, ["calc.py"]), Limits(), 1)
    run = functools.partial(pool.run_tests, {"calc.py": VARIANT}, ["tests"], timeout=60, limits={}, default_limit=0)
    with ThreadPoolExecutor(max_workers=2) as threads:
        first = threads.submit(run)
        while pool.started == 0 and not first.done():
            time.sleep(0.01)
        second = threads.submit(run)
        time.sleep(0.5)  # the first holds the one worker; the second waits for it
        assert not second.done()
        pool.close()
        with pytest.raises(WarmError, match="closed"):
            second.result(timeout=10)
        first.result(timeout=30)
    assert pool.started == 1


def test_a_conftest_importing_the_editable_code_sees_each_variant(tmp_path: Path) -> None:
    """A conftest.py runs project code as pytest starts: the worker must not prepare pytest
    (the conftest would keep the original's function for every child)."""
    (first, variant, again), prepared = outcomes(tmp_path, conftest=True)
    assert prepared == 0
    assert (
        first
        == again
        == {
            "tests/test_calc.py::test_answer": "failed",
            "tests/test_calc.py::test_through_the_conftest": "failed",
        }
    )
    assert set(variant.values()) == {"passed"}


SPAWNING_TESTS = """\
import multiprocessing
import subprocess
import sys


def test_in_a_subprocess():
    done = subprocess.run([sys.executable, "-c", "import calc; print(calc.answer())"], capture_output=True, text=True)
    assert done.stdout.strip() == "2", done.stderr


def _answer(queue):
    import calc

    queue.put(calc.answer())


def test_in_a_spawned_process():
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_answer, args=(queue,))
    process.start()
    process.join(60)
    assert queue.get(timeout=5) == 2
"""


def test_python_processes_the_tests_start_import_the_variant_too(tmp_path: Path) -> None:
    """A warm child serves the variant from memory; a test that starts another Python (a
    subprocess, a multiprocessing spawn) must see the variant there as well, as on a cold copy."""
    project = tmp_path / "spawning"
    (project / "tests").mkdir(parents=True)
    (project / "calc.py").write_text(ORIGINAL)
    (project / "tests" / "test_calc.py").write_text(SPAWNING_TESTS)
    with warm_pool(Program.load(project, ["calc.py"])) as pool:
        runs = [
            pool.run_tests({"calc.py": source}, ["tests"], timeout=120, limits={}, default_limit=0)
            for source in (ORIGINAL, VARIANT, ORIGINAL)
        ]
    first, variant, again = (run.outcomes for run in runs)
    assert set(first.values()) == {"failed"} and first == again
    assert set(variant.values()) == {"passed"}, runs[1].failure_report()


def test_a_childs_asserts_are_rewritten_from_the_workers_cache(tmp_path: Path) -> None:
    """The worker rewrites the test modules' asserts once; each child's failing assert still
    says what pytest's rewriting says (the values, `where` each came from)."""
    project = tmp_path / "rewritten"
    (project / "tests").mkdir(parents=True)
    (project / "calc.py").write_text(ORIGINAL)
    (project / "tests" / "test_calc.py").write_text(TESTS.split("\n\ndef test_through", maxsplit=1)[0] + "\n")
    with warm_pool(Program.load(project, ["calc.py"])) as pool:
        runs = [
            pool.run_tests({"calc.py": ORIGINAL}, ["tests"], timeout=60, limits={}, default_limit=0) for _ in range(2)
        ]
    for run in runs:
        assert run.outcomes == {"tests/test_calc.py::test_answer": "failed"}
        assert "where 1 = answer()" in run.failures["tests/test_calc.py::test_answer"], run.failures


FROM_THE_WORKER = """\
import sys

import calc


def test_calc_runs_the_code_the_worker_compiled():
    with open(calc.__file__, "rb") as stream:
        cached = sys.modules["gi_warm_imports"].ORIGINALS.code(calc.__file__, stream.read())
    assert cached is not None
    assert any(const is calc.answer.__code__ for const in cached.co_consts)
"""


def test_a_child_runs_the_unchanged_modules_code_compiled_once_in_the_worker(tmp_path: Path) -> None:
    """The original's editable modules are compiled once, in the worker; a child importing one
    its variant leaves as it is runs that code; a variant's own text is compiled in the child."""
    project = tmp_path / "compiled"
    (project / "tests").mkdir(parents=True)
    (project / "calc.py").write_text(ORIGINAL)
    (project / "tests" / "test_calc.py").write_text(FROM_THE_WORKER)
    with warm_pool(Program.load(project, ["calc.py"])) as pool:
        runs = [
            pool.run_tests({"calc.py": source}, ["tests"], timeout=60, limits={}, default_limit=0)
            for source in (ORIGINAL, VARIANT)
        ]
    test = "tests/test_calc.py::test_calc_runs_the_code_the_worker_compiled"
    assert [run.outcomes for run in runs] == [{test: "passed"}, {test: "failed"}], runs[1].failures


def test_a_module_whose_compilation_warns_is_compiled_in_each_child(tmp_path: Path) -> None:
    """Its warning is the child's, under the project's warning filters, as in a cold run."""
    (tmp_path / "clean.py").write_text("x = 1\n")
    (tmp_path / "warns.py").write_text("x = 1 is 1\n")
    originals = CompiledOriginals()
    originals.note([str(tmp_path / "clean.py"), str(tmp_path / "warns.py"), str(tmp_path / "missing.py")])
    assert originals.code(str(tmp_path / "clean.py"), b"x = 1\n") is not None
    assert originals.code(str(tmp_path / "clean.py"), b"x = 2\n") is None
    assert originals.code(str(tmp_path / "warns.py"), b"x = 1 is 1\n") is None
    assert originals.code(str(tmp_path / "missing.py"), b"") is None


def test_a_src_layouts_package_is_the_projects_own_and_never_stays_preloaded(tmp_path: Path) -> None:
    """A child imports its variant of the package, even where the package was named for
    preloading: a module of the project's own left imported in the worker would run in place of
    every child's variant."""
    project = tmp_path / "layout"
    (project / "src" / "calc").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "src" / "calc" / "__init__.py").write_text(ORIGINAL)
    (project / "tests" / "test_calc.py").write_text(
        "from calc import answer\n\n\ndef test_answer():\n    assert answer() == 2\n"
    )
    program = Program.load(project, ["src/calc/__init__.py"], protected=["tests"])
    assert third_party_imports(program, ["import calc\nimport json\n"], ["src"]) == ["json"]
    with warm_pool(program, preload=["calc"], setup=PytestSetup(import_roots=("src",))) as pool:
        runs = [
            pool.run_tests({"src/calc/__init__.py": source}, ["tests"], timeout=60, limits={}, default_limit=0)
            for source in (ORIGINAL, VARIANT)
        ]
    assert [run.outcomes for run in runs] == [{"tests/test_calc.py::test_answer": o} for o in ("failed", "passed")]


FAILING_VARIANTS = (
    "def answer():\n    return helper() + 1\n\n\ndef helper():\n    raise ValueError('the first variant')\n",
    "def answer():\n    total = 0\n    return helper(total)\n\n\ndef helper(total):\n    return total / 0\n",
    "def answer():\n    return 3\n",  # fails in the test module, whose tree the worker parsed
)


def test_a_failing_variants_report_is_the_cold_runs_with_the_workers_lookups_filled(tmp_path: Path) -> None:
    """The worker fills once what pytest reads to show a failure (the map of module files, the
    test modules' lines and trees, the installed frames' paths) and imports gi's plugin for every
    child: each child's failure report still shows its own variant's lines, word for word as a
    cold run of that variant does."""
    project = tmp_path / "failing"
    (project / "tests").mkdir(parents=True)
    (project / "calc.py").write_text(ORIGINAL)
    (project / "tests" / "test_calc.py").write_text(TESTS.split("\n\ndef test_through", maxsplit=1)[0] + "\n")
    test = "tests/test_calc.py::test_answer"
    cold = []
    for source in FAILING_VARIANTS:
        with workspace(project, {"calc.py": source}) as space:
            cold.append(run_tests(["tests"], timeout=60, runner=Sandbox(Limits(), space)))
    with warm_pool(Program.load(project, ["calc.py"])) as pool:
        warm = [
            pool.run_tests({"calc.py": source}, ["tests"], timeout=60, limits={}, default_limit=0)
            for source in FAILING_VARIANTS
        ]
    assert pool.prepared_runs == 3
    assert "raise ValueError('the first variant')" in warm[0].failures[test]
    assert "return total / 0" in warm[1].failures[test] and "the first variant" not in warm[1].failures[test]
    assert ">       assert answer() == 2" in warm[2].failures[test] and "total" not in warm[2].failures[test]
    for cold_run, warm_run in zip(cold, warm, strict=True):
        assert not warm_run.forged and warm_run.outcomes == cold_run.outcomes == {test: "failed"}
        assert warm_run.failures == cold_run.failures


LOOKS_ITSELF_UP = """\
import inspect
import sys

import calc


def test_answer():
    assert calc.answer() == 2


def test_the_modules_of_its_frames():
    assert inspect.getmodule(inspect.currentframe()) is sys.modules[__name__]
    assert inspect.getmodule(calc.answer.__code__) is calc
"""


def test_a_test_looking_up_modules_by_file_after_a_failure_finds_its_own(tmp_path: Path) -> None:
    """gi's plugin records the collected test modules and the project's modules in `inspect`'s
    map from files to modules (a failure's report looks its frames' modules up there): a test
    that looks a module up by one of its frames or functions' code finds what it imported, cold
    and warm, after another test failed."""
    project = tmp_path / "lookups"
    (project / "tests").mkdir(parents=True)
    (project / "calc.py").write_text(ORIGINAL)
    (project / "tests" / "test_calc.py").write_text(LOOKS_ITSELF_UP)
    expected = {
        "tests/test_calc.py::test_answer": "failed",
        "tests/test_calc.py::test_the_modules_of_its_frames": "passed",
    }
    with workspace(project, {}) as space:
        cold = run_tests(["tests"], timeout=60, runner=Sandbox(Limits(), space))
    with warm_pool(Program.load(project, ["calc.py"])) as pool:
        warm = pool.run_tests({"calc.py": FAILING_VARIANTS[0].replace("helper() + 1", "1")}, ["tests"], timeout=60,
                              limits={}, default_limit=0)  # fmt: skip
    assert cold.outcomes == warm.outcomes == expected, (cold.failures, warm.failures)


IN_C_CODE = """\
def test_quick():
    assert True


def test_in_c_code():
    sum(range(10**12))


def test_after():
    assert True
"""


def test_the_worker_stops_a_child_at_the_hard_deadline_of_a_test_the_alarm_cannot_interrupt(tmp_path: Path) -> None:
    """A warm child forks no watchdog: the worker watches its deadlines. C code never returns to
    Python for the alarm to raise, so at the test's hard deadline the worker stops the child,
    signs the records that say so after the child's own, and kills it; the next child runs."""
    project = tmp_path / "c-code"
    (project / "tests").mkdir(parents=True)
    (project / "calc.py").write_text(ORIGINAL)
    (project / "tests" / "test_c.py").write_text(IN_C_CODE)
    with warm_pool(Program.load(project, ["calc.py"])) as pool:
        stuck = pool.run_tests({}, ["tests"], timeout=60, limits={}, default_limit=1.0)
        quick = pool.run_tests({}, ["tests/test_c.py::test_quick"], timeout=60, limits={}, default_limit=1.0)
    assert pool.started == 1
    assert not stuck.forged, stuck.forged
    assert stuck.outcomes == {
        "tests/test_c.py::test_quick": "passed",
        "tests/test_c.py::test_in_c_code": "timed_out",
        "tests/test_c.py::test_after": "not_run",
    }
    assert stuck.timed_out and "test_in_c_code ran past its time limit of 1 s" in stuck.stopped, stuck.stopped
    assert stuck.seconds < 30, "stopped at the test's hard deadline, not at the run's limit"
    assert quick.outcomes == {"tests/test_c.py::test_quick": "passed"} and not quick.forged


WRITES_BESIDE_ITSELF = """\
from pathlib import Path

from calc import answer


def test_writes_beside_itself():
    (Path(__file__).parent / "answer.txt").write_text(str(answer()))
    assert answer() == 1
"""


def test_held_out_tests_the_warm_path_runs_otherwise_than_the_cold_stay_cold(tmp_path: Path) -> None:
    """A held-out test that writes beside itself passes cold (a fresh writable copy) and fails
    warm (the workers' copy is read-only): the held-out tests stay cold, and say why."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "holdout").mkdir()
    (tmp_path / "calc.py").write_text(ORIGINAL)
    (tmp_path / "tests" / "test_calc.py").write_text(TESTS.split("\n\ndef test_through", maxsplit=1)[0] + "\n")
    (tmp_path / "holdout" / "test_more.py").write_text(WRITES_BESIDE_ITSELF)
    program = Program.load(tmp_path, ["calc.py"], protected=["tests", "holdout"])
    settings = EvaluationSettings(train=("tests",), holdout=("holdout",), timeout=60, engine="warm")
    evaluator = Evaluator(program, settings)
    held_out = HeldOut(evaluator, None, test_timeout=30)
    variant = Variant(program, Patch(), {"calc.py": VARIANT}, ())
    try:
        assert held_out.baseline == {"holdout/test_more.py::test_writes_beside_itself": "passed"}
        (outcomes,) = held_out.outcomes([variant])
        assert evaluator.warm_holdout_started == 0, "the held-out workers are stopped once they disagree"
    finally:
        evaluator.close()
    assert held_out.engine[0] == "cold" and evaluator.settings.holdout_engine == "cold"
    assert "holdout/test_more.py::test_writes_beside_itself: passed cold, failed warm" in held_out.engine[1]
    assert outcomes == {"holdout/test_more.py::test_writes_beside_itself": "failed"}  # cold: it ran, and 2 != 1


ENVIRONMENTS = """\
import os
import subprocess
import sys

ASK = [sys.executable, "-c", "import calc; print(calc.answer())"]


def test_with_an_environment_of_its_own():
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": os.getcwd()}
    done = subprocess.run(ASK, capture_output=True, text=True, env=env)
    assert done.stdout.strip() == "2", done.stderr


def test_with_the_environment_extended():
    done = subprocess.run(ASK, capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"})
    assert done.stdout.strip() == "2", done.stderr
"""
OWN = "tests/test_env.py::test_with_an_environment_of_its_own"
EXTENDED = "tests/test_env.py::test_with_the_environment_extended"


def environments_project(root: Path, folder: str) -> Program:
    (root / "tests").mkdir(parents=True, exist_ok=True)
    (root / folder).mkdir(exist_ok=True)
    (root / "calc.py").write_text(ORIGINAL)
    (root / "tests" / "test_calc.py").write_text(TESTS.split("\n\ndef test_through", maxsplit=1)[0] + "\n")
    (root / folder / "test_env.py").write_text(ENVIRONMENTS)
    return Program.load(root, ["calc.py"], protected=["tests", folder])


def test_a_process_started_with_an_environment_of_its_own_is_named_and_the_variant_runs_cold(tmp_path: Path) -> None:
    """A warm child hands the variant to the processes its tests start through their
    environment; a test that starts Python with an environment of its own (no such hand-over)
    imports the original from the worker's copy, where a cold copy holds the variant. The warm
    run names that process, and the evaluator runs that variant cold instead."""
    program = environments_project(tmp_path, "tests")
    variant = Variant(program, Patch(), {"calc.py": VARIANT}, ())
    with warm_pool(program) as pool:
        warm = pool.run_tests(variant.sources, ["tests/test_env.py"], timeout=120, limits={}, default_limit=0)
    assert warm.outcomes == {OWN: "failed", EXTENDED: "passed"}, "the process of its own ran the original"
    assert "started with an environment of its own" in warm.started_without_variant
    assert "import calc" in warm.started_without_variant, "it names the command"
    with workspace(program.root, variant.sources) as space:
        cold = run_tests(["tests/test_env.py"], timeout=120, runner=Sandbox(Limits(), space))
    assert cold.outcomes == {OWN: "passed", EXTENDED: "passed"} and not cold.started_without_variant
    evaluator = Evaluator(program, EvaluationSettings(train=("tests/test_env.py",), timeout=120, engine="warm"))
    try:
        evaluation = evaluator.evaluate(variant)
    finally:
        evaluator.close()
    assert evaluation.tests == cold.outcomes, evaluation.detail


def test_held_out_tests_that_start_a_process_with_an_environment_of_their_own_stay_cold(tmp_path: Path) -> None:
    program = environments_project(tmp_path, "holdout")
    settings = EvaluationSettings(train=("tests",), holdout=("holdout",), timeout=120, engine="warm")
    evaluator = Evaluator(program, settings)
    held_out = HeldOut(evaluator, None, test_timeout=60)
    variant = Variant(program, Patch(), {"calc.py": VARIANT}, ())
    try:
        (outcomes,) = held_out.outcomes([variant])
        assert evaluator.warm_holdout_started == 0, "the held-out workers are stopped"
    finally:
        evaluator.close()
    assert held_out.engine[0] == "cold" and evaluator.settings.holdout_engine == "cold"
    assert "a test started a process the warm path cannot hand the variant to" in held_out.engine[1]
    own, extended = OWN.replace("tests/", "holdout/"), EXTENDED.replace("tests/", "holdout/")
    assert outcomes == {own: "passed", extended: "passed"}, "cold: the variant's answer is 2"
