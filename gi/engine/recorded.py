"""Recorded measurements: what makes a run with timing objectives reproducible.

Timings steer a speed run's selection, and the model's prompts follow what was selected, so a
second run of the same config and seed measures other numbers, breeds other variants and asks
other prompts. Every measurement that steers a run is therefore recorded in its run store
under a key, and looked up before it is taken:

    output:original        the workload's result on the original (workload.check_output)
    timing:<generation>    the original's screening timing that generation's ratios use
    profile                cProfile of the workload on the original (hot functions)
    suspiciousness[:dstar] fault localisation's scores (Ochiai's, or D*'s)
    holdout:<tree hash>    a program's held-out test run (the front's members, the original)
    holdout_split          the test ids tests.holdout_fraction holds out
    differential_cases     the inputs and results tests.differential checks
    oracle_calls           the training tests' calls the behaviour oracle starts from (gi.engine.oracle)
    oracle:<tree hash>     the oracle's verdict on a program (a front member, a plausible patch)
    oracle_counterexamples the counterexamples tests.oracle_feedback added to the held-out tests
    speedup:<tree hash>    the rigorous re-measurement of a front member
    warm_check             whether the warm path gave the original the cold path's outcomes
    coverage               the lines each training test executes on the original, and the tests
                           whose coverage was measured
    confirmation:<hash>    every training test's run of a program that ran a selection of them
                           (tests.select) and would have counted as passing

A resumed run finds what it measured before it stopped in its own store. A replay
(`gi replay`) also looks in the recorded run's store, and takes that run's evaluations of
variants too; with the reply cache offline, it reaches the recorded front without measuring
or asking anything. Where the record lacks something (a run made by an older gi, say), the
replay measures it anew and says so in summary.json.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from gi.engine.run_folder import STORE_NAME
from gi.engine.store import RunStore
from gi.model.errors import StoreError
from gi.model.results import Evaluation

T = TypeVar("T")

MEASURED = "measured"
REPLAYED = "replayed"
#: A measurement a study of the finished run took (`gi validate`, `gi ablate`: held-out runs of
#: programs the run never checked); kept apart, so the run's `measurements` stay what it measured.
STUDY = "study"


class Measurements:
    """The run's recorded measurements, with those of a recorded run behind them when replaying."""

    def __init__(self, store: RunStore, recorded: RunStore | None = None) -> None:
        self.store = store
        self.recorded = recorded
        self._recorded_evaluations: dict[str, Evaluation] | None = None
        #: How a measurement taken now is marked: MEASURED during a run, STUDY after it.
        self.source = MEASURED

    @property
    def replaying(self) -> bool:
        return self.recorded is not None

    def get(self, key: str, measure: Callable[[], T], *, encode: Callable[[T], Any], decode: Callable[[Any], T]) -> T:
        """The measurement under `key`: recorded in this run, else in the recorded run (copied
        here), else taken now with `measure` and recorded."""
        found = self.lookup(key)
        if found is not None:
            return decode(found[0])
        value = measure()
        self.record(key, encode(value))
        return value

    def lookup(self, key: str) -> tuple[Any, str] | None:
        """The measurement under `key` and where it came from, if it is recorded here or (then
        copied here) in the recorded run; a recorded null is a record."""
        found = self.store.get_measurement(key)
        if found is None and self.recorded is not None:
            found = self.recorded.get_measurement(key)
            if found is not None:
                self.store.put_measurement(key, found[0], REPLAYED)
        return found

    def found(self, key: str) -> Any | None:
        """The recorded value under `key`, or None."""
        found = self.lookup(key)
        return None if found is None else found[0]

    def record(self, key: str, value: Any) -> None:
        """Record a measurement taken now (as JSON), marked as the run's or a study's (`source`)."""
        self.store.put_measurement(key, value, self.source)

    def recorded_evaluation(self, tree_hash: str) -> Evaluation | None:
        """The recorded run's evaluation of a program, when replaying."""
        if self.recorded is None:
            return None
        if self._recorded_evaluations is None:
            self._recorded_evaluations = self.recorded.evaluations()
        return self._recorded_evaluations.get(tree_hash)

    def provenance(self, evaluations: dict[str, Evaluation]) -> dict[str, Any]:
        """What this run measured and what it took from the recorded run, by kind (summary.json
        `measurements`): a fresh run measured everything; a replay that measured nothing
        reproduced its record. What studies of the finished run measured is counted apart
        (`studies`), never as the run's."""
        counts: dict[str, Counter[str]] = {MEASURED: Counter(), REPLAYED: Counter(), STUDY: Counter()}
        for key, source in self.store.measurement_sources().items():
            counts[source][key.partition(":")[0]] += 1
        for tree_hash, evaluation in evaluations.items():
            # A program confirmed by every training test stands by its confirmation, a measurement.
            confirmed = self.recorded.get_measurement(f"confirmation:{tree_hash}") if self.recorded else None
            replayed = self.recorded_evaluation(tree_hash) == evaluation or (
                confirmed is not None and Evaluation.from_json(confirmed[0]) == evaluation
            )
            counts[REPLAYED if replayed else MEASURED]["evaluation"] += 1
        return {
            "replayed_from": str(self.recorded.path.parent) if self.recorded is not None else None,
            MEASURED: dict(sorted(counts[MEASURED].items())),
            REPLAYED: dict(sorted(counts[REPLAYED].items())),
            "studies": dict(sorted(counts[STUDY].items())),
        }

    def close(self) -> None:
        if self.recorded is not None:
            self.recorded.close()


