"""What runs on a Dask worker: the bundle plugin, the worker's program and evaluators (warm
where the run's are), the original's timing, and `evaluate_on_worker`."""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import json
import socket
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from gi.engine.backends.base import BackendError
from gi.engine.backends.bundle import (
    _BUNDLES,
    _PROGRAMS,
    _WORKER_GUARD,
    LOADED,
    MATERIALISED,
    RECEIVED,
    Bundle,
    default_cache,
    materialise,
)
from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.engine.sandbox.bubblewrap import isolation
from gi.engine.sandbox.limits import Limits
from gi.engine.workload_runs import timing_lock_name
from gi.fitness.runtime import Timing, TimingSettings, Workload, WorkloadError
from gi.fitness.tests import PytestSetup
from gi.model.patch import Patch, apply
from gi.model.program import Program


class BundlePlugin(WorkerPlugin):
    """Ships the bundle: the scheduler hands it to every worker once, to those that join later
    too, and each writes it to its machine's cache when it gets it. Its state is plain data."""

    def __init__(self, bundle: Bundle, cache: Path | None, name: str) -> None:
        self.files = dict(bundle.files)
        self.digest = bundle.digest
        self.cache = str(cache) if cache else None
        self.name = name

    def setup(self, worker: Any) -> None:
        """On the worker: write the bundle to disk (once a machine) and note where it is."""
        cache = Path(self.cache) if self.cache else default_cache()
        with _WORKER_GUARD:
            RECEIVED[self.digest] += 1
            _BUNDLES[self.digest] = materialise(self.files, self.digest, cache)
        self.files = {}  # the copy on disk is what tasks use

    def teardown(self, worker: Any) -> None:
        """When the run drops the plugin, or the worker closes: stop the run's evaluators here."""
        close_evaluators(self.name)


def _pattern(file: str) -> str:
    """A glob for `Program.load` that matches exactly this file name."""
    return glob.escape(file) if any(char in file for char in "*?[") else file


def _worker_program(job: Mapping[str, Any]) -> Program:
    """The program of the bundle, loaded from its folder once per worker process."""
    digest = job["bundle"]
    with _WORKER_GUARD:
        root = _BUNDLES.get(digest)
        if root is None:
            raise BackendError(f"this worker never received the program bundle {digest[:12]}")
        key = (str(root), tuple(job["files"]), tuple(job["test_paths"]))
        program = _PROGRAMS.get(key)
        if program is None:
            program = Program.load(root, [_pattern(file) for file in job["files"]], protected=job["test_paths"])
            if program.tree_hash != job["program_hash"]:
                raise BackendError(f"{root}: the program a worker loaded is not the one this machine loaded")
            _PROGRAMS[key] = program
            LOADED[digest] += 1
    return program


def worker_counts() -> dict[str, dict[str, int]]:
    """On a worker (through `Client.run`): bundles it received, wrote to disk and loaded, by hash."""
    return {"received": dict(RECEIVED), "materialised": dict(MATERIALISED), "loaded": dict(LOADED)}


# --- the evaluator's state, as JSON ----------------------------------------------------------------


def settings_to_json(settings: EvaluationSettings) -> dict[str, Any]:
    """`settings` as JSON data (`settings_from_json` reads it back)."""
    limits = dataclasses.asdict(settings.limits)
    limits["read_only"] = [str(path) for path in settings.limits.read_only]
    workload = settings.workload
    return {
        "train": list(settings.train),
        "holdout": list(settings.holdout),
        "holdout_ids": list(settings.holdout_ids),
        "holdout_files": [list(pair) for pair in settings.holdout_files],
        "training_files": [list(pair) for pair in settings.training_files],
        "timeout": settings.timeout,
        "test_timeout": settings.test_timeout,
        "spare_pages": settings.spare_pages,
        "limits": limits,
        "workers": settings.workers,
        "workload": None if workload is None else {"call": workload.call, "command": list(workload.command)},
        "check_output": settings.check_output,
        "time_failing": settings.time_failing,
        "workload_timeout": settings.workload_timeout,
        "screening": dataclasses.asdict(settings.screening),
        "rigorous": dataclasses.asdict(settings.rigorous),
        "exclude": [str(path) for path in settings.exclude],
        "secrets": list(settings.secrets),
        "engine": settings.engine,
        "holdout_engine": settings.holdout_engine,
        "preload": list(settings.preload),
        "fail_fast": settings.fail_fast,
        "first_failure": settings.first_failure,
        "select": settings.select,
        "pytest": {
            "python": settings.pytest.python,
            "options": list(settings.pytest.options),
            "import_roots": list(settings.pytest.import_roots),
            "modules": [list(pair) for pair in settings.pytest.modules],
            "lend_coverage": settings.pytest.lend_coverage,
        },
        "measures": None if settings.measures is None else sorted(settings.measures),
    }


