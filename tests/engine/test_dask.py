"""The Dask backend on a real LocalCluster (2 worker processes of 1 thread, on 127.0.0.1): gi's
own evaluator on the workers, real pytest runs in the sandbox, the program shipped once."""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from distributed import Client, LocalCluster, Lock

from gi.config import load_config
from gi.engine.backends.base import BackendError
from gi.engine.backends.bundle import bundle_program
from gi.engine.backends.cluster import DaskBackend
from gi.engine.backends.worker import settings_from_json, settings_to_json, warm_worker_counts, worker_counts
from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.engine.sandbox.limits import Limits
from gi.engine.workload_runs import timing_lock_name
from gi.fitness.outcomes import per_test_limits
from gi.fitness.runtime import Timing, TimingSettings, Workload
from gi.fitness.selection import Coverage
from gi.fitness.tests import PytestSetup
from gi.model.edits import DeleteStatement
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.model.results import Evaluation, Status
from gi.model.sites import SiteKind
from gi.run.experiment import run_experiment

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
GRADING = EXPERIMENTS / "programs" / "grading"


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """One real cluster for the module: 2 worker processes of one thread each, gi imported."""
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None)
    client = Client(cluster, set_as_default=False)
    client.run(worker_counts)  # workers import gi once, here rather than in the first test
    try:
        yield cluster.scheduler_address
    finally:
        client.close()
        cluster.close()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The grading example, with a workload, a run folder inside and a cache folder gi skips."""
    root = tmp_path_factory.mktemp("dask") / "grading"
    shutil.copytree(GRADING, root)
    (root / "workload.py").write_text("import grading\n\n\ndef run():\n    return grading.average(range(2000))\n")
    (root / "runs").mkdir()
    (root / "runs" / "store.sqlite").write_bytes(b"not for workers")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "grading.cpython-311.pyc").write_bytes(b"\0")
    return root


def evaluator_of(root: Path, *, baseline: bool = True, **settings: Any) -> Evaluator:
    """A local evaluator of the grading program, its baseline set as the engine sets it."""
    program = Program.load(root, ["grading.py"], protected=["tests", "holdout"])
    evaluator = Evaluator(
        program,
        EvaluationSettings(train=("tests",), holdout=("holdout",), timeout=30, exclude=(root / "runs",), **settings),
    )
    if not baseline:
        return evaluator
    original = evaluator.evaluate(apply(program, Patch()))
    assert original.ok, original.detail
    evaluator.baseline_tests = original.tests
    evaluator.test_limits = per_test_limits(original.durations, evaluator.settings.test_timeout)
    return evaluator


def variants_of(program: Program) -> list[Variant]:
    """Variants that pass, fail tests, do not parse, and reach for the test machinery."""
    statements = program.sites_of(SiteKind.STATEMENT)
    patches = [
        Patch((DeleteStatement(statements[3].location),)),  # the range check: still passes
        Patch((DeleteStatement(statements[6].location),)),  # return "A": fails 2 tests
    ]
    variants = [apply(program, patch) for patch in patches]
    broken = {"grading.py": program.sources["grading.py"] + "\ndef (:\n"}
    hostile = {"grading.py": program.sources["grading.py"] + "\nimport os\nos._exit(0)\n"}
    variants += [Variant(program, Patch(), sources, ()) for sources in (broken, hostile)]
    return variants


def same(evaluation: Evaluation) -> tuple[Any, ...]:
    return evaluation.status, evaluation.tree_hash, evaluation.measures, evaluation.tests


def test_dask_evaluations_equal_the_local_evaluators(scheduler: str, project: Path, tmp_path: Path) -> None:
    evaluator = evaluator_of(project)
    variants = variants_of(evaluator.program)
    local = [evaluator.evaluate(variant) for variant in variants]
    assert [e.status for e in local] == [Status.OK] * 2 + [Status.UNPARSEABLE, Status.TAMPERED]
    assert [e.measures["failed_tests"] for e in local[:2]] == [0, 2]

    done: list[Evaluation] = []
    with DaskBackend(evaluator, scheduler, cache=tmp_path / "bundles") as backend:
        remote = backend.evaluate_many(variants, on_done=done.append)
    assert [same(e) for e in remote] == [same(e) for e in local]
    assert sorted(e.tree_hash for e in done) == sorted(e.tree_hash for e in local)
    assert [e.measures["size"] for e in remote[:2]] == [1, 1]  # the patch's, not the worker's empty one


def test_warm_workers_on_dask_serve_a_run_and_stop_with_it(scheduler: str, project: Path, tmp_path: Path) -> None:
    """On the warm engine each Dask worker keeps one warm worker for the run's tasks: the same
    evaluations as this machine's warm and cold paths, one warm start per worker process for two
    batches, and nothing left running once the run's backend closes."""
    cold = evaluator_of(project)
    warm = evaluator_of(project, engine="warm")
    variants = variants_of(warm.program)
    try:
        local = [warm.evaluate(variant) for variant in variants]
    finally:
        warm.close()
    assert [same(e) for e in local] == [same(cold.evaluate(variant)) for variant in variants]
    with Client(scheduler, set_as_default=False) as watcher:
        with DaskBackend(warm, scheduler, cache=tmp_path / "bundles") as backend:
            first = backend.evaluate_many(variants)
            second = backend.evaluate_many(variants[:2] * 3)
            during = watcher.run(warm_worker_counts)
        after = watcher.run(warm_worker_counts)
    assert [same(e) for e in first] == [same(e) for e in local]
    assert [same(e) for e in second] == [same(e) for e in local[:2] * 3]
    assert sum(counts["warm_started"] for counts in during.values()) >= 1
    assert all(counts["warm_started"] <= 1 and counts["evaluators"] <= 1 for counts in during.values()), during
    assert all(counts == {"evaluators": 0, "warm_started": 0} for counts in after.values()), after


