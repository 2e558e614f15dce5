"""Backends: where a batch of variants is evaluated. On this machine (the Evaluator's threads),
or on Dask workers on one machine or many (`DaskBackend`).

The Dask backend ships the program once per run: a content-addressed *bundle* of the project
folder ({relative path: bytes}: what `gi.sandbox.copy_program` would copy, without the run
folder, the reply cache and the held-out tests), handed by the scheduler to every worker once
(`BundlePlugin`, to workers that join later too). Each worker writes it into a folder of its
machine named by the hash (`<temp>/gi-bundles-<uid>/<hash>`: workers of one machine share it,
and the next run of the same program finds it there), loads the program from it once per
process and keeps it. A task evaluates one variant with gi's own `Evaluator`, the sandbox as on
this machine: it takes the variant's changed sources, its tree hash and the evaluator's state
after the baseline (tests, limits, output, timing) as JSON, and returns the `Evaluation` as
JSON. A worker keeps its evaluators for the run (one per task running at once), so on the warm
engine the training tests run in the warm worker each keeps, as on this machine; they stop when
the run drops its plugin, or the worker closes. What crosses the network is plain data (the
plugin carries only the bundle), JSON text and the names of gi's functions: workers need gi
installed as on this machine.

Timings on workers hold a lock shared by every worker of one machine (`gi.evaluation.timing_lock_name`), so
two variants are never timed at once on one machine's cores. A variant's runtime is its time
over the original's on the same machine: workers on the engine's machine use the engine's
timing of the original; those on another machine time the original there (with the engine's
loop count, once per worker process and generation).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import glob
import hashlib
import json
import logging
import os
import socket
import stat
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any, Protocol

from distributed.diagnostics.plugin import WorkerPlugin

from fitness.runtime import Timing, TimingSettings, Workload, WorkloadError
from gi.errors import GIError
from gi.evaluation import EvaluationSettings, Evaluator, timing_lock_name, variant_measures
from gi.patch import Patch, Variant, apply
from gi.program import IGNORED_DIRS, Program
from gi.results import Evaluation
from gi.sandbox import Limits, isolation, remove_tree

#: Seconds to wait for a Dask scheduler to answer, and for its first worker to join.
CONNECT_TIMEOUT = 10.0
WORKER_TIMEOUT = 60.0


class BackendError(GIError):
    """The evaluation backend cannot serve the run: no scheduler at the address, no worker, or a
    worker that cannot evaluate (gi missing there, say)."""

    exit_code = 2


class Backend(Protocol):
    """Evaluates batches of variants; results keep input order."""

    def evaluate_many(
        self, variants: Iterable[Variant], on_done: Callable[[Evaluation], None] | None = None
    ) -> list[Evaluation]: ...

    def close(self) -> None: ...


class LocalBackend:
    """This machine: the evaluator's own threads (`Evaluator.evaluate_many`)."""

    def __init__(self, evaluator: Evaluator) -> None:
        self.evaluator = evaluator

    def evaluate_many(
        self, variants: Iterable[Variant], on_done: Callable[[Evaluation], None] | None = None
    ) -> list[Evaluation]:
        """Evaluate the batch in this process's threads."""
        return self.evaluator.evaluate_many(variants, on_done)

    def close(self) -> None:
        """Nothing to release."""


# --- the bundle: the program, shipped once ---------------------------------------------------------


@dataclass(frozen=True)
class Bundle:
    """The project folder as data: file contents by relative (POSIX) path, and their hash."""

    files: Mapping[str, bytes]
    digest: str

    @property
    def key(self) -> str:
        """Its name on a Dask cluster (with a suffix per run, the worker plugin's name)."""
        return f"gi-bundle-{self.digest}"


