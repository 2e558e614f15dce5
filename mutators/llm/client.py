"""The language-model client: the openai library against any OpenAI-compatible server.

It adds what a search needs on top of the library's own timeouts and retries (exponential
backoff on 429, 5xx, timeouts and lost connections): a cache of every reply, a pool that
keeps up to `concurrency` requests in flight, budgets on requests, tokens and money shared by
every model of a run, and a verdict when the server stays down. The API key is read from the
environment variable the config names, and never written anywhere.

A request is submitted (`submit`) and its reply taken (`Reply.result`) in the order the
search makes them, so everything the search decides from them (a budget spent, the server
down) falls at the same place however fast the replies come back: the requests in flight
change the wall time, never the run. Budgets are checked when a request is submitted,
against what the replies taken so far cost and the most that those in flight can cost.

A run keeps its requests across an interruption: the usage is part of the operator's saved
state, and the cache marks each entry with the session (the run) that asked for it. A resumed
run that finds in the cache a reply its own session asked for after the last checkpoint
counts it as the request it was, and a request its session sent without an answer coming
back counts once more, so `max_requests` holds across any number of interruptions.
"""

from __future__ import annotations

import dataclasses
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gi.mutators.base import OfflineMissError
from gi.mutators.llm.cache import ReplyCache, request_key

if TYPE_CHECKING:
    import openai

#: Consecutive failed requests (after the library's retries) before the server counts as down.
DOWN_AFTER = 3
#: Characters per token assumed when a request's prompt tokens are estimated before it is sent
#: (code runs at three to four; fewer is the safe side of a budget).
CHARS_PER_TOKEN = 2


@dataclass(frozen=True)
class LLMSettings:
    base_url: str
    model: str
    cache: Path
    api_key_env: str = "OPENAI_API_KEY"
    api: Literal["chat", "completions"] = "chat"
    temperature: float = 0.8
    max_tokens: int = 1024
    samples: int = 1
    timeout: float = 60.0
    retries: int = 3
    concurrency: int = 2
    max_requests: int | None = None
    max_total_tokens: int | None = None
    max_cost: float | None = None
    #: US dollars per million prompt and completion tokens, for the cost budget.
    price_prompt: float = 0.0
    price_completion: float = 0.0
    offline: bool = False
    #: What the reply cache keys the model by besides its name: the server's URL, unless the
    #: user names the model's revision (then a moved server keeps its cached replies).
    revision: str | None = None
    #: The run's seed, which the reply cache keys a reply by too: a run of another seed draws
    #: replies of its own from a sampling model (its runs are independent samples), and a rerun
    #: or replay of this seed finds this one's. Never sent to the server.
    seed: int | None = None


class LLMStoppedError(Exception):
    """The model can no longer be asked: a budget is spent or the server stays down."""


@dataclass(frozen=True)
class Sample:
    text: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool


@dataclass
class Usage:
    requests: int = 0
    cache_hits: int = 0
    #: Of `requests`, those a replay took from the recorded run's cache (sent by that run, not this one).
    replayed: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0
    stopped: str | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "errors": self.errors[-20:]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Usage:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})

    def without(self, tallies: list[Tally]) -> Usage:
        """This usage less what `tallies` counted (requests still in flight)."""
        return dataclasses.replace(
            self,
            requests=self.requests - sum(t.requests for t in tallies),
            cache_hits=self.cache_hits - sum(t.cache_hits for t in tallies),
            replayed=self.replayed - sum(t.replayed for t in tallies),
            errors=list(self.errors),
        )


@dataclass
class Tally:
    """What one proposal's requests have added to the usage so far (the client counts them under
    the budget's lock as it submits). A checkpoint taken while the proposal is in flight saves
    the usage without them; the resumed run asks again and counts them then."""

    requests: int = 0
    cache_hits: int = 0
    replayed: int = 0