def test_the_program_is_shipped_once(scheduler: str, project: Path, tmp_path: Path) -> None:
    evaluator = evaluator_of(project, baseline=False)
    variants = variants_of(evaluator.program)[2:]  # need the program on the worker, not the sandbox
    cache = tmp_path / "bundles"
    with Client(scheduler, set_as_default=False) as watcher:
        before = watcher.run(worker_counts)
        with DaskBackend(evaluator, scheduler, cache=cache) as backend:
            digest = backend.bundle.digest
            first = backend.evaluate_many(variants)
            second = backend.evaluate_many(list(reversed(variants)))
        after = watcher.run(worker_counts)
    assert [same(e) for e in second] == [same(e) for e in reversed(first)]
    assert sorted(after) == sorted(before) and len(after) == 2

    def added(kind: str, worker: str) -> int:
        return after[worker][kind].get(digest, 0) - before[worker][kind].get(digest, 0)

    # Two batches: each worker got the program once, the two workers of this machine
    # wrote it to its cache once, and each loaded it at most once.
    assert [added("received", worker) for worker in after] == [1, 1]
    assert sum(added("materialised", worker) for worker in after) == 1
    assert all(added("loaded", worker) <= 1 for worker in after)
    assert sum(added("loaded", worker) for worker in after) >= 1
    shipped = sorted(path.relative_to(cache / digest).as_posix() for path in (cache / digest).rglob("*.py"))
    assert shipped == ["grading.py", "tests/test_grading.py", "workload.py"]
    assert sorted(backend.bundle.files) == shipped  # no held-out tests, run folder nor caches


def test_an_unreachable_scheduler_is_one_clear_line(project: Path) -> None:
    evaluator = Evaluator(Program.load(project, ["grading.py"], protected=["tests"]), EvaluationSettings(("tests",)))
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.perf_counter()
    with pytest.raises(BackendError) as caught:
        DaskBackend(evaluator, f"tcp://127.0.0.1:{port}", connect_timeout=1)
    assert time.perf_counter() - started < 10
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"evaluation.scheduler = 'tcp://127.0.0.1:{port}': no Dask scheduler answered")
    assert caught.value.exit_code == 2


def test_timings_on_workers_wait_for_the_machines_lock(scheduler: str, project: Path, tmp_path: Path) -> None:
    quick = TimingSettings(processes=1, values=1, warmups=0, min_time=0.005)
    evaluator = evaluator_of(project, workload=Workload("workload:run"), check_output=False, screening=quick)
    original = apply(evaluator.program, Patch())
    evaluator.baseline_timing = evaluator.timing(original)
    variants = variants_of(evaluator.program)[:1]  # passes its tests, so it is timed
    done: list[Evaluation] = []
    with DaskBackend(evaluator, scheduler, cache=tmp_path / "bundles") as backend:
        client = backend.client
        held = Lock(timing_lock_name(), scheduler_rpc=client.scheduler, loop=client.loop)
        assert held.acquire(timeout=10)
        batch = threading.Thread(target=lambda: backend.evaluate_many(variants, on_done=done.append))
        batch.start()
        try:
            time.sleep(5)  # the tests take ~1 s; then the timing waits for the lock we hold
            assert not done, "a variant was timed while another timing held this machine's lock"
        finally:
            held.release()
        batch.join(timeout=60)
    assert len(done) == 1 and done[0].ok
    assert done[0].measures["runtime"] > 0