def settings_from_json(data: Mapping[str, Any]) -> EvaluationSettings:
    """The settings `settings_to_json` wrote."""
    workload = data["workload"]
    return EvaluationSettings(
        train=tuple(data["train"]),
        holdout=tuple(data["holdout"]),
        holdout_ids=tuple(data["holdout_ids"]),
        holdout_files=tuple((str(path), str(text)) for path, text in data["holdout_files"]),
        training_files=tuple((str(path), str(text)) for path, text in data.get("training_files", [])),
        timeout=float(data["timeout"]),
        test_timeout=float(data["test_timeout"]),
        limits=Limits(**{**data["limits"], "read_only": tuple(Path(path) for path in data["limits"]["read_only"])}),
        workers=int(data["workers"]),
        spare_pages=data.get("spare_pages"),
        workload=None if workload is None else Workload(workload["call"], tuple(workload["command"])),
        check_output=bool(data["check_output"]),
        time_failing=bool(data["time_failing"]),
        workload_timeout=float(data["workload_timeout"]),
        screening=TimingSettings(**data["screening"]),
        rigorous=TimingSettings(**data["rigorous"]),
        exclude=tuple(Path(path) for path in data["exclude"]),
        secrets=tuple(data["secrets"]),
        engine=str(data["engine"]),
        holdout_engine=str(data.get("holdout_engine", "cold")),
        preload=tuple(data["preload"]),
        fail_fast=bool(data["fail_fast"]),
        first_failure=bool(data["first_failure"]),
        select=bool(data.get("select", False)),
        pytest=PytestSetup(
            python=str(data["pytest"]["python"]),
            options=tuple(data["pytest"]["options"]),
            import_roots=tuple(data["pytest"]["import_roots"]),
            modules=tuple((str(name), str(file)) for name, file in data["pytest"]["modules"]),
            lend_coverage=bool(data["pytest"]["lend_coverage"]),
        ),
        measures=None if data["measures"] is None else frozenset(map(str, data["measures"])),
    )


class _WorkerEvaluator(Evaluator):
    """gi's evaluator on a Dask worker: the same evaluation, timings under the machine's lock
    (set for each task: any context manager serves, here the machine's Dask lock)."""

    def set_timing_lock(self, lock: AbstractContextManager[Any]) -> None:
        self._timing_lock = lock


#: On a worker: the evaluators of each run's plugin not in use, by (plugin, settings JSON). A task
#: takes one (or makes one) and gives it back, so no two tasks share one, and a warm evaluator's
#: worker process serves the run's next tasks.
_IDLE_EVALUATORS: dict[tuple[str, str], list[_WorkerEvaluator]] = {}
#: Plugins this worker dropped: an evaluator still in use when its run's plugin went is stopped
#: when its task ends, not kept.
_DROPPED_PLUGINS: set[str] = set()


@contextlib.contextmanager
def _worker_evaluator(job: Mapping[str, Any], program: Program) -> Iterator[_WorkerEvaluator]:
    """An evaluator of the job's program and settings for one task, kept for the next."""
    settings_text = json.dumps(job["settings"], sort_keys=True)
    key = (str(job["plugin"]), settings_text)
    with _WORKER_GUARD:
        idle = _IDLE_EVALUATORS.get(key)
        evaluator = idle.pop() if idle else None
        stale = [other for other in _IDLE_EVALUATORS if other[0] == key[0] and other != key]
        dropped = [old for other in stale for old in _IDLE_EVALUATORS.pop(other)]
    for old in dropped:  # the run changed its settings (its warm check went cold, say)
        old.close()
    if evaluator is None:
        evaluator = _WorkerEvaluator(program, settings_from_json(job["settings"]))
    kept = False
    try:
        yield evaluator
        with _WORKER_GUARD:
            if key[0] not in _DROPPED_PLUGINS:
                _IDLE_EVALUATORS.setdefault(key, []).append(evaluator)
                kept = True
    finally:
        if not kept:
            evaluator.close()


