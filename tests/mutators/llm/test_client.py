"""The client's pool, budgets and cache keys, against a real server speaking the OpenAI protocol."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gi.mutators.llm import Budget, LLMClient, LLMSettings, LLMStoppedError, RequestPool, Usage
from tests.llm_server import Action, ModelServer, ScriptedModel, serve


@pytest.fixture
def scripted() -> Iterator[tuple[ScriptedModel, ModelServer]]:
    model = ScriptedModel(default=Action(reply="ok"))
    for server in serve(model):
        yield model, server


def settings(server: ModelServer, cache: Path, **changes: object) -> LLMSettings:
    values: dict[str, object] = {"base_url": server.base_url, "model": "scripted", "cache": cache, "retries": 0,
                                 "timeout": 10, **changes}  # fmt: skip
    return LLMSettings(**values)  # type: ignore[arg-type]


def ask(n: int) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": f"question {n}"}]}


def test_replies_are_taken_in_order_while_several_requests_are_in_flight(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path
) -> None:
    model, server = scripted

    # Each reply repeats its question; the first is the slowest: with four in flight, all four
    # requests arrive before it comes, and its reply is still taken first. (Judged from its
    # arrival, not the client's start: starting the pool's threads takes a while on a loaded
    # machine.)
    slow = 2.0

    def respond(body: dict[str, Any]) -> Action:
        question = body["messages"][0]["content"]
        return Action(reply=question, delay=slow if question.endswith(" 0") else 0.1)

    model.respond = respond
    client = LLMClient(settings(server, tmp_path / "cache", concurrency=4))
    replies = [client.submit(ask(n), 0) for n in range(4)]
    assert [reply.result().text for reply in replies] == [f"question {n}" for n in range(4)]
    questions = [request["messages"][0]["content"] for request in model.requests]
    assert len(model.arrivals) == 4 and max(model.arrivals) < model.arrivals[questions.index("question 0")] + slow
    assert client.usage.requests == 4 and client.usage.prompt_tokens == 400

    # One at a time, the same requests wait for each other: the pool holds them back.
    model.respond = lambda body: Action(reply=body["messages"][0]["content"], delay=0.2)
    serial = LLMClient(settings(server, tmp_path / "other", concurrency=1))
    before = len(model.arrivals)
    replies = [serial.submit(ask(n), 0) for n in range(3)]
    assert [reply.result().text for reply in replies] == [f"question {n}" for n in range(3)]
    arrivals = model.arrivals[before:]
    assert all(later - earlier >= 0.2 for earlier, later in itertools.pairwise(arrivals))


def test_the_cache_key_names_the_server_or_the_revision(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path
) -> None:
    """Another server serving another model under the same name does not get the first one's
    replies; a model revision the user names keeps them across a moved server."""
    _, server = scripted
    cache = tmp_path / "cache"
    here = LLMClient(settings(server, cache))
    moved = LLMClient(settings(server, cache, base_url="http://127.0.0.1:9/v1"))
    assert here.request(ask(0)) != moved.request(ask(0))
    assert here.request(ask(0))["base_url"] == server.base_url
    pinned = LLMClient(settings(server, cache, revision="scripted-2024-06"))
    pinned_moved = LLMClient(settings(server, cache, revision="scripted-2024-06", base_url="http://127.0.0.1:9/v1"))
    assert pinned.request(ask(0)) == pinned_moved.request(ask(0)) and "base_url" not in pinned.request(ask(0))
    pinned.sample(ask(0), 0)
    assert pinned_moved.sample(ask(0), 0).cached and not here.sample(ask(0), 0).cached


def test_a_resumed_session_counts_what_it_asked_before_it_was_interrupted(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path
) -> None:
    model, server = scripted
    cache = tmp_path / "cache"
    first = LLMClient(settings(server, cache, max_requests=3), session="run-1")
    first.sample(ask(0), 0)
    saved = json.loads(json.dumps(first.budget.usage.to_json()))  # the last checkpoint
    first.sample(ask(1), 0)  # answered after the checkpoint, then the run is killed
    first.cache.mark_sent({**first.request(ask(2)), "sample": 0}, "run-1")  # in flight when it died
    assert len(model.requests) == 2

    budget = Budget(max_requests=3)
    budget.usage = Usage.from_json(saved)
    resumed = LLMClient(settings(server, cache, max_requests=3), budget=budget, session="run-1")
    again = resumed.sample(ask(1), 0)  # its own reply: not asked again, but it counts
    assert not again.cached and budget.usage.requests == 2 and len(model.requests) == 2
    # The request sent without an answer counted too: the budget of 3 is spent.
    with pytest.raises(LLMStoppedError, match="request budget"):
        resumed.sample(ask(2), 0)
    assert len(model.requests) == 2 and budget.usage.requests == 3

    # Another run (another session) finds the same replies as plain cache hits.
    other = LLMClient(settings(server, cache, max_requests=3), session="run-2")
    assert other.sample(ask(1), 0).cached and other.usage.requests == 0 and other.usage.cache_hits == 1


def test_models_share_one_budget(scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path) -> None:
    model, server = scripted
    pool, budget = RequestPool(2), Budget(max_requests=2)
    small = LLMClient(settings(server, tmp_path / "cache", model="small"), pool=pool, budget=budget)
    large = LLMClient(settings(server, tmp_path / "cache", model="large"), pool=pool, budget=budget)
    small.sample(ask(0), 0)
    large.sample(ask(0), 0)
    with pytest.raises(LLMStoppedError):
        small.sample(ask(1), 0)
    assert [request["model"] for request in model.requests] == ["small", "large"]
    assert small.usage.requests == large.usage.requests == 1 and budget.usage.requests == 2