def test_workers_on_another_machine_time_the_original_there(scheduler: str, project: Path, tmp_path: Path) -> None:
    quick = TimingSettings(processes=1, values=1, warmups=0, min_time=0.005)
    evaluator = evaluator_of(project, workload=Workload("workload:run"), check_output=False, screening=quick)
    real = evaluator.timing(apply(evaluator.program, Patch()))
    # As if the engine's machine were a thousand times slower than the workers'.
    evaluator.baseline_timing = Timing(tuple(mean * 1000 for mean in real.process_means), real.loops)
    variants = variants_of(evaluator.program)[:1]  # the same speed as the original
    with DaskBackend(evaluator, scheduler, cache=tmp_path / "bundles") as backend:
        [here] = backend.evaluate_many(variants)
        backend.client.run(lambda: os.environ.update(GI_TIMING_HOST="elsewhere"))
        try:
            [elsewhere] = backend.evaluate_many(variants)
        finally:
            backend.client.run(lambda: os.environ.pop("GI_TIMING_HOST", None))
    assert here.measures["runtime"] < 0.01, "on the engine's machine, the engine's timing of the original"
    # Within a factor of 20 of 1 (one 5 ms value a timing, on a shared machine), and far from the
    # 0.001 a timing against the engine's machine gives.
    assert 0.05 < elsewhere.measures["runtime"] < 20, "elsewhere, the original timed on that machine"


def test_settings_go_to_workers_as_json_and_back() -> None:
    settings = EvaluationSettings(
        train=("tests",),
        holdout=("holdout/test_x.py::test_y",),
        holdout_ids=("tests/test_x.py::test_z",),
        training_files=(("tests/test_x.py", "def test_y():\n    pass\n"),),
        holdout_files=(("gi_differential/test_gi_differential.py", "CASES = []\n"),),
        timeout=12.5,
        test_timeout=3.0,
        limits=Limits(memory_mb=512, isolate=False, processes=64, file_mb=8, output_kb=16, read_only=(Path("/opt"),)),
        workers=3,
        spare_pages=True,
        workload=Workload(command=("python", "bench.py")),
        check_output=False,
        time_failing=True,
        workload_timeout=30.0,
        screening=TimingSettings(processes=1, values=2, warmups=0, min_time=0.01),
        rigorous=TimingSettings(processes=4),
        exclude=(Path("/project/runs"),),
        secrets=("hunter2hunter2",),
        engine="warm",
        holdout_engine="warm",
        preload=("numpy",),
        fail_fast=True,
        first_failure=True,
        select=True,
        pytest=PytestSetup("/project/.venv/bin/python", ("--no-cov",), ("src",), (("shop", "src/shop.py"),), True),
        measures=frozenset({"complexity", "size"}),
    )
    changed = {f.name for f in dataclasses.fields(settings) if getattr(settings, f.name) != f.default}
    assert changed >= {f.name for f in dataclasses.fields(settings)} - {"limits", "screening", "rigorous"}
    data = settings_to_json(settings)
    assert set(data) == {f.name for f in dataclasses.fields(EvaluationSettings)}, "a setting the workers miss"
    assert settings_from_json(json.loads(json.dumps(data))) == settings


def test_the_bundle_leaves_out_what_copies_leave_out(project: Path) -> None:
    bundle = bundle_program(project, [project / "runs", project / "holdout"])
    assert sorted(bundle.files) == ["grading.py", "tests/test_grading.py", "workload.py"]
    assert bundle.files["grading.py"] == (project / "grading.py").read_bytes()
    assert bundle_program(project, [project / "runs", project / "holdout"]).digest == bundle.digest
    assert bundle_program(project, [project / "runs"]).digest != bundle.digest


