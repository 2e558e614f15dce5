"""The language-model operator: a model proposes a new version of one function, in one of its modes.

Modes (weighted by `modes`): `rewrite` asks for the whole function anew; `diff` for
SEARCH/REPLACE blocks against it (mutators.llm.diff); `crossover` shows the function as two
archive members have it and asks for one version with the strengths of both. Any prompt may
carry inspirations (the archive's best and most diverse versions of the function, with their
measurements), the variant's measurements and, for repair, the failing training tests' output
(held-out tests never reach a prompt).

A proposal is made in two steps, so that many can be in flight: `prepare` takes every random
choice (function, mode, model, partner) and submits the request; `finish` takes the reply (in
the order proposals were prepared), reads it (mutators.llm.replies) and checks it: it must
parse, be the same function, change it, and not be a version the operator already proposed
there, nearly (mutators.llm.novelty); an optional reviewer pass asks the model to critique it.
What the model can mend goes back to it in a bounded retry (it does not parse, does not apply,
is the wrong kind of code, reaches for the test machinery, the reviewer objects; and in the
next generation, its tests failed); what is no news (the same code, a version already tried)
is counted and not asked again. A reply that passes becomes a
`Proposal`, and `edits` turns that into edits of the patch, carrying the source so that
applying them again never asks the model.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
import numpy as np

from gi.model.edits import (
    AddDefinition,
    AddImport,
    AppendCode,
    DeleteStatement,
    Edit,
    InsertCode,
    ReplaceFunction,
    WriteStatement,
    WrittenCode,
)
from gi.model.errors import EditError
from gi.model.guard import risky_names
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program, parse_quietly
from gi.model.sites import Location, SiteKind
from mutators.base import BaseOperator, Deferred, Member, MutationContext, OperatorUsage, Outcome, choose_site
from mutators.llm.client import Hold, LLMClient, LLMStoppedError, Reply, Sample, Usage
from mutators.llm.local import Change, local_changes
from mutators.llm.locate import function_in_variant, gone, removals
from mutators.llm.models import Arm, Models
from mutators.llm.novelty import Novelty, normalised_tokens, similarity
from mutators.llm.prompts import GOALS, MODES, Prompts
from mutators.llm.replies import NewCode, RejectionError, apply_diff, extract_function, read_code
from mutators.llm.stats import Counts, LLMStats

#: Characters of failing test output a prompt may carry.
FAILURE_CHARS = 3000
#: Samples of one prompt that may give nothing new (the same function, or a program the
#: search already has) before that prompt is not asked again.
FRUITLESS_LIMIT = 2
#: Lines above the function a prompt shows.
CONTEXT_LINES = 12


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


@dataclass(frozen=True)
class _Made:
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


#: The columns of the run's accounting a mode's rejected replies fill (see `Counts`).
OUTCOME_COLUMNS = ("unparseable", "not_applied", "wrong_kind", "tampering", "no_ops", "not_novel", "reviewer",
                   "failed_tests", "retries", "reviews")  # fmt: skip

#: Follow-ups (offspring that failed their tests) waiting to be asked; older ones are dropped.
FOLLOW_UPS = 8


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
    chain: _Chain | None = None

    @property
    def label(self) -> str:
        """How the search names the offspring it makes: the operator and the mode."""
        return f"llm.{self.mode}"


@dataclass
class _Attempt:
    """One reply of a proposal: what was asked, and what the reply alone decided."""

    reply: Reply
    payload: dict[str, Any]
    code: NewCode | None = None
    rejection: RejectionError | None = None
    #: The reviewer's reply about `code`, when one was asked.
    review: Reply | None = None


#: What the model can mend when told (no news, `no_op`, is not asked again).
MENDABLE = frozenset({"unparseable", "not_applied", "wrong_kind", "tampering", "reviewer"})


class _Chain:
    """A proposal's replies, followed as they come back: each read and checked where it
    arrives (what the reply alone decides: it parses, applies, is the right code, changes
    something, is not tampering; the reviewer's verdict), and a retry that feeds the failure
    back sent at once, on requests held for it (`Hold`), while the retries last. So a proposal
    that needs a retry does not hold up those behind it, and nothing the search decides
    depends on when the replies come. `done` gives the attempts, in order."""

    def __init__(self, operator: LLMOperator, pending: Pending, hold: Hold, index: int, retries: int) -> None:
        self.operator = operator
        self.pending = pending
        self.hold = hold
        self.index = index
        self.retries = retries
        self.attempts: list[_Attempt] = []
        self.done: Future[list[_Attempt]] = Future()

    def follow(self, reply: Reply, payload: dict[str, Any]) -> None:
        attempt = _Attempt(reply, payload)
        self.attempts.append(attempt)
        reply.when_done(lambda _: self._guarded(self._arrived, attempt))

    def _guarded(self, step: Callable[[_Attempt], None], attempt: _Attempt) -> None:
        try:
            step(attempt)
        except BaseException as error:  # an offline miss, say: raised where the search takes it
            if not self.done.done():
                self.done.set_exception(error)

    def _end(self) -> None:
        if not self.done.done():
            self.done.set_result(self.attempts)

    def _arrived(self, attempt: _Attempt) -> None:
        operator, pending = self.operator, self.pending
        try:
            sample = attempt.reply.peek()
        except pending.arm.client.api_error:
            return self._end()
        try:
            code = operator._read(pending, sample.text)
            operator._check(pending, code)
        except RejectionError as rejection:
            attempt.rejection = rejection
            return self._again(attempt, sample.text)
        attempt.code = code
        if not operator.reviewer:
            return self._end()
        review = self._send(operator.review_payload(pending, code))
        if review is None:
            return self._end()  # no request left for a review: the proposal stands on its own
        attempt.review = review
        review.when_done(lambda _: self._guarded(self._reviewed, attempt))
        return None

    def _reviewed(self, attempt: _Attempt) -> None:
        assert attempt.review is not None and attempt.code is not None
        try:
            verdict = attempt.review.peek().text
        except self.pending.arm.client.api_error:
            return self._end()
        if "APPROVE" in verdict.upper()[:200]:
            return self._end()
        attempt.code = None
        attempt.rejection = RejectionError("reviewer", f"a reviewer objected: {verdict.strip()[:1500]}")
        return self._again(attempt, attempt.reply.peek().text)

    def _again(self, attempt: _Attempt, text: str) -> None:
        """Feed the failure back while the retries last."""
        assert attempt.rejection is not None
        if attempt.rejection.kind not in MENDABLE or len(self.attempts) > self.retries:
            return self._end()
        payload = self.operator._retry_payload(attempt.payload, text, str(attempt.rejection))
        reply = self._send(payload)
        if reply is None:
            return self._end()
        return self.follow(reply, payload)

    def _send(self, payload: dict[str, Any]) -> Reply | None:
        """Send on the held requests (the proposal's sample index: deterministic keys)."""
        try:
            return self.pending.arm.client.submit(payload, self.index, self.hold, held=True)
        except LLMStoppedError:
            return None


def _same_tree(first: str, second: str) -> bool:
    try:
        return ast.dump(parse_quietly(first)) == ast.dump(parse_quietly(second))
    except SyntaxError:
        return False


def prompt_hash(payload: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


class LLMOperator(BaseOperator):
    """Propose new versions of functions, written by one or several language models."""

    name = "llm"
    description = "ask a language model to rewrite, edit or merge a function, for the run's goal"
    waits = True
    writes_code = True

    def __init__(
        self,
        models: Models | LLMClient,
        goal: str,
        prompts: Prompts | None = None,
        *,
        modes: Mapping[str, float] | None = None,
        feedback_retries: int = 1,
        reviewer: bool = False,
        inspirations: int = 0,
        novelty: float = 1.0,
        patience: int | None = None,
        share: float = 0.0,
    ) -> None:
        if goal not in GOALS:
            raise ValueError(f"unknown goal {goal!r}; goals: {sorted(GOALS)}")
        modes = dict(modes or {"rewrite": 1.0})
        unknown = set(modes) - set(MODES)
        if unknown or not any(weight > 0 for weight in modes.values()) or any(w < 0 for w in modes.values()):
            raise ValueError(f"modes are weights (not all 0) of {list(MODES)}, got {modes}")
        self.models = models if isinstance(models, Models) else Models([models])
        self.goal = goal
        self.prompts = prompts or Prompts()
        self.modes = {mode: float(weight) for mode, weight in modes.items() if weight > 0}
        self.feedback_retries = feedback_retries
        self.reviewer = reviewer
        self.inspirations = inspirations
        self.novelty = Novelty(novelty)
        self.patience = patience
        #: The share of a generation's new edits the model makes (`mutators.llm`).
        self.fraction = share
        self.stats = LLMStats()
        #: How often each prompt was asked: the next ask takes the next sample.
        self.asked: dict[str, int] = {}
        #: Samples of each prompt that gave nothing new; see FRUITLESS_LIMIT.
        self.fruitless: dict[str, int] = {}
        #: The archive as the last generation left it (`learn`), for inspirations and partners.
        self.archive: tuple[Member, ...] = ()
        #: The edits made since the last `learn`, and where each came from.
        self._made: dict[Edit, _Made] = {}
        #: Proposals whose offspring failed their tests: asked again first (see `learn`).
        self.follow_ups: list[FollowUp] = []
        #: Offspring that entered the archive, per mode; requests when the last one did.
        self.successes: dict[str, int] = {}
        #: Offspring that improved on the original (see `Outcome.improved`), per mode; the first
        #: one of the run and of each mode, with what it took to get there.
        self.improvements: dict[str, int] = {}
        self.first_improvement: dict[str, Any] | None = None
        self.firsts: dict[str, dict[str, Any]] = {}
        self.requests_at_success = 0
        self.replanned = False
        #: What the overseer did, for the run's warnings.
        self.notes: list[str] = []
        self._versions: dict[tuple[str, Location], str | None] = {}

    # --- what the engine reads ---------------------------------------------------------------

    @property
    def client(self) -> LLMClient:
        """The first model's client (its settings name the run's model in reports)."""
        return self.models.first

    @property
    def spent(self) -> Usage:
        """Every model's requests, tokens, cost and verdict, added up."""
        return self.client.budget.usage

    def stopped(self) -> str | None:
        reason = self.spent.stopped
        return None if reason is None else f"the language model stopped: {reason}"

    def state(self) -> dict[str, Any]:
        """Everything a resumed or replayed run needs to go on as this one would (JSON)."""
        return {
            "asked": dict(self.asked),
            "fruitless": dict(self.fruitless),
            "session": self.client.session,
            "usage": self.spent.to_json(),
            "models": self.models.state(),
            "stats": self.stats.to_json(),
            "novelty": self.novelty.state(),
            "modes": dict(self.modes),
            "successes": dict(self.successes),
            "improvements": dict(self.improvements),
            "first_improvement": self.first_improvement,
            "firsts": dict(self.firsts),
            "requests_at_success": self.requests_at_success,
            "replanned": self.replanned,
            "notes": list(self.notes),
            "follow_ups": [follow.to_json() for follow in self.follow_ups],
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Continue from `state()` saved by an interrupted run (an older run saved less)."""
        self.asked = dict(state.get("asked", {}))
        self.fruitless = dict(state.get("fruitless", {}))
        if "session" in state:
            for arm in self.models:
                arm.client.session = state["session"]
        if "usage" in state:
            self.client.budget.usage = Usage.from_json(state["usage"])
        self.models.restore(state.get("models", {}))
        self.stats = LLMStats.from_json(state.get("stats", {}))
        self.novelty.restore(state.get("novelty", {}))
        self.modes = dict(state.get("modes", self.modes))
        self.successes = dict(state.get("successes", {}))
        self.improvements = dict(state.get("improvements", {}))
        self.first_improvement = state.get("first_improvement")
        self.firsts = dict(state.get("firsts", {}))
        self.requests_at_success = int(state.get("requests_at_success", 0))
        self.replanned = bool(state.get("replanned", False))
        self.notes = list(state.get("notes", []))
        self.follow_ups = [FollowUp.from_json(follow) for follow in state.get("follow_ups", [])]

    def share(self) -> float | None:
        return self.fraction

    def warnings(self) -> list[str]:
        missing = sorted({arm.client.key_missing for arm in self.models if arm.client.key_missing})
        keys = [f"{name} (llm.api_key_env) is not set: requests go without an API key" for name in missing]
        return keys + self.notes

    def usage(self) -> OperatorUsage:
        """Every model's spending, and per mode (the accounting's rows "llm.rewrite", ...) what
        its replies came to besides proposals."""
        parts = {
            f"{self.name}.{mode}": OperatorUsage(
                tokens=counts.prompt_tokens + counts.completion_tokens,
                cost=counts.cost,
                outcomes={kind: getattr(counts, kind) for kind in OUTCOME_COLUMNS},
            )
            for mode, counts in self.stats.modes.items()
        }
        total = self.spent
        return OperatorUsage(total.requests, total.tokens, total.cost, total.seconds, parts=parts)

    def report(self, accounting: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
        """summary.json's `llm`: the model's settings (the key's variable name, never its value),
        usage and verdict; per mode and per model, what became of the proposals (`parse_rate`:
        replies whose code could be read; `apply_rate`: of those, the ones whose change fitted;
        `pass_rate`: evaluated offspring that passed every training test); the improvements, what
        each cost, and what the first one took."""
        settings, usage, stats = self.client.settings, self.spent, self.stats
        rows = [row for name, row in accounting.items() if name.split(".")[0] == self.name]
        evaluated, passing = sum(r.get("evaluated", 0) for r in rows), sum(r.get("passing", 0) for r in rows)
        improvements = sum(self.improvements.values())
        modes = {}
        for mode, counts in stats.modes.items():
            row = accounting.get(f"{self.name}.{mode}", {})
            modes[mode] = {**counts.to_json(), **{key: row.get(key, 0) for key in ("evaluated", "passing", "front")},
                           "pass_rate": _rate(row.get("passing", 0), row.get("evaluated", 0)),
                           "improvements": self.improvements.get(mode, 0),
                           "first_improvement": self.firsts.get(mode)}  # fmt: skip
        models = {
            arm.name: {
                **stats.models.get(arm.name, Counts()).to_json(),
                "requests": arm.client.usage.requests,
                "successes": arm.successes,
                "weight": arm.weight,
            }
            for arm in self.models
        }
        return {
            "base_url": settings.base_url, "model": settings.model, "api": settings.api,
            "api_key_env": settings.api_key_env, "goal": self.goal, "requests": usage.requests,
            "cache_hits": usage.cache_hits, "failures": usage.failures, "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens, "cost": round(usage.cost, 6),
            "seconds": round(usage.seconds, 3), "proposals": stats.proposals, "edits": stats.edits,
            "replies": stats.replies,
            "parse_rate": None if stats.parse_rate is None else round(stats.parse_rate, 4),
            "apply_rate": None if stats.total.apply_rate is None else round(stats.total.apply_rate, 4),
            "pass_rate": _rate(passing, evaluated),
            "improvements": improvements,
            "tokens_per_improvement": round(usage.tokens / improvements) if improvements else None,
            "cost_per_improvement": round(usage.cost / improvements, 6) if improvements else None,
            "first_improvement": self.first_improvement,
            "modes": modes, "models": models, "model_choice": self.models.choice,
            "stopped": usage.stopped, "notes": list(self.notes),
            "errors": usage.errors[:10], "rejected": stats.rejected[:20],
        }  # fmt: skip

    def note_duplicate(self, edit: Edit) -> None:
        """The search already had the program `edit` made: a fruitless sample of its prompt."""
        hashed = getattr(edit, "prompt_hash", "")
        if hashed:
            self.fruitless[hashed] = self.fruitless.get(hashed, 0) + 1

    # --- proposing ----------------------------------------------------------------------------

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        """Ask the model and wait: one edit (a change of several statements as one rewrite of
        the function), or None when the model is stopped, the prompt keeps giving nothing new,
        no usable reply came, or the reply adds imports or helpers (`propose_edits` has them)."""
        edits = self.propose_edits(program, patch, rng, context)
        if len(edits) <= 1:
            return edits[0] if edits else None
        if not all(isinstance(edit, WrittenCode | DeleteStatement) for edit in edits) or any(
            isinstance(edit, AddImport | AddDefinition) for edit in edits
        ):
            return None
        made = self._made[edits[0]]
        carrier = next(edit for edit in edits if isinstance(edit, WrittenCode))
        whole = ReplaceFunction(
            made.site, made.version, model=made.model, mode=made.mode,
            prompt_tokens=carrier.prompt_tokens, completion_tokens=carrier.completion_tokens,
        )  # fmt: skip
        self._made[whole] = made
        return whole

    def propose_edits(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> tuple[Edit, ...]:
        """Ask the model and wait: the edits its reply makes, () for none."""
        pending = self.prepare(program, patch, rng, context)
        proposal = None if pending is None else self.answer(pending)
        return () if proposal is None else self.edits(program, patch, proposal)

    def prepare(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Pending | None:
        """Choose a function the patch has not taken away (weighted like any site), a mode, a
        model and for crossover a partner, and submit the request; None when the model is
        stopped or there is nothing to ask."""
        if self.spent.stopped:
            return None
        while self.follow_ups:
            pending = self._follow_up(program, patch, self.follow_ups.pop(0))
            if pending is not None:
                return pending
        taken = removals(patch)
        site = choose_site(
            program.sites_of(SiteKind.FUNCTION), rng, context, lambda s: not gone(s.location, taken)
        )  # fmt: skip
        if site is None:
            return None
        mode = self._mode(rng)
        arm = self.models.choose(rng)
        found = function_in_variant(program, patch, site.location)
        if found is None:
            return None
        module, function, above = found
        partner = self._partner(program, site.location, module.code_for_node(function.with_changes(leading_lines=())),
                                rng) if mode == "crossover" else None  # fmt: skip
        if mode == "crossover" and partner is None:
            mode = "rewrite"  # no archive member has another version of this function yet
        variant = apply(program, patch)
        payload, fields = self._payload(
            program, variant, site.location, module, function, above, context, arm.client, mode, partner
        )
        hashed = prompt_hash(payload)
        if self.fruitless.get(hashed, 0) >= FRUITLESS_LIMIT:
            return None
        pending = Pending(
            mode, site.location, function.name.value, fields["code"], module, function.asynchronous is not None,
            fields["def_line"], fields["decorators"], payload, hashed, arm,
        )  # fmt: skip
        if not self._start(pending):
            return None
        mode_counts, model_counts = self.stats.of(mode, arm.name)
        mode_counts.proposals += 1
        model_counts.proposals += 1
        return pending

    def _follow_up(self, program: Program, patch: Patch, follow: FollowUp) -> Pending | None:
        """Ask again about a version whose tests failed, with their output, for the function as
        `patch` has it (None when the patch took the function away)."""
        found = function_in_variant(program, patch, follow.site)
        arm = self.models.arm(follow.model)
        if found is None or arm is None:
            return None
        module, function, _ = found
        whole = module.code_for_node(function.with_changes(leading_lines=()))
        bare = module.code_for_node(function.with_changes(leading_lines=(), decorators=(), lines_after_decorators=()))
        def_line = bare[: len(bare) - len(module.code_for_node(function.body))]
        pending = Pending(
            follow.mode, follow.site, function.name.value, follow.version.strip("\n"), module,
            function.asynchronous is not None, def_line, whole[: len(whole) - len(bare)], follow.payload,
            prompt_hash(follow.payload), arm, attempts=follow.attempts,
        )  # fmt: skip
        if not self._start(pending):
            return None
        mode_counts, model_counts = self.stats.of(follow.mode, arm.name)
        for counts in (mode_counts, model_counts):
            counts.proposals += 1
            counts.retries += 1
        return pending

    def _start(self, pending: Pending) -> bool:
        """Submit the proposal's request, keeping requests for its retries (and reviews), and
        follow its replies as they come (`_Chain`); False when a budget forbids the request."""
        client, payload = pending.arm.client, pending.payload
        retries = self.feedback_retries - pending.attempts
        reviews = (retries + 1) if self.reviewer else 0
        hold = client.hold(payload, retries + reviews)
        index = self.asked.get(pending.prompt_hash, 0)
        try:
            reply = client.submit(payload, index, hold)
        except LLMStoppedError:
            return False
        self.asked[pending.prompt_hash] = index + 1
        pending.chain = _Chain(self, pending, hold, index, retries)
        pending.chain.follow(reply, payload)
        return True

    def _mode(self, rng: np.random.Generator) -> str:
        """The mode of the next proposal (with one mode, nothing is drawn)."""
        if len(self.modes) == 1:
            return next(iter(self.modes))
        names = list(self.modes)
        weights = np.array([self.modes[name] for name in names], dtype=float)
        return names[int(rng.choice(len(names), p=weights / weights.sum()))]

    def finish(self, deferred: Deferred, program: Program, patch: Patch) -> tuple[Edit, ...]:
        """The edits the prepared proposal makes to `patch`, once its reply has come."""
        assert isinstance(deferred, Pending)
        proposal = self.answer(deferred)
        return () if proposal is None else self.edits(program, patch, proposal)

    def answer(self, pending: Pending) -> Proposal | None:
        """Take the proposal's replies (read, checked and retried as they came: `_Chain`) into
        the accounts, in the order the search asks; reject a version the operator already
        proposed there; the proposal, or None."""
        mode_counts, model_counts = self.stats.of(pending.mode, pending.arm.name)
        both = (mode_counts, model_counts)
        chain = pending.chain
        assert chain is not None
        try:
            attempts = chain.done.result()
            accepted: tuple[_Attempt, Sample] | None = None
            for number, attempt in enumerate(attempts):
                if number:
                    for counts in both:
                        counts.retries += 1
                sample = self._take(attempt.reply, both)
                if attempt.review is not None:
                    for counts in both:
                        counts.reviews += 1
                    self._take(attempt.review, both)
                if sample is None:
                    break
                if attempt.rejection is not None:
                    self._rejected(pending, attempt.rejection, both)
                elif attempt.code is not None:
                    accepted = attempt, sample
            if accepted is None:
                return None
            attempt, sample = accepted
            assert attempt.code is not None
            if self.novelty.is_known(str(pending.site), attempt.code.function):
                self._rejected(pending, RejectionError("not_novel", f"that version of `{pending.name}` (or one"
                               " differing only in names, comments or layout) was tried already"), both)  # fmt: skip
                return None
            for counts in both:
                counts.edits += 1
            self.novelty.add(str(pending.site), attempt.code.function)
            return Proposal(pending.mode, pending.site, attempt.code, pending.arm.name, pending.prompt_hash,
                            sample.prompt_tokens, sample.completion_tokens, attempt.payload, sample.text,
                            pending.attempts + len(attempts) - 1)  # fmt: skip
        finally:
            pending.arm.client.budget.release(chain.hold)
            pending.arm.trials += 1
            for counts in both:
                counts.seconds += time.perf_counter() - pending.started

    def _rejected(self, pending: Pending, rejection: RejectionError, counts: Sequence[Counts]) -> None:
        for each in counts:
            each.reject(rejection.kind)
        self.stats.rejected.append(f"{pending.mode}: {rejection.kind}: {rejection}")
        if rejection.kind in ("no_op", "not_novel"):  # no news: a fruitless sample of its prompt
            self.fruitless[pending.prompt_hash] = self.fruitless.get(pending.prompt_hash, 0) + 1

    def _take(self, reply: Reply, counts: Sequence[Counts]) -> Sample | None:
        """A reply's sample, counted; None when the request failed (the client counted that)."""
        try:
            sample = reply.result()
        except reply.client.api_error:
            return None
        cost = reply.client.cost_of(sample.prompt_tokens, sample.completion_tokens) if not sample.cached else 0.0
        for each in counts:
            each.replies += 1
            each.prompt_tokens += sample.prompt_tokens
            each.completion_tokens += sample.completion_tokens
            each.cost += cost
        return sample

    def _read(self, pending: Pending, text: str) -> NewCode:
        """The reply's code, by mode and API."""
        if "prompt" in pending.payload:  # a completion
            if pending.mode == "diff":
                source = pending.decorators + apply_diff("<<<<<<< SEARCH\n" + text, pending.current)
            else:  # it continues the def line; the decorators stay
                source = pending.decorators + extract_function(text, pending.name, pending.def_line)
        elif pending.mode == "diff":
            source = apply_diff(text, pending.current)
        else:
            source = extract_function(text, pending.name)
        return read_code(source, pending.name, module=pending.module, is_async=pending.is_async)

    def _check(self, pending: Pending, code: NewCode) -> None:
        """Reject a version that changes nothing, or reaches for the test machinery (what the
        reply alone decides; novelty is judged when the search takes the proposal)."""
        if not code.imports and not code.definitions and _same_tree(code.function, pending.current):
            raise RejectionError("no_op", f"that is `{pending.name}` as it is; change it to {GOALS[self.goal]}")
        # Judged beside the file as the variant has it: its imports say what `sys.` names.
        added = "\n".join([pending.module.code, *code.imports, *code.definitions, code.function])
        risky = sorted(risky_names(added) - risky_names(pending.module.code))
        if risky:
            raise RejectionError("tampering", f"the code uses {', '.join(risky)}, which code under test has no use"
                                 " for; do without")  # fmt: skip

    def review_payload(self, pending: Pending, code: NewCode) -> dict[str, Any]:
        """The request that asks the model to critique a proposal (the reviewer's pass)."""
        fields = {"goal": GOALS[self.goal], "name": pending.name, "code": pending.current,
                  "new": "\n".join([*code.imports, *code.definitions, code.function]).strip()}  # fmt: skip
        system, user = self.prompts.review_system.format(**fields), self.prompts.review_user.format(**fields)
        if pending.arm.client.settings.api == "completions":  # a base model continues a verdict line
            return {"prompt": f"{system}\n\n{user}\n\nVerdict:"}
        return {"messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}

    def _retry_payload(self, payload: dict[str, Any], reply: str, error: str) -> dict[str, Any]:
        """The request that feeds a failure back: the conversation so far and what went wrong
        (for a completion, the rejected attempt as comments above the prompt)."""
        if "messages" in payload:
            return {"messages": [*payload["messages"], {"role": "assistant", "content": reply},
                                 {"role": "user", "content": self.prompts.retry.format(error=error)}]}  # fmt: skip
        rejected = "\n".join(f"# {line}" for line in reply.strip().splitlines()[:40])
        return {"prompt": f"# A rejected attempt ({error.splitlines()[0]}):\n{rejected}\n\n{payload['prompt']}"}

    # --- what goes into a prompt --------------------------------------------------------------

    def _payload(
        self, program: Program, variant: Variant, location: Location, module: cst.Module, function: cst.FunctionDef,
        above: list[str], context: MutationContext, client: LLMClient, mode: str, partner: Member | None,
    ) -> tuple[dict[str, Any], dict[str, str]]:  # fmt: skip
        """The request for a proposal on `function`, and the fields its templates were given."""
        whole = module.code_for_node(function.with_changes(leading_lines=()))
        bare = module.code_for_node(function.with_changes(leading_lines=(), decorators=(), lines_after_decorators=()))
        decorators = whole[: len(whole) - len(bare)]
        def_line = bare[: len(bare) - len(module.code_for_node(function.body))]
        feedback = context.feedback(variant) if context.feedback is not None else None
        failures = ""
        if self.goal == "repair" and feedback is not None and feedback.failures:
            failures = f"\nThe failing tests say:\n```\n{feedback.failures[-FAILURE_CHARS:]}\n```\n"
        other = other_objectives = ""
        if partner is not None:
            other = self._version(program, partner.patch, location) or ""
            other_objectives = _measured(partner.objectives)
        fields = {
            "goal": GOALS[self.goal], "name": function.name.value, "file": location.file, "code": whole.strip("\n"),
            "context": "\n".join(above[-CONTEXT_LINES:]).strip("\n"),
            "objectives": _measured(feedback.objectives if feedback else {}), "failures": failures,
            "inspirations": self._inspirations(program, location, whole, function.name.value),
            "other": other.strip("\n"), "other_objectives": other_objectives, "def_line": def_line,
            "decorators": decorators, "error": "", "new": "",
        }  # fmt: skip
        if client.settings.api == "chat":
            system, user = self.prompts.chat(mode)
            messages = [{"role": "system", "content": system.format(**fields)},
                        {"role": "user", "content": user.format(**fields)}]  # fmt: skip
            return {"messages": messages}, fields
        return {"prompt": self.prompts.completion_for(mode).format(**fields)}, fields

    def _version(self, program: Program, patch: Patch, location: Location) -> str | None:
        """The function at `location` as the program `patch` makes has it (None if gone)."""
        key = (patch.key(), location)
        if key not in self._versions:
            found = function_in_variant(program, patch, location)
            self._versions[key] = (
                None if found is None else found[0].code_for_node(found[1].with_changes(leading_lines=()))
            )
        return self._versions[key]

    def _others(self, program: Program, location: Location, current: str) -> list[tuple[Member, str]]:
        """Archive members whose version of the function differs from `current`, with it."""
        seen = {current}
        found = []
        for member in self.archive:
            version = self._version(program, member.patch, location)
            if version is not None and version not in seen:
                seen.add(version)
                found.append((member, version))
        return found

    def _partner(self, program: Program, location: Location, current: str, rng: np.random.Generator) -> Member | None:
        others = self._others(program, location, current)
        return others[int(rng.integers(len(others)))][0] if others else None

    def _inspirations(self, program: Program, location: Location, current: str, name: str) -> str:
        """Up to `inspirations` other versions of the function from the archive: the best in
        each objective first, then those least like the ones chosen (by normalised tokens)."""
        if not self.inspirations:
            return ""
        others = self._others(program, location, current)
        if not others:
            return ""
        chosen: list[tuple[Member, str]] = []
        for index in range(len(others[0][0].minimised)):
            best = min(others, key=lambda pair: pair[0].minimised[index])
            if best not in chosen and len(chosen) < self.inspirations:
                chosen.append(best)
        tokens = {version: normalised_tokens(version) for _, version in others}
        while len(chosen) < min(self.inspirations, len(others)):
            rest = [pair for pair in others if pair not in chosen]
            chosen.append(
                min(rest, key=lambda pair: max(similarity(tokens[pair[1]], tokens[c[1]]) for c in chosen or [pair]))
            )
        shown = "".join(
            f"\n({_measured(member.objectives)})\n```python\n{version.strip()}\n```\n" for member, version in chosen
        )
        return f"\nOther versions of `{name}` the search has found, with their measurements:\n{shown}"

    # --- edits --------------------------------------------------------------------------------

    def edits(self, program: Program, patch: Patch, proposal: Proposal) -> tuple[Edit, ...]:
        """The edits a proposal makes to `patch`: its imports and helpers, each an edit of its
        own, then the function's change as statement edits where it is local (checked: with
        them the patch makes exactly the proposed function), else as a rewrite of the whole
        function. The reply's tokens are carried by the first of them; () when none can be made."""
        site, code = proposal.site, proposal.code
        origin: dict[str, Any] = {"model": proposal.model, "prompt_hash": proposal.prompt_hash, "mode": proposal.mode}
        try:
            added: list[Edit] = [AddImport(_import_position(program, site.file), line, **origin)
                                 for line in code.imports]  # fmt: skip
            top = Location(site.file, site.path.split(".")[0])
            added += [AddDefinition(top, definition, **origin) for definition in code.definitions]
            function = self._function_edits(program, Patch((*patch.edits, *added)), proposal, origin)
        except EditError:
            return ()
        made = [*added, *function]
        if not made:
            return ()
        carrier = next((i for i, edit in enumerate(made) if isinstance(edit, WrittenCode | ReplaceFunction)), None)
        if carrier is not None:  # (a change that only deletes statements carries no code)
            made[carrier] = _with_tokens(made[carrier], proposal.prompt_tokens, proposal.completion_tokens)
        spent = (self.spent.requests, self.spent.tokens, self.spent.cost)
        remembered = _Made(proposal.mode, proposal.model, site, code.function, proposal.payload, proposal.reply,
                           proposal.attempts, spent)  # fmt: skip
        for edit in made:
            self._made[edit] = remembered
        return tuple(made)

    def _function_edits(self, program: Program, patch: Patch, proposal: Proposal, origin: dict[str, Any]) -> list[Edit]:
        """The edits that give the function its new version after `patch`."""
        site, source = proposal.site, proposal.code.function
        current = self._version(program, patch, site)
        if current is not None and _same_tree(current, source):
            return []  # only imports or helpers changed
        changes = local_changes(program, site, source)
        if changes:
            local = [_change_edit(change, origin) for change in changes]
            made = self._version(program, Patch((*patch.edits, *local)), site)
            if made is not None and _same_tree(made, source):
                return local
        return [ReplaceFunction(site, source, **origin)]

    # --- learning from the generation ---------------------------------------------------------

    def learn(self, outcomes: Sequence[Outcome], members: Sequence[Member]) -> None:
        """Take in what became of the generation's offspring: the archive and population for the
        next prompts, each model's and mode's successes and improvements, failures to feed
        back, and the overseer's verdict."""
        self.archive = tuple(member for member in members if member.objectives is not None)
        self._versions.clear()
        for outcome in outcomes:
            made = next((self._made[edit] for edit in outcome.edits if edit in self._made), None)
            if made is None:
                continue
            if outcome.evaluated and not outcome.passing and made.attempts < self.feedback_retries:
                failures = outcome.failures[-FAILURE_CHARS:] or "(no output)"
                error = f"with this version the tests fail:\n```\n{failures}\n```"
                payload = self._retry_payload(made.payload, made.reply, error)
                self.follow_ups.append(FollowUp(made.mode, made.site, made.model, made.version, payload,
                                                made.attempts + 1))  # fmt: skip
                for counts in self.stats.of(made.mode, made.model):
                    counts.failed_tests += 1
                del self.follow_ups[:-FOLLOW_UPS]
            if not outcome.entered_archive:
                continue
            if outcome.improved:
                self.improvements[made.mode] = self.improvements.get(made.mode, 0) + 1
                requests, tokens, cost = made.spent
                first = {"mode": made.mode, "model": made.model, "evaluations": outcome.evaluations,
                         "requests": requests, "tokens": tokens, "cost": round(cost, 6)}  # fmt: skip
                self.firsts.setdefault(made.mode, first)
                if self.first_improvement is None:
                    self.first_improvement = first
            self.successes[made.mode] = self.successes.get(made.mode, 0) + 1
            arm = self.models.arm(made.model)
            if arm is not None:
                arm.successes += 1
            self.requests_at_success = self.spent.requests
        self._made.clear()
        self._oversee()

    def _oversee(self) -> None:
        """After `patience` requests without an offspring entering the archive, re-plan the
        modes once (towards those that succeeded; all modes if one was used), then stop."""
        if self.patience is None or self.spent.stopped:
            return
        idle = self.spent.requests - self.requests_at_success
        if idle < self.patience:
            return
        if not self.replanned:
            self.replanned = True
            self.requests_at_success = self.spent.requests
            used = list(self.modes) if len(self.modes) > 1 else list(MODES)
            self.modes = {
                mode: (self.successes.get(mode, 0) + 1) / (self.stats.modes.get(mode, Counts()).proposals + 2)
                for mode in used
            }
            plan = ", ".join(f"{mode} {weight:.2f}" for mode, weight in self.modes.items())
            self.notes.append(f"the overseer re-planned the model after {idle} requests without an offspring"
                              f" entering the archive: modes {plan}")  # fmt: skip
            return
        self.spent.stopped = (
            f"the overseer stopped it: {idle} requests without an offspring entering the archive"
            f" (llm.patience = {self.patience})"
        )


def _with_tokens(edit: Edit, prompt_tokens: int, completion_tokens: int) -> Edit:
    """The edit carrying what its reply cost (an edit of model-written code)."""
    assert isinstance(edit, WrittenCode | ReplaceFunction)
    return dataclasses.replace(edit, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


def _change_edit(change: Change, origin: dict[str, Any]) -> Edit:
    """The edit that makes one local change, carrying where the code came from."""
    if change.action == "delete":
        return DeleteStatement(change.target)
    kind = {"write": WriteStatement, "insert": InsertCode, "append": AppendCode}[change.action]
    return kind(change.target, change.source, **origin)


def _import_position(program: Program, file: str) -> Location:
    """Where an added import goes: before the file's first statement that is neither its
    docstring nor a `from __future__` import."""
    body = program.modules[file].body
    for index, statement in enumerate(body):
        if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
            small = statement.body[0]
            if index == 0 and isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString):
                continue
            module = small.module if isinstance(small, cst.ImportFrom) else None
            if isinstance(module, cst.Name) and module.value == "__future__":
                continue
        return Location(file, f"body[{index}]")
    raise EditError(f"{file} has no statement an import could go before")


def _rate(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def _measured(objectives: Mapping[str, float] | None) -> str:
    if objectives is None:
        return "broken"
    return ", ".join(f"{name} = {value:.4g}" for name, value in objectives.items()) or "not measured yet"
