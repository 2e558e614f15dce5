"""What an evaluation backend is (`Backend`: candidates in, evaluations out), and the local one."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from gi.engine.evaluation import Evaluator
from gi.model.errors import GIError
from gi.model.patch import Variant
from gi.model.results import Evaluation


class BackendError(GIError):
    """The evaluation backend cannot serve the run: no scheduler at the address, no worker, or a
    worker that cannot evaluate (gi missing there, say)."""

    exit_code = 2


class Backend(Protocol):
    """Evaluates batches of variants; results keep input order. Each runs the training tests
    the evaluator selects for it (tests.select), or with `every_test` all of them; without
    `measured`, only the tests run (a confirmation keeps the search's timing and static measures)."""

    def evaluate_many(
        self,
        variants: Iterable[Variant],
        on_done: Callable[[Evaluation], None] | None = None,
        *,
        every_test: bool = False,
        measured: bool = True,
    ) -> list[Evaluation]: ...

    def close(self) -> None: ...


class LocalBackend:
    """This machine: the evaluator's own threads (`Evaluator.evaluate_many`)."""

    def __init__(self, evaluator: Evaluator) -> None:
        self.evaluator = evaluator

    def evaluate_many(
        self,
        variants: Iterable[Variant],
        on_done: Callable[[Evaluation], None] | None = None,
        *,
        every_test: bool = False,
        measured: bool = True,
    ) -> list[Evaluation]:
        """Evaluate the batch in this process's threads."""
        return self.evaluator.evaluate_many(variants, on_done, every_test=every_test, measured=measured)

    def close(self) -> None:
        """Nothing to release."""
