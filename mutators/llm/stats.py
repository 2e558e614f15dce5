"""What became of the model operator's proposals, per mode and per model."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gi.mutators.llm.replies import RejectionKind


@dataclass
class Counts:
    """One mode's (or one model's) proposals and what became of them."""

    proposals: int = 0
    #: Replies taken (from the cache or the server), retries included: what the rates share out.
    replies: int = 0
    unparseable: int = 0
    not_applied: int = 0
    wrong_kind: int = 0
    #: Code that reaches for the test machinery (gi.model.guard): never evaluated.
    tampering: int = 0
    no_ops: int = 0
    not_novel: int = 0
    reviewer: int = 0
    failed_tests: int = 0
    #: Requests that fed a failure back, and reviewer passes asked for.
    retries: int = 0
    reviews: int = 0
    edits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0

    def reject(self, kind: RejectionKind) -> None:
        attribute = "no_ops" if kind == "no_op" else kind
        setattr(self, attribute, getattr(self, attribute) + 1)

    @property
    def parse_rate(self) -> float | None:
        """The share of replies whose code (or blocks) could be read; None when no reply came."""
        return 1 - self.unparseable / self.replies if self.replies else None

    @property
    def apply_rate(self) -> float | None:
        """The share of readable replies whose change fitted the code (blocks found, the right
        function); None when none was readable."""
        parsed = self.replies - self.unparseable
        return 1 - (self.not_applied + self.wrong_kind) / parsed if parsed else None

    def to_json(self) -> dict[str, Any]:
        rates = {"parse_rate": self.parse_rate, "apply_rate": self.apply_rate}
        return {
            **dataclasses.asdict(self),
            "cost": round(self.cost, 6),
            "seconds": round(self.seconds, 3),
            **{name: None if rate is None else round(rate, 4) for name, rate in rates.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Counts:
        names = {field.name for field in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})


@dataclass
class LLMStats:
    """The operator's counts: per mode, per model, and the first reasons replies were rejected."""

    modes: dict[str, Counts] = dataclasses.field(default_factory=dict)
    models: dict[str, Counts] = dataclasses.field(default_factory=dict)
    rejected: list[str] = dataclasses.field(default_factory=list)

    def of(self, mode: str, model: str) -> tuple[Counts, Counts]:
        return self.modes.setdefault(mode, Counts()), self.models.setdefault(model, Counts())

    @property
    def total(self) -> Counts:
        """Every mode's counts added up."""
        total = Counts()
        for counts in self.modes.values():
            for field in dataclasses.fields(Counts):
                setattr(total, field.name, getattr(total, field.name) + getattr(counts, field.name))
        return total

    # The totals by name, as the summary and accounting read them.
    @property
    def proposals(self) -> int:
        return self.total.proposals

    @property
    def replies(self) -> int:
        return self.total.replies

    @property
    def unparseable(self) -> int:
        return self.total.unparseable

    @property
    def wrong_kind(self) -> int:
        return self.total.wrong_kind

    @property
    def no_ops(self) -> int:
        return self.total.no_ops

    @property
    def edits(self) -> int:
        return self.total.edits

    @property
    def parse_rate(self) -> float | None:
        return self.total.parse_rate

    def to_json(self) -> dict[str, Any]:
        return {
            "modes": {name: counts.to_json() for name, counts in self.modes.items()},
            "models": {name: counts.to_json() for name, counts in self.models.items()},
            "rejected": self.rejected[-20:],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LLMStats:
        return cls(
            {name: Counts.from_json(counts) for name, counts in data.get("modes", {}).items()},
            {name: Counts.from_json(counts) for name, counts in data.get("models", {}).items()},
            list(data.get("rejected", [])),
        )
