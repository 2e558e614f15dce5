"""A proposal's replies, read and checked where they arrive, with the retries that feed a
failure back (and the reviewer's pass) sent at once."""

from __future__ import annotations

import ast
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from gi.model.guard import risky_names
from gi.model.program import parse_quietly
from gi.mutators.llm.client import Hold, LLMStoppedError, Reply
from gi.mutators.llm.payloads import Payloads
from gi.mutators.llm.prompts import GOALS
from gi.mutators.llm.proposals import Attempt, Pending
from gi.mutators.llm.replies import NewCode, RejectionError, apply_diff, extract_function, read_code

#: What the model can mend when told (no news, `no_op`, is not asked again).
MENDABLE = frozenset({"unparseable", "not_applied", "wrong_kind", "tampering", "reviewer"})


class Chain:
    """A proposal's replies, followed as they come back: each read and checked where it
    arrives (what the reply alone decides: it parses, applies, is the right code, changes
    something, is not tampering; the reviewer's verdict), and a retry that feeds the failure
    back sent at once, on requests held for it (`Hold`), while the retries last. So a proposal
    that needs a retry does not hold up those behind it, and nothing the search decides
    depends on when the replies come. `done` gives the attempts, in order."""

    def __init__(
        self, payloads: Payloads, reviewer: bool, pending: Pending, hold: Hold, index: int, retries: int
    ) -> None:
        self.payloads = payloads
        self.reviewer = reviewer
        self.pending = pending
        self.hold = hold
        self.index = index
        self.retries = retries
        self.attempts: list[Attempt] = []
        self.done: Future[list[Attempt]] = Future()

    def follow(self, reply: Reply, payload: dict[str, Any]) -> None:
        attempt = Attempt(reply, payload)
        self.attempts.append(attempt)
        reply.when_done(lambda _: self._guarded(self._arrived, attempt))

    def _guarded(self, step: Callable[[Attempt], None], attempt: Attempt) -> None:
        try:
            step(attempt)
        except BaseException as error:  # an offline miss, say: raised where the search takes it
            if not self.done.done():
                self.done.set_exception(error)

    def _end(self) -> None:
        if not self.done.done():
            self.done.set_result(self.attempts)

    def _arrived(self, attempt: Attempt) -> None:
        pending = self.pending
        try:
            sample = attempt.reply.peek()
        except pending.arm.client.api_error:
            return self._end()
        try:
            code = read_reply(pending, sample.text)
            check_reply(pending, code, self.payloads.goal)
        except RejectionError as rejection:
            attempt.rejection = rejection
            return self._again(attempt, sample.text)
        attempt.code = code
        if not self.reviewer:
            return self._end()
        review = self._send(self.payloads.review(pending, code))
        if review is None:
            return self._end()  # no request left for a review: the proposal stands on its own
        attempt.review = review
        review.when_done(lambda _: self._guarded(self._reviewed, attempt))
        return None

    def _reviewed(self, attempt: Attempt) -> None:
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

    def _again(self, attempt: Attempt, text: str) -> None:
        """Feed the failure back while the retries last."""
        assert attempt.rejection is not None
        if attempt.rejection.kind not in MENDABLE or len(self.attempts) > self.retries:
            return self._end()
        payload = self.payloads.retry(attempt.payload, text, str(attempt.rejection))
        reply = self._send(payload)
        if reply is None:
            return self._end()
        return self.follow(reply, payload)

    def _send(self, payload: dict[str, Any]) -> Reply | None:
        """Send on the held requests (the proposal's sample index: deterministic keys)."""
        try:
            return self.pending.arm.client.submit(payload, self.index, self.hold, held=True, tally=self.pending.tally)
        except LLMStoppedError:
            return None


def read_reply(pending: Pending, text: str) -> NewCode:
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


def check_reply(pending: Pending, code: NewCode, goal: str) -> None:
    """Reject a version that changes nothing, or reaches for the test machinery (what the
    reply alone decides; novelty is judged when the search takes the proposal)."""
    if not code.imports and not code.definitions and same_tree(code.function, pending.current):
        raise RejectionError("no_op", f"that is `{pending.name}` as it is; change it to {GOALS[goal]}")
    # Judged beside the file as the variant has it: its imports say what `sys.` names.
    added = "\n".join([pending.module.code, *code.imports, *code.definitions, code.function])
    risky = sorted(risky_names(added) - risky_names(pending.module.code))
    if risky:
        raise RejectionError("tampering", f"the code uses {', '.join(risky)}, which code under test has no use"
                             " for; do without")  # fmt: skip


def same_tree(first: str, second: str) -> bool:
    """Whether two sources are the same program (layout and comments aside)."""
    try:
        return ast.dump(parse_quietly(first)) == ast.dump(parse_quietly(second))
    except SyntaxError:
        return False