def as_is(value: T) -> T:
    """The encoding (and decoding) of a measurement that is already JSON."""
    return value


def check_recorded(folder: Path, fingerprint: dict[str, Any], *, given: bool) -> None:
    """Refuse, before a replay starts, a recorded run folder that is missing, not a run folder,
    or holds no finished run of this config; `given`: the folder came with --from (else it is
    the config's run folder)."""
    if not folder.is_dir():
        what = "no such folder" if not folder.exists() else "a file, not a run folder"
        if given:
            raise StoreError(f"--from {folder}: {what}; give the folder of the run to replay")
        raise StoreError(
            f"{folder}: no run store here ({what}); run the config first, or give the recorded run's folder with --from"
        )
    open_recorded(folder, fingerprint).close()


def open_recorded(folder: Path, fingerprint: dict[str, Any]) -> RunStore:
    """The store of the run folder to replay, checked to hold a finished run of this config."""
    store = RunStore(folder / STORE_NAME, read_only=True)
    try:
        if store.get_meta("config") != fingerprint:
            raise StoreError(f"{folder} holds a run of a different config (or another seed); replay it with its own")
        checkpoint = store.last_checkpoint()
        if checkpoint is None:
            raise StoreError(f"{folder}: the recorded run never finished a generation; there is nothing to replay")
    except BaseException:
        store.close()
        raise
    return store


def replay_comparison(recorded: RunStore, replay: RunStore) -> dict[str, bool]:
    """Whether the replay reached the recorded run's history (every generation's statistics)
    and its final archive (the same ids with the same patches)."""

    def archive(store: RunStore) -> list[tuple[str, Any]]:
        checkpoint = store.last_checkpoint()
        if checkpoint is None:
            return []
        return [(record.id, record.patch) for record in store.individuals(checkpoint.archive)]

    return {
        "history": _without_counts(recorded.history()) == _without_counts(replay.history()),
        "front": archive(recorded) == archive(replay),
    }


def _without_counts(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A run's per-generation statistics without its evaluation and cache-hit counts: a run
    that was interrupted and resumed counts a few evaluations twice, a replay does not."""
    return [{k: v for k, v in stats.items() if k not in ("evaluations", "cache_hits")} for stats in history]
