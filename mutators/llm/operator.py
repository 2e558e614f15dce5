"""The language-model operator: a model proposes a new version of one function, in one of its modes.

Modes (weighted by `modes`): `rewrite` asks for the whole function anew; `diff` for
SEARCH/REPLACE blocks against it (gi.mutators.llm.diff); `crossover` shows the function as two
archive members have it and asks for one version with the strengths of both. Any prompt may
carry inspirations (the archive's best and most diverse versions of the function, with their
measurements), the variant's measurements and, for repair, the failing training tests' output
(held-out tests never reach a prompt): gi.mutators.llm.payloads builds the requests.

A proposal is made in two steps, so that many can be in flight: `prepare` takes every random
choice (function, mode, model, partner) and submits the request; its replies are read and
checked as they arrive (gi.mutators.llm.chain: it must parse, be the same function, change it,
not reach for the test machinery; an optional reviewer pass asks the model to critique it),
and what the model can mend goes back to it in a bounded retry (it does not parse, does not
apply, is the wrong kind of code, reaches for the test machinery, the reviewer objects; and in
the next generation, its tests failed). `finish` takes the replies in the order the search asks
for them (a generational search: the order proposals were prepared; a steady-state one: the
order they came in, which the run records; `Pending.arrival` says when they have) and rejects a
version the operator already proposed there, nearly
(gi.mutators.llm.novelty); what is no news (the same code, a version already tried) is counted
and not asked again. A reply that passes becomes a `Proposal`, and `edits` turns that into
edits of the patch (gi.mutators.llm.edits), carrying the source so that applying them again never
asks the model. What became of it all is in gi.mutators.llm.accounts; gi.mutators.llm.overseer
re-plans or stops a model that spends without progress.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from gi.model.edits import Edit
from gi.model.patch import Patch, apply
from gi.model.program import Program
from gi.model.sites import Location, SiteKind
from gi.mutators.base import BaseOperator, Deferred, Member, MutationContext, OperatorUsage, Outcome, choose_site
from gi.mutators.llm.accounts import Accounts
from gi.mutators.llm.chain import Chain
from gi.mutators.llm.client import LLMClient, LLMStoppedError, Sample, Usage
from gi.mutators.llm.edits import one_rewrite, proposal_edits
from gi.mutators.llm.locate import function_in_variant, gone, removals
from gi.mutators.llm.models import Models
from gi.mutators.llm.novelty import Novelty
from gi.mutators.llm.overseer import Overseer
from gi.mutators.llm.payloads import FAILURE_CHARS, Payloads, function_parts
from gi.mutators.llm.prompts import GOALS, MODES, Prompts
from gi.mutators.llm.proposals import Attempt, FollowUp, Made, Pending, Proposal, prompt_hash
from gi.mutators.llm.replies import RejectionError
from gi.mutators.llm.stats import Counts, LLMStats

#: Samples of one prompt that may give nothing new (the same function, or a program the
#: search already has) before that prompt is not asked again.
FRUITLESS_LIMIT = 2
#: Follow-ups (offspring that failed their tests) waiting to be asked; older ones are dropped.
FOLLOW_UPS = 8


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
        self.payloads = Payloads(goal, prompts or Prompts(), inspirations)
        self.modes = {mode: float(weight) for mode, weight in modes.items() if weight > 0}
        self.feedback_retries = feedback_retries
        self.reviewer = reviewer
        self.novelty = Novelty(novelty)
        #: The share of a generation's new edits the model makes (`mutators.llm`).
        self.fraction = share
        self.accounts = Accounts()
        self.overseer = Overseer(patience)
        #: How often each prompt was asked: the next ask takes the next sample.
        self.asked: dict[str, int] = {}
        #: Samples of each prompt that gave nothing new; see FRUITLESS_LIMIT.
        self.fruitless: dict[str, int] = {}
        #: The edits made since the last `learn`, and where each came from.
        self._made: dict[Edit, Made] = {}
        #: Proposals whose offspring failed their tests: asked again first (see `learn`).
        self.follow_ups: list[FollowUp] = []
        #: Proposals submitted and not yet taken (`answer`), by identity.
        self.in_flight: dict[int, Pending] = {}

    # --- what the engine reads ---------------------------------------------------------------

    @property
    def client(self) -> LLMClient:
        """The first model's client (its settings name the run's model in reports)."""
        return self.models.first

    @property
    def spent(self) -> Usage:
        """Every model's requests, tokens, cost and verdict, added up."""
        return self.client.budget.usage

    @property
    def stats(self) -> LLMStats:
        """What became of the proposals, per mode and per model."""
        return self.accounts.stats

    @property
    def successes(self) -> dict[str, int]:
        """Offspring that entered the archive, per mode."""
        return self.accounts.successes

    @property
    def notes(self) -> list[str]:
        """What the overseer did, for the run's warnings."""
        return self.overseer.notes

    def stopped(self) -> str | None:
        reason = self.spent.stopped
        return None if reason is None else f"the language model stopped: {reason}"

    def state(self) -> dict[str, Any]:
        """Everything a resumed or replayed run needs to go on as this one would (JSON). The
        usage leaves out what proposals still in flight counted: a resumed run asks for them
        again (`resume`), which counts them as the requests they were."""
        with self.client.budget.lock:
            flying = list(self.in_flight.values())
            usage = self.spent.without([pending.tally for pending in flying])
            models = self.models.state()
            for arm in self.models:
                own = [pending.tally for pending in flying if pending.arm is arm]
                models[arm.name]["usage"] = arm.client.usage.without(own).to_json()
        return {
            "asked": dict(self.asked),
            "fruitless": dict(self.fruitless),
            "session": self.client.session,
            "usage": usage.to_json(),
            "models": models,
            "novelty": self.novelty.state(),
            "modes": dict(self.modes),
            **self.accounts.state(),
            **self.overseer.state(),
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
        self.novelty.restore(state.get("novelty", {}))
        self.modes = dict(state.get("modes", self.modes))
        self.accounts.restore(state)
        self.overseer.restore(state)
        self.follow_ups = [FollowUp.from_json(follow) for follow in state.get("follow_ups", [])]

    def replaying(self, recorded: Mapping[str, Any]) -> None:
        """A replay asks as the recorded run's session: the replies that run's requests got count
        as requests again (`LLMClient.submit`), so what counts them (the budget, the overseer's
        patience) decides as it did in the run."""
        if "session" in recorded:
            for arm in self.models:
                arm.client.session = recorded["session"]
                arm.client.replaying = True

    def share(self) -> float | None:
        return self.fraction

    def warnings(self) -> list[str]:
        missing = sorted({arm.client.key_missing for arm in self.models if arm.client.key_missing})
        keys = [f"{name} (llm.api_key_env) is not set: requests go without an API key" for name in missing]
        return keys + self.notes

    def usage(self) -> OperatorUsage:
        """Every model's spending, and per mode (the accounting's rows "llm.rewrite", ...) what
        its replies came to besides proposals."""
        return self.accounts.usage(self.name, self.spent)

    def report(self, accounting: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
        """summary.json's `llm` (see `Accounts.report`)."""
        return self.accounts.report(self.name, self.goal, self.models, self.notes, accounting)

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
        made = self._made[edits[0]]
        whole = one_rewrite(edits, made)
        if whole is not None:
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
        mode = self._mode(rng, context.modes)
        arm = self.models.choose(rng)
        found = function_in_variant(program, patch, site.location)
        if found is None:
            return None
        module, function, above = found
        current = module.code_for_node(function.with_changes(leading_lines=()))
        partner = self.payloads.partner(program, site.location, current, rng) if mode == "crossover" else None
        if mode == "crossover" and partner is None:
            mode = "rewrite"  # no archive member has another version of this function yet
        variant = apply(program, patch)
        payload, fields = self.payloads.proposal(
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
        _, decorators, def_line = function_parts(module, function)
        pending = Pending(
            follow.mode, follow.site, function.name.value, follow.version.strip("\n"), module,
            function.asynchronous is not None, def_line, decorators, follow.payload, prompt_hash(follow.payload), arm,
            attempts=follow.attempts,
        )  # fmt: skip
        if not self._start(pending):
            return None
        mode_counts, model_counts = self.stats.of(follow.mode, arm.name)
        for counts in (mode_counts, model_counts):
            counts.proposals += 1
            counts.retries += 1
        return pending

    def _start(self, pending: Pending, sample: int | None = None) -> bool:
        """Submit the proposal's request (the prompt's next sample, or `sample`: a proposal a
        checkpoint kept), keeping requests for its retries (and reviews), and follow its replies
        as they come (`Chain`); False when a budget forbids the request."""
        client, payload = pending.arm.client, pending.payload
        retries = self.feedback_retries - pending.attempts
        reviews = (retries + 1) if self.reviewer else 0
        hold = client.hold(payload, retries + reviews)
        index = self.asked.get(pending.prompt_hash, 0) if sample is None else sample
        try:
            reply = client.submit(payload, index, hold, tally=pending.tally)
        except LLMStoppedError:
            return False
        if sample is None:
            self.asked[pending.prompt_hash] = index + 1
        pending.chain = Chain(self.payloads, self.reviewer, pending, hold, index, retries)
        self.in_flight[id(pending)] = pending
        pending.chain.follow(reply, payload)
        return True

    def suspend(self, deferred: Deferred) -> dict[str, Any]:
        """What a checkpoint keeps of a proposal whose replies are awaited (see `resume`)."""
        assert isinstance(deferred, Pending)
        return deferred.to_json()

    def resume(self, saved: Any, program: Program, patch: Patch) -> Pending | None:
        """A proposal a checkpoint kept in flight, asked again as it was (the same request and
        sample: the reply cache has it if it came before the run stopped); None when its model
        or function is gone or a budget forbids it. Its choices and counts are in the restored
        state already: nothing is drawn or counted twice."""
        arm = self.models.arm(saved["model"])
        found = function_in_variant(program, patch, Location.from_json(saved["site"]))
        if arm is None or found is None:
            return None
        pending = Pending.from_json(saved, found[0], arm)
        return pending if self._start(pending, sample=int(saved["sample"])) else None

    def _mode(self, rng: np.random.Generator, given: Mapping[str, float] | None = None) -> str:
        """The mode of the next proposal, by the operator's weights or those `given` (an island's);
        with one mode, nothing is drawn."""
        modes = {name: weight for name, weight in given.items() if weight > 0} if given else self.modes
        if len(modes) == 1:
            return next(iter(modes))
        names = list(modes)
        weights = np.array([modes[name] for name in names], dtype=float)
        return names[int(rng.choice(len(names), p=weights / weights.sum()))]

    def finish(self, deferred: Deferred, program: Program, patch: Patch) -> tuple[Edit, ...]:
        """The edits the prepared proposal makes to `patch`, once its reply has come."""
        assert isinstance(deferred, Pending)
        proposal = self.answer(deferred)
        return () if proposal is None else self.edits(program, patch, proposal)

    def answer(self, pending: Pending) -> Proposal | None:
        """Take the proposal's replies (read, checked and retried as they came: `Chain`) into
        the accounts, in the order the search asks; reject a version the operator already
        proposed there; the proposal, or None."""
        mode_counts, model_counts = self.stats.of(pending.mode, pending.arm.name)
        both = (mode_counts, model_counts)
        chain = pending.chain
        assert chain is not None
        try:
            attempts = chain.done.result()
            accepted: tuple[Attempt, Sample] | None = None
            for number, attempt in enumerate(attempts):
                if number:
                    for counts in both:
                        counts.retries += 1
                sample = self.accounts.take(attempt.reply, both)
                if attempt.review is not None:
                    for counts in both:
                        counts.reviews += 1
                    self.accounts.take(attempt.review, both)
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
            self.in_flight.pop(id(pending), None)
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

    # --- edits --------------------------------------------------------------------------------

    def edits(self, program: Program, patch: Patch, proposal: Proposal) -> tuple[Edit, ...]:
        """The edits a proposal makes to `patch` (gi.mutators.llm.edits), remembered until the
        generation's outcomes come; () when none can be made."""
        made = proposal_edits(program, patch, proposal, self.payloads.version)
        if not made:
            return ()
        spent = (self.spent.requests, self.spent.tokens, self.spent.cost)
        remembered = Made(proposal.mode, proposal.model, proposal.site, proposal.code.function, proposal.payload,
                          proposal.reply, proposal.attempts, spent)  # fmt: skip
        for edit in made:
            self._made[edit] = remembered
        return tuple(made)

    # --- learning from the generation ---------------------------------------------------------

    def learn(self, outcomes: Sequence[Outcome], members: Sequence[Member]) -> None:
        """Take in what became of the generation's offspring: the archive and population for the
        next prompts, each model's and mode's successes and improvements, failures to feed
        back, and the overseer's verdict."""
        self.payloads.take_archive(tuple(member for member in members if member.objectives is not None))
        for outcome in outcomes:
            made = next((self._made[edit] for edit in outcome.edits if edit in self._made), None)
            if made is None:
                continue
            if outcome.evaluated and not outcome.passing and made.attempts < self.feedback_retries:
                failures = outcome.failures[-FAILURE_CHARS:] or "(no output)"
                error = f"with this version the tests fail:\n```\n{failures}\n```"
                payload = self.payloads.retry(made.payload, made.reply, error)
                self.follow_ups.append(FollowUp(made.mode, made.site, made.model, made.version, payload,
                                                made.attempts + 1))  # fmt: skip
                for counts in self.stats.of(made.mode, made.model):
                    counts.failed_tests += 1
                del self.follow_ups[:-FOLLOW_UPS]
            if not outcome.entered_archive:
                continue
            self.accounts.entered(made, outcome)
            arm = self.models.arm(made.model)
            if arm is not None:
                arm.successes += 1
            self.overseer.success(self._committed())
        self._made.clear()
        self.modes = self.overseer.oversee(self.modes, self.successes, self.stats, self.spent, self._committed())

    def _committed(self) -> int:
        """Requests sent, and kept for the retries of proposals in flight (see `Overseer`)."""
        budget = self.client.budget
        with budget.lock:
            return budget.usage.requests + budget.held
