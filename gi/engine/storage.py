"""A run's storage: its folder (locked while the run lives), the run store, the recorded
measurements, and each generation's checkpoint and the restore from it.

A run folder belongs to one config (its fingerprint is in the store): opening it for another
config is refused unless the run there never finished a generation; `fresh` empties it first.
A replay reads a second, recorded run's store behind this one (`recorded`).
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gi.algorithms import Search
from gi.algorithms.variation import Candidate
from gi.engine.recorded import Measurements, open_recorded
from gi.engine.run_folder import STORE_NAME
from gi.engine.store import VERSIONS, Checkpoint, IndividualRecord, RunStore, tool_versions, version_problems
from gi.model.errors import StoreError
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.model.results import Evaluation
from gi.mutators import Operator
from gi.populations import Individual


def state_key(operator: Operator) -> str:
    """The store's meta key of an operator's state ("llm_state" for the language model's)."""
    return f"{operator.name}_state"


class RunStorage:
    """The run folder, locked for this process, with its store and recorded measurements."""

    def __init__(
        self,
        folder: Path,
        fingerprint: Any,
        *,
        fresh: bool = False,
        replay_of: Path | None = None,
        config_source: Path | None = None,
    ) -> None:
        """`fingerprint`: the config's, which the store must hold (or is given); `replay_of`:
        a recorded run folder whose store a replay reads; `config_source` names the config in
        the error when the folder cannot be made."""
        self.folder = folder
        #: Said at the start of the run: the stored or recorded run was made by another gi.
        self.version_warnings: list[str] = []
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(
                f"{config_source}: experiment.output: cannot make the run folder {folder} ({error.strerror or error})"
            ) from None
        self._lock = lock_run_folder(folder)
        try:
            self._open(fingerprint, fresh)
            recorded = None if replay_of is None else open_recorded(replay_of, fingerprint)
            if recorded is not None:
                refused, warning = version_problems(recorded.get_meta(VERSIONS), "replay it")
                if refused:
                    recorded.close()
                    raise StoreError(f"{replay_of}: {refused}")
                if warning:
                    self.version_warnings.append(warning)
        except BaseException:
            os.close(self._lock)
            raise
        self.measurements = Measurements(self.store, recorded)

    def _open(self, fingerprint: Any, fresh: bool) -> None:
        """Open the run store (emptied with `fresh`, or when it holds a run that never got past
        its first generation)."""
        if fresh:
            _empty(self.folder)
        self.store = RunStore(self.folder / STORE_NAME)
        held = self.store.get_meta("config")
        if held is not None and held != fingerprint:
            if self.store.last_checkpoint() is not None:
                self.store.close()
                raise StoreError(
                    f"{self.folder} holds a run of a different config; rerun with --fresh to replace it,"
                    " or change experiment.name or experiment.output"
                )
            # The earlier run never finished its first generation (its baseline failed, say):
            # nothing is lost by starting over with the corrected config.
            self.store.close()
            _empty(self.folder)
            self.store = RunStore(self.folder / STORE_NAME)
        self.store.set_meta("config", fingerprint)
        if self.store.last_checkpoint() is None:
            self.store.clear_measurements()  # nothing was built on them; the program may have changed
        else:
            refused, warning = version_problems(self.store.get_meta(VERSIONS), "resume it")
            if refused:
                self.store.close()
                raise StoreError(f"{self.folder}: {refused}, or start afresh with --fresh")
            if warning:
                self.version_warnings.append(warning)
        self.store.set_meta(VERSIONS, tool_versions())

    def evaluations(self) -> dict[str, Evaluation]:
        """Every evaluation the search stored, by tree hash."""
        return self.store.evaluations()

    def restore_operators(self, operators: Sequence[Operator]) -> None:
        """Give each operator the state it saved (a resumed run asks the model the same prompts
        for the same samples, and counts the requests it made); an operator with no saved
        state yet has its state saved at once (the model's session: a run killed before its
        first checkpoint still owns the requests it sent). A replay starting afresh first takes
        what the recorded run's operator saved (`Operator.replaying`: the model's session)."""
        recorded = self.measurements.recorded
        for operator in operators:
            saved = self.store.get_meta(state_key(operator))
            if saved is not None:
                operator.restore(saved)
                continue
            if recorded is not None and (theirs := recorded.get_meta(state_key(operator))) is not None:
                operator.replaying(theirs)
            if (state := operator.state()) is not None:
                self.store.set_meta(state_key(operator), state)

    def save_generation(
        self,
        search: Search,
        children: Sequence[Individual],
        stats: Mapping[str, Any],
        operators: Sequence[Operator],
        gap: dict[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        """The generation's checkpoint, in one transaction: its new individuals, the accounting,
        the search's and the operators' state, the generalisation-gap record and a `Checkpoint`
        (population and archive ids, generator state, statistics), and `meta` (the loop's own
        state, by key). A run killed at any moment resumes from the last one committed."""
        with self.store.transaction():
            for child in children:
                self.store.put_individual(
                    IndividualRecord(
                        child.id,
                        child.generation,
                        child.tree_hash,
                        child.patch.to_json(),
                        child.parents,
                        child.operator,
                    )
                )
            self.store.set_meta("accounting", search.accounting)
            self.store.set_meta("search_state", search.state())
            for operator in operators:
                state = operator.state()
                if state is not None:
                    self.store.set_meta(state_key(operator), state)
            if gap is not None:
                self.store.put_generalisation(search.generation, gap)
            for key, value in (meta or {}).items():
                self.store.set_meta(key, value)
            self.store.checkpoint(
                Checkpoint(
                    search.generation,
                    [individual.id for individual in search.population],
                    [individual.id for individual in search.archive.members],
                    _rng_state(search.rng),
                    dict(stats),
                )
            )

    def restore(
        self, search: Search, checkpoint: Checkpoint, program: Program, measured: Callable[[Variant], Evaluation | None]
    ) -> None:
        """Rebuild the search as `checkpoint` left it: its population and archive (each patch
        applied again and matched to its stored evaluation, `measured`), its state, the
        generator's state and the accounting."""
        state = self.store.get_meta("search_state") or {}
        others = search.stored_ids(state)
        named = list(dict.fromkeys([*checkpoint.population, *checkpoint.archive, *others]))
        records = {r.id: r for r in self.store.individuals(named)}
        rebuilt: dict[str, Individual] = {}
        for identifier, record in records.items():
            patch = Patch.from_json(record.patch)
            patch.check(program)
            variant = apply(program, patch)
            evaluation = measured(variant)
            if evaluation is None or variant.tree_hash != record.tree_hash:
                raise StoreError(f"{self.store.path}: individual {identifier} does not match its evaluation")
            candidate = Candidate(identifier, patch, variant, record.parents, record.operator)
            rebuilt[identifier] = search.individual(candidate, evaluation, record.generation)
        search.restore(
            checkpoint.generation,
            [rebuilt[i] for i in checkpoint.population],
            [rebuilt[i] for i in checkpoint.archive],
            state,
            {identifier: rebuilt[identifier] for identifier in others},
        )
        search.rng.bit_generator.state = checkpoint.rng
        search.accounting = self.store.get_meta("accounting") or {}

    def close(self) -> None:
        """Close the recorded measurements and the store, and release the folder's lock."""
        self.measurements.close()
        self.store.close()
        if self._lock >= 0:
            os.close(self._lock)
            self._lock = -1


def _rng_state(rng: np.random.Generator) -> dict[str, Any]:
    return dict(rng.bit_generator.state)


def lock_run_folder(folder: Path) -> int:
    """Hold an exclusive lock on the run folder for as long as this process lives (or until the
    descriptor is closed); a second `gi run` of the same folder is refused, not interleaved."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        raise StoreError(f"{folder}: another gi run is using this run folder; wait for it or stop it") from None
    return descriptor


def _empty(folder: Path) -> None:
    """Delete what a run folder holds, keeping the folder (and its lock)."""
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