@pytest.mark.slow
def test_a_dask_run_gives_the_same_front(tmp_path: Path) -> None:
    """The grading example at 6 x 3 on this machine's threads and on a local Dask cluster
    (warm workers on both)."""

    def run(backend: str) -> dict[str, Any]:
        text = (EXPERIMENTS / "grading.toml").read_text()
        text = text.replace('root = "programs/grading"', f'root = "{GRADING}"')
        text = text.replace('output = "runs"', f'output = "{tmp_path / backend}"')
        text = text.replace("population = 20", "population = 6").replace("generations = 10", "generations = 3")
        text += f'\n[evaluation]\nbackend = "{backend}"\nworkers = 2\n'
        path = tmp_path / f"{backend}.toml"
        path.write_text(text)
        return run_experiment(load_config(path)).summary

    local, dask = run("local"), run("dask")

    def front(summary: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [(m["id"], m["edits"], m["objectives"], m["holdout"]) for m in summary["front"]]

    assert [run["engine"]["training_tests"] for run in (local, dask)] == ["warm", "warm"]
    assert front(dask) == front(local)
    assert dask["evaluations"] == local["evaluations"]
    assert dask["hypervolume"] == local["hypervolume"]


def test_workers_run_the_tests_covering_an_edit_first(scheduler: str, project: Path, tmp_path: Path) -> None:
    """With tests.fail_fast the host, which has the patch, orders each variant's tests (those
    executing an edited line first) and the worker runs them in that order, as the local
    evaluator does."""
    evaluator = evaluator_of(project, fail_fast=True, first_failure=True)
    program = evaluator.program
    _, lines = evaluator.line_coverage(apply(program, Patch()))
    evaluator.coverage = Coverage.of(lines, program.sources)
    returns = [site for site in program.sites_of(SiteKind.STATEMENT) if site.function == "average"]
    variant = apply(program, Patch((DeleteStatement(returns[-1].location),)))  # average returns None
    order = evaluator.training_order(variant)
    assert order != tuple(evaluator.baseline_tests or ()), "the coverage moves a test up"
    local = evaluator.evaluate(variant)
    with DaskBackend(evaluator, scheduler, cache=tmp_path / "bundles") as backend:
        (remote,) = backend.evaluate_many([variant])
    assert next(iter(local.tests)) == order[0]
    assert list(remote.tests) == list(local.tests)  # the order the tests ran in
    assert same(remote) == same(local)


# Exhaustive: test_a_dask_run_gives_the_same_front (this file) makes a whole run on the cluster, and
# tests/algorithms tests the islands.
@pytest.mark.exhaustive
def test_each_islands_evaluations_go_to_a_worker_of_its_own(scheduler: str, project: Path, tmp_path: Path) -> None:
    """Islands spread over the workers: each variant's task asks for its island's worker (any
    other may take it when that one is busy or gone), three of island 0 and one of island 1 on
    two workers; one variant at a time (`submit`, a steady-state search's way) gives what the
    batch gives."""

    def restrictions(dask_scheduler: Any) -> list[list[str]]:
        return [sorted(task.worker_restrictions or []) for key, task in dask_scheduler.tasks.items()
                if "evaluate_on_worker" in str(key) and task.loose_restrictions]  # fmt: skip

    evaluator = evaluator_of(project)
    program = evaluator.program
    statements = program.sites_of(SiteKind.STATEMENT)
    variants = [apply(program, Patch((DeleteStatement(statements[index].location),))) for index in (3, 6, 8, 9)]
    islands = [0, 0, 1, 0]
    arrived: queue.SimpleQueue[Callable[[], Evaluation]] = queue.SimpleQueue()
    with (
        Client(scheduler, set_as_default=False) as watcher,
        DaskBackend(evaluator, scheduler, cache=tmp_path / "bundles") as backend,
    ):
        for variant, island in zip(variants, islands, strict=True):
            backend.submit(variant, arrived.put, island)
        results = [arrived.get(timeout=300) for _ in variants]  # finished, not yet taken in: still held
        asked = watcher.run_on_scheduler(restrictions)
        first, second = backend.worker_of(0), backend.worker_of(1)
        one_by_one = {e.tree_hash: e for e in (result() for result in results)}
        batch = backend.evaluate_many(variants, where={v.tree_hash: i for v, i in zip(variants, islands, strict=True)})
    assert first != second
    assert sorted(asked) == sorted([first] * 3 + [second])
    assert [same(one_by_one[variant.tree_hash]) for variant in variants] == [same(e) for e in batch]


def test_workers_run_only_the_tests_the_host_selects(scheduler: str, project: Path, tmp_path: Path) -> None:
    """tests.select: the host, which has the patch, selects the tests that execute an edited line
    and the worker runs only those, as the local evaluator does; with every_test, all of them."""
    evaluator = evaluator_of(project, select=True)
    program = evaluator.program
    run, lines = evaluator.line_coverage(apply(program, Patch()))
    evaluator.coverage = Coverage.of(lines, program.sources, run.outcomes)
    returns = [site for site in program.sites_of(SiteKind.STATEMENT) if site.function == "average"]
    variant = apply(program, Patch((DeleteStatement(returns[-1].location),)))  # average returns None
    selected = evaluator.selection(variant)
    assert selected is not None and 0 < len(selected) < len(evaluator.baseline_tests or {})
    local = evaluator.evaluate(variant)
    with DaskBackend(evaluator, scheduler, cache=tmp_path / "bundles") as backend:
        remote, full = backend.evaluate_many([variant]), backend.evaluate_many([variant], every_test=True)
    assert remote[0].partial and set(remote[0].durations) == set(local.durations) == selected
    assert same(remote[0]) == same(local)
    assert not full[0].partial and set(full[0].durations) == set(evaluator.baseline_tests or {})
