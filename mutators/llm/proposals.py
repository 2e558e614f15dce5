"""A proposal of the model operator, from its request to the edits it made: the records the
operator keeps of it (in flight, accepted, made, to be asked again)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import libcst as cst

from gi.model.sites import Location
from gi.mutators.llm.client import Reply, Tally
from gi.mutators.llm.models import Arm
from gi.mutators.llm.replies import NewCode, RejectionError

if TYPE_CHECKING:
    from gi.mutators.llm.chain import Chain


def prompt_hash(payload: Mapping[str, Any]) -> str:
    """A request's short content hash: the key of its samples asked and its fruitless ones."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class Pending:
    """A proposal in flight: what `prepare` decided, and the reply to come."""

    mode: str
    site: Location
    name: str
    #: The function as the variant has it (no leading lines), and its file as the variant has it.
    current: str
    module: cst.Module
    is_async: bool
    def_line: str
    decorators: str
    payload: dict[str, Any]
    prompt_hash: str
    arm: Arm
    #: Retries already spent on this proposal (a follow-up's earlier attempts).
    attempts: int = 0
    started: float = field(default_factory=time.perf_counter)
    #: Its replies as they come (`LLMOperator._start` sets it).
    chain: Chain | None = None
    #: What its requests have counted in the usage so far.
    tally: Tally = field(default_factory=Tally)

    def to_json(self) -> dict[str, Any]:
        """The proposal as a checkpoint keeps it while its replies are awaited: the request and
        the sample it asks for, to be asked again on resume (`LLMOperator.resume`)."""
        assert self.chain is not None
        return {"mode": self.mode, "site": self.site.to_json(), "name": self.name, "current": self.current,
                "is_async": self.is_async, "def_line": self.def_line, "decorators": self.decorators,
                "payload": self.payload, "model": self.arm.name, "attempts": self.attempts,
                "sample": self.chain.index}  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any], module: cst.Module, arm: Arm) -> Pending:
        """A proposal `to_json` kept, in the file as the variant has it (`module`), asked of `arm`."""
        return cls(data["mode"], Location.from_json(data["site"]), data["name"], data["current"], module,
                   bool(data["is_async"]), data["def_line"], data["decorators"], data["payload"],
                   prompt_hash(data["payload"]), arm, int(data["attempts"]))  # fmt: skip

    @property
    def label(self) -> str:
        """How the search names the offspring it makes: the operator and the mode."""
        return f"llm.{self.mode}"

    @property
    def arrival(self) -> Future[list[Attempt]] | None:
        """Done once the proposal's replies (retries and reviews too) are in and checked: the
        optional `Arriving` hook of a deferred proposal."""
        return None if self.chain is None else self.chain.done


@dataclass
class Attempt:
    """One reply of a proposal: what was asked, and what the reply alone decided."""

    reply: Reply
    payload: dict[str, Any]
    code: NewCode | None = None
    rejection: RejectionError | None = None
    #: The reviewer's reply about `code`, when one was asked.
    review: Reply | None = None


@dataclass(frozen=True)
class Proposal:
    """A reply that passed every check: the function's new code, and where it came from."""

    mode: str
    site: Location
    code: NewCode
    model: str
    prompt_hash: str
    prompt_tokens: int
    completion_tokens: int
    #: The request and reply that gave it, and the retries it took (for a follow-up).
    payload: dict[str, Any] = field(default_factory=dict, compare=False)
    reply: str = field(default="", compare=False)
    attempts: int = 0


@dataclass(frozen=True)
class Made:
    """What the operator remembers of an edit it made, until the generation's outcomes come."""

    mode: str
    model: str
    site: Location
    version: str
    payload: dict[str, Any]
    reply: str
    attempts: int
    #: What every model had spent when the reply was taken: requests, tokens, money.
    spent: tuple[int, int, float]


@dataclass(frozen=True)
class FollowUp:
    """A proposal whose offspring failed its tests, to be asked again with their output."""

    mode: str
    site: Location
    model: str
    #: The failed version, which a diff in the reply edits.
    version: str
    payload: dict[str, Any]
    attempts: int

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "site": self.site.to_json(), "model": self.model, "version": self.version,
                "payload": self.payload, "attempts": self.attempts}  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FollowUp:
        return cls(data["mode"], Location.from_json(data["site"]), data["model"], data["version"], data["payload"],
                   int(data["attempts"]))  # fmt: skip