def close_evaluators(plugin: str) -> int:
    """Stop a run's evaluators on this worker (their warm workers and workspaces); how many."""
    with _WORKER_GUARD:
        _DROPPED_PLUGINS.add(plugin)
        keys = [key for key in _IDLE_EVALUATORS if key[0] == plugin]
        evaluators = [evaluator for key in keys for evaluator in _IDLE_EVALUATORS.pop(key)]
    for evaluator in evaluators:
        evaluator.close()
    return len(evaluators)


def warm_worker_counts() -> dict[str, int]:
    """On a worker (through `Client.run`): the warm worker processes its kept evaluators started."""
    with _WORKER_GUARD:
        evaluators = [evaluator for kept in _IDLE_EVALUATORS.values() for evaluator in kept]
    return {"evaluators": len(evaluators), "warm_started": sum(e.warm_started for e in evaluators)}


def _timing_lock(settings: EvaluationSettings, timed: bool) -> AbstractContextManager[Any]:
    """The machine's lock when this task may time its variant (a `distributed.Lock`, shared by
    every worker of the machine); else a lock of its own, never taken."""
    if settings.workload is None or not timed:
        return threading.Lock()
    from distributed import Lock

    return Lock(timing_lock_name())


#: On a worker of another machine than the engine's: the original's timing there, by the
#: engine's timing of it (a new one each generation, with the drift check).
_ORIGINAL_TIMINGS: dict[tuple[str, Timing], Timing] = {}


def _original_timing(evaluator: Evaluator, host: Timing) -> Timing:
    """The original timed on this machine with the engine's loop count, once per worker process
    and engine timing: variants are compared with the original on the machine that timed them,
    never with a timing from a faster or slower machine."""
    key = (str(evaluator.program.root), host)
    with _WORKER_GUARD:
        timing = _ORIGINAL_TIMINGS.get(key)
    if timing is None:
        try:
            timing = evaluator.timing(apply(evaluator.program, Patch()), loops=host.loops)
        except WorkloadError as error:
            raise BackendError(f"the original program's workload fails on {socket.gethostname()}: {error}") from None
        with _WORKER_GUARD:
            _ORIGINAL_TIMINGS[key] = timing
    return timing


def evaluate_on_worker(
    job_text: str,
    sources: Mapping[str, str],
    tree_hash: str,
    order: Sequence[str] | None = None,
    selected: Sequence[str] | None = None,
    measured: bool = True,
) -> dict[str, Any]:
    """A Dask task: evaluate the variant whose changed `sources` are given, on this worker, with
    the evaluator's state in `job_text` (JSON), its training tests in `order` (the host's, where
    the patch is: those covering its edited lines first; None: the job's), only the `selected`
    ones when given (the host's selection by coverage; None: every test), the workload and the
    static measures unless not `measured`; the `Evaluation` as JSON."""
    job = json.loads(job_text)
    program = _worker_program(job)
    timing = job["baseline_timing"]
    with _worker_evaluator(job, program) as evaluator:
        evaluator.set_timing_lock(_timing_lock(evaluator.settings, timing is not None))
        evaluator.baseline_tests = job["baseline_tests"]
        evaluator.test_limits = job["test_limits"]
        evaluator.test_order = tuple(job["test_order"] if order is None else order)
        evaluator.protected = frozenset(job["protected"])
        evaluator.baseline_output = job["baseline_output"]
        evaluator.behaviour_cases = tuple((case[0], case[1], case[2]) for case in job["behaviour_cases"])
        evaluator.timed_check = bool(job["timed_check"])
        evaluator.judged = True  # the host judged the variant's code, where its patch is
        if job.get("canaries") is not None:
            evaluator.canaries.must_fail, evaluator.canaries.learned = tuple(job["canaries"]), True
        evaluator.baseline_timing = None
        if timing is not None:
            host = Timing(tuple(timing["process_means"]), int(timing["loops"]))
            same_machine = job["timing_host"] == timing_lock_name()
            evaluator.baseline_timing = host if same_machine else _original_timing(evaluator, host)
        evaluation = evaluator.evaluate_sources(sources, selected, measured)
    if evaluation.tree_hash != tree_hash:
        raise BackendError(
            f"a worker made the program {evaluation.tree_hash[:12]} of sources this machine hashes as {tree_hash[:12]}"
        )
    return evaluation.to_json()


def worker_report(limits_json: Mapping[str, Any]) -> dict[str, str]:
    """On a worker (through `Client.run`): its Python and the isolation its commands get."""
    limits = Limits(**{**limits_json, "read_only": tuple(Path(path) for path in limits_json["read_only"])})
    return {"python": sys.version.split()[0], "isolation": isolation(limits).description, "host": socket.gethostname()}
