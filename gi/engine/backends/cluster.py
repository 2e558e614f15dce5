"""Backends: where a batch of variants is evaluated. On this machine (the Evaluator's threads),
or on Dask workers on one machine or many (`DaskBackend`).

The Dask backend ships the program once per run: a content-addressed *bundle* of the project
folder ({relative path: bytes}: what `gi.engine.sandbox.files.copy_program` would copy, without the run
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

Timings on workers hold a lock shared by every worker of one machine (`gi.engine.workload_runs.timing_lock_name`), so
two variants are never timed at once on one machine's cores. A variant's runtime is its time
over the original's on the same machine: workers on the engine's machine use the engine's
timing of the original; those on another machine time the original there (with the engine's
loop count, once per worker process and generation).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from gi.engine.backends.base import Backend, BackendError, LocalBackend, Result
from gi.engine.backends.bundle import bundle_program
from gi.engine.backends.worker import BundlePlugin, evaluate_on_worker, settings_to_json, worker_report
from gi.engine.evaluation import Evaluator
from gi.engine.measures import variant_measures
from gi.engine.workload_runs import timing_lock_name
from gi.model.patch import Variant
from gi.model.results import Evaluation, Status

#: Seconds to wait for a Dask scheduler to answer, and for its first worker to join.
CONNECT_TIMEOUT = 10.0
WORKER_TIMEOUT = 60.0


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
        #: The tasks `submit` sent that are not taken in yet, by key.
        self._running: dict[str, Any] = {}
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
                "behaviour_cases": [list(case) for case in evaluator.behaviour_cases],
                "timed_check": evaluator.timed_check,
                "canaries": list(evaluator.canaries.must_fail) if evaluator.canaries.learned else None,
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
        if measures:  # the worker measured it (a variant that does not parse has no measures)
            measures = {**measures, **variant_measures(variant, self.evaluator.settings.measures)}
        return dataclasses.replace(evaluation, measures=measures, detail=self.evaluator.redact(evaluation.detail))

    def evaluate_many(
        self,
        variants: Iterable[Variant],
        on_done: Callable[[Evaluation], None] | None = None,
        where: Mapping[str, int] | None = None,
        *,
        every_test: bool = False,
        measured: bool = True,
    ) -> list[Evaluation]:
        """Evaluate the batch on the workers, one task a variant submitted as soon as `variants`
        yields it (to the worker of its island, `where` by tree hash, if it says); `on_done` is
        called as each result comes in, and the results keep input order. Each runs the training
        tests the host selects for it (`Evaluator.selection`, from its patch), or every test with
        `every_test`; the workload and the static measures too unless not `measured`."""
        from distributed import as_completed

        submitted: list[Variant] = []
        futures: list[Any] = []  # None where the variant was refused here
        results: dict[int, Evaluation] = {}
        try:
            for variant in variants:
                island = None if where is None else where.get(variant.tree_hash)
                sent = self._send(variant, island, every_test=every_test, measured=measured)
                submitted.append(variant)
                if isinstance(sent, Evaluation):  # judged here, where the patch is: never sent
                    results[len(submitted) - 1] = sent
                    futures.append(None)
                    if on_done:
                        on_done(sent)
                else:
                    futures.append(sent)
            index = {future.key: position for position, future in enumerate(futures) if future is not None}
            sent_futures = [future for future in futures if future is not None]
            for future in as_completed(sent_futures, loop=self.client.loop) if sent_futures else []:
                position = index[future.key]
                evaluation = results[position] = self._taken(submitted[position], future)
                if on_done:
                    on_done(evaluation)
        finally:
            # On Ctrl-C or an error, drop the variants not evaluated yet.
            self.client.cancel([future for future in futures if future is not None and not future.done()])
        return [results[position] for position in range(len(submitted))]

    def submit(
        self,
        variant: Variant,
        done: Callable[[Result], None],
        affinity: int | None = None,
        *,
        every_test: bool = False,
        measured: bool = True,
    ) -> None:
        """Evaluate one variant on a worker (island `affinity`'s, if given); `done` gets its result."""
        sent = self._send(variant, affinity, every_test=every_test, measured=measured)
        if isinstance(sent, Evaluation):
            done(lambda: sent)
            return
        self._running[sent.key] = sent  # a Dask future nobody holds is cancelled

        def finished(future: Any) -> None:
            done(lambda: self._taken(variant, self._running.pop(future.key, future)))

        sent.add_done_callback(finished)

    def _send(self, variant: Variant, affinity: int | None, *, every_test: bool, measured: bool) -> Any:
        """Submit one variant's task (to the worker of island `affinity`, any worker if that one
        is busy or gone), or its evaluation when it is refused here. The tests covering the
        variant's edited lines go first, and only the tests the host selects run unless
        `every_test`: the worker sees no patch."""
        refused = self.evaluator.refusal(variant)
        if refused is not None:
            return Evaluation(Status.TAMPERED, variant.tree_hash, detail=refused)
        if self.evaluator.written_by_model(variant) and not self.evaluator.canaries.learned:
            self.evaluator.learn_canaries()  # here: the workers get the canaries with the job
        job = self._scatter_job()
        order = self.evaluator.training_order(variant)
        selected = None if every_test else self.evaluator.selection(variant)
        workers = self.worker_of(affinity)
        return self.client.submit(
            evaluate_on_worker,
            job,
            {file: variant.sources[file] for file in variant.changed_files},
            variant.tree_hash,
            list(order) if order != self.evaluator.test_order else None,
            None if selected is None else sorted(selected),
            measured,
            pure=False,
            **({"workers": workers, "allow_other_workers": True} if workers else {}),
        )

    def worker_of(self, island: int | None) -> list[str] | None:
        """The worker an island's evaluations go to: the workers in address order, island by
        island in turn (None: any worker)."""
        if island is None:
            return None
        addresses = sorted(self.client.scheduler_info().get("workers", {}))
        return [addresses[island % len(addresses)]] if addresses else None

    def _taken(self, variant: Variant, future: Any) -> Evaluation:
        """A finished task's evaluation (a worker's failure: BackendError)."""
        try:
            data = future.result()
        except BackendError:
            raise
        except Exception as error:
            raise BackendError(f"a Dask worker failed to evaluate a variant: {_one_line(error)}") from None
        return self._received(variant, data)

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