def bundle_digest(files: Mapping[str, bytes]) -> str:
    """SHA-256 of the paths and contents of a bundle, in path order."""
    digest = hashlib.sha256()
    for path in sorted(files):
        data = files[path]
        digest.update(f"{path}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def bundle_program(root: Path, exclude: Iterable[Path] = ()) -> Bundle:
    """The files `copy_program` copies from `root` (no version control, caches, environments,
    compiled files nor `exclude`), read into memory. Workers do not share this machine's file
    system, so a link is shipped as the file it points to when that is a regular file inside
    `root`, and left out otherwise."""
    root = root.resolve()
    excluded = {path.resolve() for path in exclude}
    files: dict[str, bytes] = {}
    for folder, subfolders, names in os.walk(root):
        here = Path(folder)
        subfolders[:] = sorted(
            name
            for name in subfolders
            if name not in IGNORED_DIRS and not (here / name).is_symlink() and (here / name).resolve() not in excluded
        )
        for name in sorted(names):
            path = here / name
            if name in IGNORED_DIRS or name.endswith((".pyc", ".pyo")) or path.resolve() in excluded:
                continue
            target = path.resolve()
            if not target.is_file() or not target.is_relative_to(root):
                continue
            files[path.relative_to(root).as_posix()] = target.read_bytes()
    return Bundle(files, bundle_digest(files))


def default_cache() -> Path:
    """Where a machine keeps the bundles its workers received: one folder per user."""
    return Path(tempfile.gettempdir()) / f"gi-bundles-{os.getuid()}"


def _private_folder(path: Path) -> None:
    """Make `path` (mode 700) or check that it is a folder of ours, not a link someone planted."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise BackendError(f"{path}: the bundle cache must be a folder of this user's, not a link")


#: On a worker: bundles this process received, wrote to disk, and loaded as programs, by hash.
RECEIVED: collections.Counter[str] = collections.Counter()
MATERIALISED: collections.Counter[str] = collections.Counter()
LOADED: collections.Counter[str] = collections.Counter()
_BUNDLES: dict[str, Path] = {}
_PROGRAMS: dict[tuple[str, tuple[str, ...], tuple[str, ...]], Program] = {}
_WORKER_GUARD = threading.Lock()


def materialise(files: Mapping[str, bytes], digest: str, cache: Path) -> Path:
    """The bundle's folder `cache/<digest>`, written first if this machine does not have it. The
    files go to a fresh folder renamed into place, so workers racing to write one bundle leave
    one whole copy, and a folder by that name is always complete."""
    target = cache / digest
    if target.is_dir():
        return target
    if bundle_digest(files) != digest:
        raise BackendError(f"the program bundle a worker received does not match its hash {digest[:12]}")
    _private_folder(cache)
    staging = Path(tempfile.mkdtemp(prefix=f".{digest[:12]}-", dir=cache))
    try:
        for relative, data in files.items():
            parts = PurePosixPath(relative).parts
            if not parts or relative.startswith("/") or ".." in parts:
                raise BackendError(f"the program bundle holds a path outside the project: {relative!r}")
            path = staging.joinpath(*parts)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        try:
            staging.rename(target)
        except OSError:  # another worker of this machine was first
            if not target.is_dir():
                raise
        else:
            MATERIALISED[digest] += 1
    finally:
        if staging.exists():
            remove_tree(staging)
    return target


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
        "timeout": settings.timeout,
        "test_timeout": settings.test_timeout,
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
        "preload": list(settings.preload),
        "fail_fast": settings.fail_fast,
        "first_failure": settings.first_failure,
    }


def settings_from_json(data: Mapping[str, Any]) -> EvaluationSettings:
    """The settings `settings_to_json` wrote."""
    workload = data["workload"]
    return EvaluationSettings(
        train=tuple(data["train"]),
        holdout=tuple(data["holdout"]),
        holdout_ids=tuple(data["holdout_ids"]),
        holdout_files=tuple((str(path), str(text)) for path, text in data["holdout_files"]),
        timeout=float(data["timeout"]),
        test_timeout=float(data["test_timeout"]),
        limits=Limits(**{**data["limits"], "read_only": tuple(Path(path) for path in data["limits"]["read_only"])}),
        workers=int(data["workers"]),
        workload=None if workload is None else Workload(workload["call"], tuple(workload["command"])),
        check_output=bool(data["check_output"]),
        time_failing=bool(data["time_failing"]),
        workload_timeout=float(data["workload_timeout"]),
        screening=TimingSettings(**data["screening"]),
        rigorous=TimingSettings(**data["rigorous"]),
        exclude=tuple(Path(path) for path in data["exclude"]),
        secrets=tuple(data["secrets"]),
        engine=str(data["engine"]),
        preload=tuple(data["preload"]),
        fail_fast=bool(data["fail_fast"]),
        first_failure=bool(data["first_failure"]),
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


def evaluate_on_worker(job_text: str, sources: Mapping[str, str], tree_hash: str) -> dict[str, Any]:
    """A Dask task: evaluate the variant whose changed `sources` are given, on this worker, with
    the evaluator's state in `job_text` (JSON); the `Evaluation` as JSON."""
    job = json.loads(job_text)
    program = _worker_program(job)
    timing = job["baseline_timing"]
    with _worker_evaluator(job, program) as evaluator:
        evaluator.set_timing_lock(_timing_lock(evaluator.settings, timing is not None))
        evaluator.baseline_tests = job["baseline_tests"]
        evaluator.test_limits = job["test_limits"]
        evaluator.test_order = tuple(job["test_order"])
        evaluator.protected = frozenset(job["protected"])
        evaluator.baseline_output = job["baseline_output"]
        evaluator.baseline_timing = None
        if timing is not None:
            host = Timing(tuple(timing["process_means"]), int(timing["loops"]))
            same_machine = job["timing_host"] == timing_lock_name()
            evaluator.baseline_timing = host if same_machine else _original_timing(evaluator, host)
        evaluation = evaluator.evaluate_sources(sources)
    if evaluation.tree_hash != tree_hash:
        raise BackendError(
            f"a worker made the program {evaluation.tree_hash[:12]} of sources this machine hashes as {tree_hash[:12]}"
        )
    return evaluation.to_json()


def worker_report(limits_json: Mapping[str, Any]) -> dict[str, str]:
    """On a worker (through `Client.run`): its Python and the isolation its commands get."""
    limits = Limits(**{**limits_json, "read_only": tuple(Path(path) for path in limits_json["read_only"])})
    return {"python": sys.version.split()[0], "isolation": isolation(limits).description, "host": socket.gethostname()}


# --- the backend -----------------------------------------------------------------------------------


class DaskBackend:
    """Evaluates batches of variants on Dask workers: those of the scheduler at `scheduler`
    ("tcp://HOST:PORT"), or with None, of a cluster on this machine (`workers` processes of one
    thread each). It reads the evaluator's state (baseline tests, limits, output, timing) at
    every batch, so the engine sets it on its evaluator as for local evaluation."""

    def __init__(
        self,
        evaluator: Evaluator,
        scheduler: str | None = None,
        *,
        workers: int = 2,
        connect_timeout: float = CONNECT_TIMEOUT,
        worker_timeout: float = WORKER_TIMEOUT,
        cache: Path | None = None,
    ) -> None:
        from distributed import Client, LocalCluster

        self.evaluator = evaluator
        self.cache = cache
        self._cluster: LocalCluster | None = None
        self._job_text = ""
        self._job_future: Any = None
        if scheduler is None:
            self._cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
            self.client = Client(self._cluster, set_as_default=False)
        else:
            try:
                self.client = Client(scheduler, timeout=connect_timeout, set_as_default=False)
            except (OSError, TimeoutError, ValueError) as error:
                reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
                raise BackendError(
                    f"evaluation.scheduler = {scheduler!r}: no Dask scheduler answered within {connect_timeout:g} s"
                    f" ({reason}); start one there with `dask scheduler`, or fix the address"
                ) from None
        try:
            self._start(scheduler or "a local cluster", worker_timeout)
        except BaseException:
            self.close()
            raise

    def _start(self, where: str, worker_timeout: float) -> None:
        """Wait for a worker, check what the workers run, and ship the program once."""
        try:
            self.client.wait_for_workers(1, timeout=worker_timeout)
        except TimeoutError:
            raise BackendError(
                f"evaluation.scheduler = {where!r}: no Dask worker joined within {worker_timeout:g} s;"
                f" start one on each machine with `dask worker {where} --nthreads 1`"
            ) from None
        limits = settings_to_json(self.evaluator.settings)["limits"]
        try:
            #: What each worker runs: its Python, and the isolation its commands get.
            self.workers: dict[str, dict[str, str]] = self.client.run(worker_report, limits)
        except Exception as error:
            raise BackendError(f"a Dask worker of {where} cannot run gi ({_one_line(error)})") from None
        settings = self.evaluator.settings
        program = self.evaluator.program
        hidden = (*settings.exclude, *(program.root / path.split("::")[0] for path in settings.holdout))
        self.bundle = bundle_program(program.root, hidden)
        #: The plugin's name: one per backend, so two runs of one program never drop each other's.
        self.plugin = f"{self.bundle.key}-{uuid.uuid4().hex[:8]}"
        answers = self.client.register_plugin(BundlePlugin(self.bundle, self.cache, self.plugin))
        failed = [answer for answer in answers.values() if answer.get("status") != "OK"]
        if failed:
            raise BackendError(f"a Dask worker of {where} cannot take the program: {failed[0].get('text', failed[0])}")

    def _job(self) -> str:
        """The evaluator's state for the workers, as JSON: the shipped bundle's hash, the files
        and tests, the settings (without the host's folders to leave out, already left out of the
        bundle, and without secrets, redacted here) and what the baseline set. The engine (warm
        or cold) is the run's; each task gets an evaluator of one slot, its own warm worker."""
        evaluator = self.evaluator
        settings = dataclasses.replace(evaluator.settings, exclude=(), secrets=(), workers=1)
        timing = evaluator.baseline_timing
        return json.dumps(
            {
                "bundle": self.bundle.digest,
                "plugin": self.plugin,
                "files": list(evaluator.program.files),
                "test_paths": sorted({path.split("::")[0] for path in (*settings.train, *settings.holdout)}),
                "program_hash": evaluator.program.tree_hash,
                "timing_host": timing_lock_name(),
                "settings": settings_to_json(settings),
                "baseline_tests": None if evaluator.baseline_tests is None else dict(evaluator.baseline_tests),
                "test_limits": dict(evaluator.test_limits),
                "test_order": list(evaluator.test_order),
                "protected": sorted(evaluator.protected),
                "baseline_output": evaluator.baseline_output,
                "baseline_timing": None
                if timing is None
                else {"process_means": list(timing.process_means), "loops": timing.loops},
            },
            sort_keys=True,
        )

    def _scatter_job(self) -> Any:
        """The job on the workers (a Dask future): sent again only when the evaluator's state
        changed (a new baseline timing, say), under a key of its own each time (a content key
        could be released by the batch before while this one still needs it)."""
        text = self._job()
        if self._job_future is None or text != self._job_text:
            self._job_text, self._job_future = text, self.client.scatter(text, hash=False)
        return self._job_future

    def _received(self, variant: Variant, data: Mapping[str, Any]) -> Evaluation:
        """A worker's evaluation, with this patch's own measures (the worker saw no patch) and
        the details redacted of the secrets this machine knows."""
        evaluation = Evaluation.from_json(data)
        measures = evaluation.measures
        if "size" in measures:
            measures = {**measures, **variant_measures(variant)}
        return dataclasses.replace(evaluation, measures=measures, detail=self.evaluator.redact(evaluation.detail))

    def evaluate_many(
        self, variants: Iterable[Variant], on_done: Callable[[Evaluation], None] | None = None
    ) -> list[Evaluation]:
        """Evaluate the batch on the workers, one task a variant submitted as soon as `variants`
        yields it; `on_done` is called as each result comes in, and the results keep input order."""
        from distributed import as_completed

        job: Any = None
        submitted: list[Variant] = []
        futures: list[Any] = []
        results: dict[int, Evaluation] = {}
        try:
            for variant in variants:
                if job is None:
                    job = self._scatter_job()
                submitted.append(variant)
                futures.append(
                    self.client.submit(
                        evaluate_on_worker,
                        job,
                        {file: variant.sources[file] for file in variant.changed_files},
                        variant.tree_hash,
                        pure=False,
                    )
                )
            index = {future.key: position for position, future in enumerate(futures)}
            for future in as_completed(futures, loop=self.client.loop) if futures else []:
                position = index[future.key]
                try:
                    data = future.result()
                except BackendError:
                    raise
                except Exception as error:
                    raise BackendError(f"a Dask worker failed to evaluate a variant: {_one_line(error)}") from None
                evaluation = results[position] = self._received(submitted[position], data)
                if on_done:
                    on_done(evaluation)
        finally:
            # On Ctrl-C or an error, drop the variants not evaluated yet.
            self.client.cancel([future for future in futures if not future.done()])
        return [results[position] for position in range(len(submitted))]

    def close(self) -> None:
        """Drop the program from the scheduler, disconnect, and stop the local cluster if this
        backend started one. Workers keep the bundle's folder for the next run of the program."""
        if getattr(self, "plugin", None) and self.client.status == "running":
            with contextlib.suppress(Exception):
                self.client.unregister_worker_plugin(self.plugin)
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def __enter__(self) -> DaskBackend:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def _one_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


def open_backend(
    name: str, evaluator: Evaluator, *, scheduler: str | None = None, workers: int = 2, cache: Path | None = None
) -> Backend:
    """The backend a config names: "local" (this machine's threads) or "dask"."""
    if name == "local":
        return LocalBackend(evaluator)
    if name == "dask":
        return DaskBackend(evaluator, scheduler, workers=workers, cache=cache)
    raise BackendError(f"evaluation.backend = {name!r}: the backends are 'local' and 'dask'")
