"""The overseer of the model operator: a model that spends requests without an offspring
entering the archive is re-planned once, then stopped, and the run's warnings say so."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gi.mutators.llm.client import Usage
from gi.mutators.llm.prompts import MODES
from gi.mutators.llm.stats import Counts, LLMStats


class Overseer:
    """Watches the requests since an offspring last entered the archive (`patience` of them
    allowed; None: never steps in). It counts the requests committed: those sent and those
    kept for the retries of proposals in flight, a number that, unlike the requests sent, does
    not depend on how fast the replies come (a steady-state search learns with proposals in
    flight)."""

    def __init__(self, patience: int | None) -> None:
        self.patience = patience
        self.requests_at_success = 0
        self.replanned = False
        #: What the overseer did, for the run's warnings.
        self.notes: list[str] = []

    def state(self) -> dict[str, Any]:
        return {"requests_at_success": self.requests_at_success, "replanned": self.replanned, "notes": list(self.notes)}

    def restore(self, state: Mapping[str, Any]) -> None:
        self.requests_at_success = int(state.get("requests_at_success", 0))
        self.replanned = bool(state.get("replanned", False))
        self.notes = list(state.get("notes", []))

    def success(self, requests: int) -> None:
        """An offspring entered the archive when the models had committed `requests`."""
        self.requests_at_success = requests

    def oversee(
        self, modes: dict[str, float], successes: Mapping[str, int], stats: LLMStats, spent: Usage, requests: int
    ) -> dict[str, float]:
        """The modes to go on with. After `patience` requests without an offspring entering the
        archive, re-plan the modes once (towards those that succeeded; all modes if one was
        used), then stop the model (`spent.stopped`, which every model shares)."""
        if self.patience is None or spent.stopped:
            return modes
        idle = requests - self.requests_at_success
        if idle < self.patience:
            return modes
        if not self.replanned:
            self.replanned = True
            self.requests_at_success = requests
            used = list(modes) if len(modes) > 1 else list(MODES)
            planned = {
                mode: (successes.get(mode, 0) + 1) / (stats.modes.get(mode, Counts()).proposals + 2) for mode in used
            }
            plan = ", ".join(f"{mode} {weight:.2f}" for mode, weight in planned.items())
            self.notes.append(f"the overseer re-planned the model after {idle} requests without an offspring"
                              f" entering the archive: modes {plan}")  # fmt: skip
            return planned
        spent.stopped = (
            f"the overseer stopped it: {idle} requests without an offspring entering the archive"
            f" (llm.patience = {self.patience})"
        )
        return modes