class RequestPool:
    """Daemon threads that run up to `concurrency` requests at once.

    Daemon threads, so that a run stopped with Ctrl-C does not wait for replies it will never
    use (a request in flight when the run dies counts on resume; see the module's doc)."""

    def __init__(self, concurrency: int) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency is at least 1, got {concurrency}")
        self.concurrency = concurrency
        self._work: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]]] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def run(self, job: Callable[[], Any]) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if len(self._threads) < self.concurrency:
                thread = threading.Thread(target=self._serve, name=f"gi-llm-{len(self._threads)}", daemon=True)
                self._threads.append(thread)
                thread.start()
        self._work.put((future, job))
        return future

    def _serve(self) -> None:
        while True:
            future, job = self._work.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(job())
            except BaseException as error:  # handed to whoever takes the reply
                future.set_exception(error)


class Budget:
    """The limits every model of a run shares, and what has been spent against them."""

    def __init__(
        self,
        max_requests: int | None = None,
        max_total_tokens: int | None = None,
        max_cost: float | None = None,
    ) -> None:
        self.max_requests = max_requests
        self.max_total_tokens = max_total_tokens
        self.max_cost = max_cost
        self.usage = Usage()
        #: Requests submitted whose replies have not been taken: their most tokens and cost.
        self.outstanding_tokens = 0
        self.outstanding_cost = 0.0
        #: Requests held for the retries of proposals in flight (counted against the budget
        #: when held, so that sending one early decides nothing; see `Hold`).
        self.held = 0
        self.lock = threading.Lock()

    def reserve(self, tokens: int, cost: float, hold: Hold | None = None) -> None:
        """Count a request about to be sent, and keep what `hold` holds for its retries (as many
        as the budgets leave room for: a hold shrinks, a request is never refused for it), or
        raise LLMStoppedError if a budget forbids the request (the caller holds `lock`)."""
        u = self.usage
        if u.stopped:
            raise LLMStoppedError(u.stopped)
        if hold is not None:
            while hold.requests and not self._fits(1 + hold.requests, tokens + hold.tokens, cost + hold.cost):
                hold.requests, hold.tokens, hold.cost = (
                    hold.requests - 1,
                    hold.tokens - hold.each[0],
                    hold.cost - hold.each[1],
                )
        extra = hold.requests if hold is not None else 0
        tokens += hold.tokens if hold is not None else 0
        cost += hold.cost if hold is not None else 0.0
        reason = None
        if self.max_requests is not None and u.requests + self.held + extra + 1 > self.max_requests:
            reason = f"the request budget is spent ({self.max_requests} requests)"
        elif self.max_total_tokens is not None and (
            u.tokens >= self.max_total_tokens or u.tokens + self.outstanding_tokens + tokens > self.max_total_tokens
        ):
            reason = f"the token budget is spent ({self.max_total_tokens} tokens)"
        elif self.max_cost is not None and (
            u.cost >= self.max_cost or u.cost + self.outstanding_cost + cost > self.max_cost
        ):
            reason = f"the money budget is spent (${self.max_cost:g})"
        if reason:
            u.stopped = reason
            raise LLMStoppedError(reason)
        u.requests += 1
        self.held += extra
        self.outstanding_tokens += tokens
        self.outstanding_cost += cost

    def _fits(self, requests: int, tokens: int, cost: float) -> bool:
        """Whether every budget has room for that many more requests, tokens and money."""
        u = self.usage
        return (
            (self.max_requests is None or u.requests + self.held + requests <= self.max_requests)
            and (self.max_total_tokens is None or u.tokens + self.outstanding_tokens + tokens <= self.max_total_tokens)
            and (self.max_cost is None or u.cost + self.outstanding_cost + cost <= self.max_cost)
        )

    def keep(self, hold: Hold) -> None:
        """Keep what `hold` asks for if every budget allows it, else keep nothing (its proposal
        gets no retries); for a request answered from the cache (the caller holds `lock`)."""
        if self.usage.stopped or not self._fits(hold.requests, hold.tokens, hold.cost):
            hold.requests, hold.tokens, hold.cost = 0, 0, 0.0
        self.held += hold.requests
        self.outstanding_tokens += hold.tokens
        self.outstanding_cost += hold.cost

    def release(self, hold: Hold) -> None:
        """Give back what a hold kept and its proposal did not use."""
        with self.lock:
            self.held -= hold.requests
            self.outstanding_tokens -= hold.tokens
            self.outstanding_cost -= hold.cost
            hold.requests, hold.tokens, hold.cost = 0, 0, 0.0


