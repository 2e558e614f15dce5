"""What an evaluation backend is (`Backend`: candidates in, evaluations out), and the local one.

A backend evaluates batches (`evaluate_many`: results in input order) and single variants as
workers free up (`submit`: a steady-state search). A submitted variant's result reaches
`done` as a thunk, called where the caller takes it in (the search's thread): it returns the
evaluation, or raises what evaluating raised.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from gi.engine.evaluation import Evaluator
from gi.model.errors import GIError
from gi.model.patch import Variant
from gi.model.results import Evaluation

#: What a submitted evaluation hands back: call it to get the evaluation (or the error).
Result = Callable[[], Evaluation]


class BackendError(GIError):
    """The evaluation backend cannot serve the run: no scheduler at the address, no worker, or a
    worker that cannot evaluate (gi missing there, say)."""

    exit_code = 2


class Backend(Protocol):
    """Evaluates batches of variants (results keep input order), or one variant at a time. Each
    runs the training tests the evaluator selects for it (tests.select), or with `every_test` all
    of them; without `measured`, only the tests run (a confirmation keeps the search's timing and
    static measures)."""

    def evaluate_many(
        self,
        variants: Iterable[Variant],
        on_done: Callable[[Evaluation], None] | None = None,
        where: Mapping[str, int] | None = None,
        *,
        every_test: bool = False,
        measured: bool = True,
    ) -> list[Evaluation]: ...

    def submit(
        self,
        variant: Variant,
        done: Callable[[Result], None],
        affinity: int | None = None,
        *,
        every_test: bool = False,
        measured: bool = True,
    ) -> None: ...

    def close(self) -> None: ...


class LocalBackend:
    """This machine: the evaluator's own threads (`Evaluator.evaluate_many`), and for single
    variants a pool of `evaluation.workers` threads kept for the run."""

    def __init__(self, evaluator: Evaluator) -> None:
        self.evaluator = evaluator
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def evaluate_many(
        self,
        variants: Iterable[Variant],
        on_done: Callable[[Evaluation], None] | None = None,
        where: Mapping[str, int] | None = None,
        *,
        every_test: bool = False,
        measured: bool = True,
    ) -> list[Evaluation]:
        """Evaluate the batch in this process's threads (`where`, the islands' workers, is for
        backends of several machines)."""
        return self.evaluator.evaluate_many(variants, on_done, every_test=every_test, measured=measured)

    def submit(
        self,
        variant: Variant,
        done: Callable[[Result], None],
        affinity: int | None = None,
        *,
        every_test: bool = False,
        measured: bool = True,
    ) -> None:
        """Evaluate one variant in the next free thread; `done` gets its result (`affinity` is for
        backends of several machines)."""
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.evaluator.settings.workers, thread_name_prefix="gi-evaluate")
            future = self._pool.submit(self.evaluator.evaluate, variant, every_test=every_test, measured=measured)

        def finished(result: Future[Evaluation]) -> None:
            done(result.result)

        future.add_done_callback(finished)

    def close(self) -> None:
        """Drop the variants not started, and wait for those running."""
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
                self._pool = None
