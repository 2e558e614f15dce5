"""The language-model client: the openai library against any OpenAI-compatible server.

It adds what a search needs on top of the library's own timeouts and retries (exponential
backoff on 429, 5xx, timeouts and lost connections): a cache of every reply, budgets on
requests, tokens and money, a limit on requests in flight, and a verdict when the server
stays down. The API key is read from the environment variable the config names, and never
written anywhere.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mutators.base import OfflineMissError
from mutators.llm.cache import ReplyCache, request_key

if TYPE_CHECKING:
    import openai

#: Consecutive failed requests (after the library's retries) before the server counts as down.
DOWN_AFTER = 3


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
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0
    stopped: str | None = None
    errors: list[str] = field(default_factory=list)


class LLMClient:
    """Asks the model for samples of a request, through the cache."""

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings
        self.cache = ReplyCache(settings.cache)
        self.usage = Usage()
        self._lock = threading.Lock()
        self._in_flight = threading.BoundedSemaphore(settings.concurrency)
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

    def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The full request for a payload (messages or prompt) with the sampling parameters."""
        s = self.settings
        return {"model": s.model, "api": s.api, **payload, "temperature": s.temperature, "max_tokens": s.max_tokens}

    def sample(self, payload: dict[str, Any], index: int) -> Sample:
        """Sample number `index` of this request: from the cache, or asked of the model."""
        request = self.request(payload)
        cached = self.cache.get({**request, "sample": index})
        if cached is not None:
            with self._lock:
                self.usage.cache_hits += 1
            return Sample(cached["text"], cached["prompt_tokens"], cached["completion_tokens"], cached=True)
        if self.settings.offline:
            raise OfflineMissError(
                f"--offline: no cached reply for request {request_key(request)[:12]} (sample {index}) to"
                f" {self.settings.model} in {self.settings.cache}"
            )
        self._check_budgets()
        texts, prompt_tokens, completion_tokens = self._ask(request)
        share = completion_tokens // max(1, len(texts))
        # One request gives `samples` replies; they are stored as consecutive sample indices.
        for offset, text in enumerate(texts):
            self.cache.put(
                {**request, "sample": index + offset},
                {"text": text, "prompt_tokens": prompt_tokens if offset == 0 else 0, "completion_tokens": share},
            )
        return Sample(texts[0], prompt_tokens, share, cached=False)

    def _check_budgets(self) -> None:
        s, u = self.settings, self.usage
        with self._lock:
            if u.stopped:
                raise LLMStoppedError(u.stopped)
            reason = None
            if s.max_requests is not None and u.requests >= s.max_requests:
                reason = f"the request budget is spent ({s.max_requests} requests)"
            elif s.max_total_tokens is not None and u.prompt_tokens + u.completion_tokens >= s.max_total_tokens:
                reason = f"the token budget is spent ({s.max_total_tokens} tokens)"
            elif s.max_cost is not None and u.cost >= s.max_cost:
                reason = f"the money budget is spent (${s.max_cost:g})"
            if reason:
                u.stopped = reason
                raise LLMStoppedError(reason)

    def _ask(self, request: dict[str, Any]) -> tuple[list[str], int, int]:
        s = self.settings
        started = time.perf_counter()
        with self._in_flight:
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
                self._failed(error, time.perf_counter() - started)
                raise
        prompt_tokens = usage.prompt_tokens if usage else 0
        completion_tokens = usage.completion_tokens if usage else 0
        with self._lock:
            u = self.usage
            self._consecutive_failures = 0
            u.requests += 1
            u.prompt_tokens += prompt_tokens
            u.completion_tokens += completion_tokens
            u.cost += (prompt_tokens * s.price_prompt + completion_tokens * s.price_completion) / 1e6
            u.seconds += time.perf_counter() - started
        return texts or [""], prompt_tokens, completion_tokens

    def _failed(self, error: openai.APIError, seconds: float) -> None:
        """Record a failed request (never the key's value); the third in a row stops the model."""
        import openai

        status = error.status_code if isinstance(error, openai.APIStatusError) else None
        hint = f"; {self.key_missing} is not set" if status in (401, 403) and self.key_missing else ""
        with self._lock:
            u = self.usage
            u.failures += 1
            u.seconds += seconds
            message = f"{status} from the server{hint}: " if hint else ""
            message += f"{type(error).__name__}: {str(error)[:200]}"
            key = os.environ.get(self.settings.api_key_env)
            u.errors.append(message.replace(key, "***") if key else message)
            self._consecutive_failures += 1
            if self._consecutive_failures >= DOWN_AFTER:
                u.stopped = f"the server failed {DOWN_AFTER} requests in a row ({type(error).__name__}{hint})"