@dataclass
class Hold:
    """Requests (with their most tokens and money) kept for a proposal's retries when its first
    request is submitted, in the order the search submits: a retry sent the moment a reply
    fails, from whichever thread and whenever that is, spends what was kept and decides
    nothing; what is left is given back when the search takes the proposal."""

    requests: int
    tokens: int
    cost: float
    #: What one retry may take of it.
    each: tuple[int, float] = (0, 0.0)


class LLMClient:
    """Asks one model for samples of a request, through the cache, the pool and the budget."""

    def __init__(
        self,
        settings: LLMSettings,
        *,
        pool: RequestPool | None = None,
        budget: Budget | None = None,
        session: str | None = None,
    ) -> None:
        self.settings = settings
        self.cache = ReplyCache(settings.cache)
        #: This model's own usage; `budget.usage` is every model's.
        self.usage = Usage()
        self.pool = pool or RequestPool(settings.concurrency)
        self.budget = budget or Budget(settings.max_requests, settings.max_total_tokens, settings.max_cost)
        #: The run that asks: a reply it asked for and finds again in the cache is its own request.
        self.session = session or uuid.uuid4().hex
        #: Whether `session` is a recorded run's that this one replays (its requests are that run's).
        self.replaying = False
        #: Keys of the requests this process sent: asking one again is a cache hit, not a reclaim.
        self._sent: set[str] = set()
        self._consecutive_failures = 0
        key = os.environ.get(settings.api_key_env)
        #: The name of the key's variable when it is unset or empty (a 401 or 403 says so).
        self.key_missing: str | None = None if key else settings.api_key_env
        import openai  # on first use: it takes a second to import, and most runs never need it

        self._client = openai.OpenAI(
            base_url=settings.base_url,
            # Local servers need no key; the library insists on one.
            api_key=key or "no-key",
            timeout=settings.timeout,
            max_retries=settings.retries,
        )
        #: The library's error for a failed request (after its retries).
        self.api_error: type[openai.APIError] = openai.APIError

    @property
    def stopped(self) -> str | None:
        return self.budget.usage.stopped

    def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The full request for a payload (messages or prompt) with the sampling parameters and
        what the cache keys the model by (its revision, else the server's URL) and the run's
        draw by (its seed)."""
        s = self.settings
        where = {"revision": s.revision} if s.revision else {"base_url": s.base_url}
        seed = {} if s.seed is None else {"seed": s.seed}
        return {"model": s.model, **where, "api": s.api, **payload, "temperature": s.temperature,
                "max_tokens": s.max_tokens, **seed}  # fmt: skip

    def sample(self, payload: dict[str, Any], index: int) -> Sample:
        """Sample number `index` of this request: from the cache, or asked of the model."""
        return self.submit(payload, index).result()

    def hold(self, payload: dict[str, Any], retries: int) -> Hold:
        """What to keep for `retries` retries of a request (each: its most, and a reply more)."""
        tokens, cost = self._most(self.request(payload))
        tokens += self.settings.max_tokens
        cost += self.cost_of(self.settings.max_tokens, 0)
        return Hold(retries, tokens * retries, cost * retries, (tokens, cost))

    def submit(
        self,
        payload: dict[str, Any],
        index: int,
        hold: Hold | None = None,
        *,
        held: bool = False,
        tally: Tally | None = None,
    ) -> Reply:
        """Start getting sample `index` of a request: answered from the cache at once, else
        counted against the budget and sent through the pool. Raises LLMStoppedError when a
        budget forbids the request, OfflineMissError when offline and not cached. With `hold`,
        the budget also keeps what the hold asks for (the retries of a proposal); `held` sends a
        request on what a hold kept (`hold`), without a budget check. `tally` adds up what the
        request counted (its proposal's)."""
        tally = tally or Tally()
        request = self.request(payload)
        keyed = {**request, "sample": index}
        key = request_key(keyed)
        entry = self.cache.entry(keyed)
        earlier = entry is not None and entry.get("session") == self.session and key not in self._sent
        if entry is not None and entry.get("reply") is not None:
            reply = entry["reply"]
            sample = Sample(reply["text"], reply["prompt_tokens"], reply["completion_tokens"], cached=True)
            if earlier and entry.get("primary", True):
                with self.budget.lock:
                    self._sent.add(key)
                return self._reclaimed(sample, hold, held, tally)  # asked before the run was interrupted
            with self.budget.lock:
                self.usage.cache_hits += 1
                self.budget.usage.cache_hits += 1
                tally.cache_hits += 1
                if hold is not None and not held:
                    self.budget.keep(hold)
            return Reply(self, sample=sample)
        if self.settings.offline:
            raise OfflineMissError(
                f"--offline: no cached reply for request {key[:12]} (sample {index}) to"
                f" {self.settings.model} in {self.settings.cache}"
            )
        with self.budget.lock:
            if earlier:  # sent by this run before it was interrupted, and never answered: it counted
                self.budget.usage.requests += 1
                self.usage.requests += 1
            if held:
                assert hold is not None
                tokens, cost = self._spend(hold)
            else:
                tokens, cost = self._most(request)
                self.budget.reserve(tokens, cost, hold)
            self.usage.requests += 1
            tally.requests += 1
            self._sent.add(key)
        self.cache.mark_sent(keyed, self.session)
        future = self.pool.run(lambda: self._ask(request, index))
        return Reply(self, future=future, reserved=(tokens, cost))

    def _reclaimed(self, sample: Sample, hold: Hold | None, held: bool, tally: Tally) -> Reply:
        """A reply this run's own session asked for: it counts as the request it was."""
        with self.budget.lock:
            if held:
                assert hold is not None
                reserved = self._spend(hold)
            else:
                reserved = (sample.prompt_tokens + sample.completion_tokens,
                            self.cost_of(sample.prompt_tokens, sample.completion_tokens))  # fmt: skip
                self.budget.reserve(*reserved, hold)
            self.usage.requests += 1
            tally.requests += 1
            if self.replaying:
                self.usage.replayed += 1
                self.budget.usage.replayed += 1
                tally.replayed += 1
        return Reply(self, sample=dataclasses.replace(sample, cached=False), reserved=reserved)

    def _spend(self, hold: Hold) -> tuple[int, float]:
        """Count a request sent on what `hold` kept (the caller holds the budget's lock); the
        most tokens and money it may take, which its reply gives back when taken."""
        if hold.requests <= 0:
            raise LLMStoppedError("a proposal's retries are spent")
        tokens, cost = hold.each
        hold.requests, hold.tokens, hold.cost = hold.requests - 1, hold.tokens - tokens, hold.cost - cost
        self.budget.held -= 1
        self.budget.usage.requests += 1
        return tokens, cost

    def cost_of(self, prompt_tokens: int, completion_tokens: int) -> float:
        s = self.settings
        return (prompt_tokens * s.price_prompt + completion_tokens * s.price_completion) / 1e6

    def _most(self, request: dict[str, Any]) -> tuple[int, float]:
        """The most tokens and money a request can take: its prompt estimated generously, every
        sample as long as `max_tokens` allows."""
        text = request.get("prompt") or "".join(m["content"] for m in request.get("messages", ()))
        prompt = len(text) // CHARS_PER_TOKEN + 16
        completion = self.settings.max_tokens * self.settings.samples
        return prompt + completion, self.cost_of(prompt, completion)

    def _ask(self, request: dict[str, Any], index: int) -> tuple[Sample, float]:
        """Send the request (in a pool thread); store every sample it gives in the cache."""
        s = self.settings
        started = time.perf_counter()
        try:
            if s.api == "chat":
                chat = self._client.chat.completions.create(
                    model=s.model, messages=request["messages"], temperature=s.temperature,
                    max_tokens=s.max_tokens, n=s.samples,
                )  # fmt: skip
                texts = [choice.message.content or "" for choice in chat.choices]
                usage = chat.usage
            else:
                completion = self._client.completions.create(
                    model=s.model, prompt=request["prompt"], temperature=s.temperature,
                    max_tokens=s.max_tokens, n=s.samples,
                )  # fmt: skip
                texts = [choice.text for choice in completion.choices]
                usage = completion.usage
        except self.api_error as error:
            raise _FailedError(error, time.perf_counter() - started) from error
        texts = texts or [""]
        prompt_tokens = usage.prompt_tokens if usage else 0
        completion_tokens = usage.completion_tokens if usage else 0
        share = completion_tokens // len(texts)
        # One request gives `samples` replies; they are stored as consecutive sample indices.
        for offset, text in enumerate(texts):
            self.cache.put(
                {**request, "sample": index + offset},
                {"text": text, "prompt_tokens": prompt_tokens if offset == 0 else 0, "completion_tokens": share},
                session=self.session,
                primary=offset == 0,
            )
        return Sample(texts[0], prompt_tokens, share, cached=False), time.perf_counter() - started

    def settle(
        self, sample: Sample | None, reserved: tuple[int, float], seconds: float, error: Exception | None
    ) -> None:
        """Take a reply into the accounts (in the order the search takes replies)."""
        tokens, cost = reserved
        with self.budget.lock:
            self.budget.outstanding_tokens -= tokens
            self.budget.outstanding_cost -= cost
            for usage in (self.usage, self.budget.usage):
                usage.seconds += seconds
            if sample is not None:
                self._consecutive_failures = 0
                spent = self.cost_of(sample.prompt_tokens, sample.completion_tokens)
                for usage in (self.usage, self.budget.usage):
                    usage.prompt_tokens += sample.prompt_tokens
                    usage.completion_tokens += sample.completion_tokens
                    usage.cost += spent
            elif error is not None:
                self._failed(error)

    def _failed(self, error: Exception) -> None:
        """Record a failed request (never the key's value); the third in a row stops the model
        (the caller holds the budget's lock)."""
        import openai

        status = error.status_code if isinstance(error, openai.APIStatusError) else None
        hint = f"; {self.key_missing} is not set" if status in (401, 403) and self.key_missing else ""
        message = f"{status} from the server{hint}: " if hint else ""
        message += f"{type(error).__name__}: {str(error)[:200]}"
        key = os.environ.get(self.settings.api_key_env)
        message = message.replace(key, "***") if key else message
        self._consecutive_failures += 1
        for usage in (self.usage, self.budget.usage):
            usage.failures += 1
            usage.errors.append(message)
        if self._consecutive_failures >= DOWN_AFTER:
            self.budget.usage.stopped = self.usage.stopped = (
                f"the server failed {DOWN_AFTER} requests in a row ({type(error).__name__}{hint})"
            )


class _FailedError(Exception):
    """A request that failed after the library's retries, with the seconds it took."""

    def __init__(self, error: openai.APIError, seconds: float) -> None:
        super().__init__(str(error))
        self.error = error
        self.seconds = seconds


class Reply:
    """A submitted request's reply: `result()` waits for it and takes it into the accounts."""

    def __init__(
        self,
        client: LLMClient,
        *,
        sample: Sample | None = None,
        future: Future[tuple[Sample, float]] | None = None,
        reserved: tuple[int, float] = (0, 0.0),
    ) -> None:
        self.client = client
        self._sample = sample
        self._future = future
        self._reserved = reserved
        self._settled = future is None and reserved == (0, 0.0)
        self._error: Exception | None = None

    def when_done(self, call: Callable[[Reply], None]) -> None:
        """Call `call(self)` when the reply has come: at once if it has (a cached reply), else
        in the pool thread that got it."""
        if self._future is None:
            call(self)
        else:
            self._future.add_done_callback(lambda _: call(self))

    def peek(self) -> Sample:
        """The sample once it has come, without taking it into the accounts (the search does
        that with `result`, in its own order); raises the library's APIError if it failed."""
        if self._future is None:
            assert self._sample is not None
            return self._sample
        try:
            return self._future.result()[0]
        except _FailedError as failed:
            raise failed.error from None

    def result(self) -> Sample:
        """The sample, once it has come (raises the library's APIError if the request failed)."""
        if not self._settled:
            self._settled = True
            seconds = 0.0
            if self._future is not None:
                try:
                    self._sample, seconds = self._future.result()
                except _FailedError as failed:
                    self._error, seconds = failed.error, failed.seconds
            self.client.settle(self._sample, self._reserved, seconds, self._error)
        if self._error is not None:
            raise self._error
        assert self._sample is not None
        return self._sample
