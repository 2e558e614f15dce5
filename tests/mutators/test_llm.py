"""The language-model operator's parts, against a real server speaking the OpenAI protocol."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import openai
import pytest

from gi.patch import Patch, apply
from gi.program import Program
from mutators import MutationContext
from mutators.llm import (
    LLMClient,
    LLMOperator,
    LLMSettings,
    LLMStoppedError,
    OfflineMissError,
    ReplyCache,
    extract_function,
    request_key,
)
from tests.llm_server import Action, ModelServer, ScriptedModel, serve

CLASS_SOURCE = '''\
class Counter:
    """Counts things."""

    def total(self, items):
        result = 0
        for item in items:
            result = result + item
        return result
'''

REWRITE = "Sure:\n```python\ndef total(self, items):\n    return sum(items)\n```\nDone."


@pytest.fixture
def scripted() -> Iterator[tuple[ScriptedModel, ModelServer]]:
    model = ScriptedModel(default=Action(reply=REWRITE))
    for server in serve(model):
        yield model, server


def client(server: ModelServer, tmp_path: Path, **settings: object) -> LLMClient:
    return LLMClient(LLMSettings(base_url=server.base_url, model="scripted", cache=tmp_path / "cache",
                                 retries=0, timeout=5, **settings))  # type: ignore[arg-type]  # fmt: skip


def test_extract_function_from_a_chat_reply() -> None:
    reply = "text\n```python\nimport os\n```\n```py\n    def f(x):\n        return x\n```\n"
    assert extract_function(reply, "f") == "def f(x):\n    return x\n"
    assert extract_function("def f():\n    return 1", "f") == "def f():\n    return 1\n"


def test_extract_function_from_a_completion() -> None:
    completion = "\n    return sum(items)\n\n\nprint('junk after the function')\n"
    assert extract_function(completion, "total", "def total(self, items):") == (
        "def total(self, items):\n    return sum(items)\n"
    )


def test_cache_keys_follow_the_content(tmp_path: Path) -> None:
    cache = ReplyCache(tmp_path)
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "sample": 0}
    assert cache.get(request) is None
    cache.put(request, {"text": "hello"})
    assert cache.get(dict(reversed(list(request.items())))) == {"text": "hello"}
    assert request_key(request) != request_key({**request, "sample": 1})


def test_samples_are_cached_and_replayed(scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path) -> None:
    model, server = scripted
    first = client(server, tmp_path)
    payload = {"messages": [{"role": "user", "content": "rewrite"}]}
    assert not first.sample(payload, 0).cached
    assert first.sample(payload, 0).cached
    assert not first.sample(payload, 1).cached
    assert len(model.requests) == 2 and model.requests[0]["model"] == "scripted"
    offline = client(server, tmp_path, offline=True)
    assert offline.sample(payload, 1).text == REWRITE
    with pytest.raises(OfflineMissError, match="no cached reply"):
        offline.sample(payload, 2)
    assert len(model.requests) == 2


def test_budgets_stop_the_client(scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path) -> None:
    _, server = scripted
    limited = client(server, tmp_path, max_requests=1)
    limited.sample({"messages": [{"role": "user", "content": "a"}]}, 0)
    with pytest.raises(LLMStoppedError, match="request budget"):
        limited.sample({"messages": [{"role": "user", "content": "b"}]}, 0)
    costly = client(server, tmp_path / "other", max_cost=0.0001, price_prompt=1.0, price_completion=1.0)
    costly.sample({"messages": [{"role": "user", "content": "a"}]}, 0)  # 150 tokens at $1 a million: $0.00015
    with pytest.raises(LLMStoppedError, match="money budget"):
        costly.sample({"messages": [{"role": "user", "content": "b"}]}, 0)


def test_a_server_that_keeps_failing_is_down(scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path) -> None:
    model, server = scripted
    model.default = Action(status=500)
    failing = client(server, tmp_path)
    for index in range(3):
        with pytest.raises(openai.APIError):
            failing.sample({"messages": [{"role": "user", "content": "x"}]}, index)
    assert failing.usage.stopped is not None and "3 requests in a row" in failing.usage.stopped
    with pytest.raises(LLMStoppedError):
        failing.sample({"messages": [{"role": "user", "content": "x"}]}, 9)


def test_the_operator_rewrites_a_method_in_place(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    model, server = scripted
    program = make_program(CLASS_SOURCE)
    operator = LLMOperator(client(server, tmp_path), "simpler")
    edit = operator.propose(program, Patch(), np.random.default_rng(0), MutationContext())
    assert edit is not None and operator.stats.edits == 1
    assert apply(program, Patch((edit,))).sources["mod.py"] == (
        'class Counter:\n    """Counts things."""\n\n    def total(self, items):\n        return sum(items)\n'
    )
    prompt = model.requests[0]["messages"][1]["content"]
    assert "def total(self, items):" in prompt and "simpler" in prompt
    # The same prompt again asks for the next sample, which is a new request.
    operator.propose(program, Patch(), np.random.default_rng(0), MutationContext())
    assert len(model.requests) == 2 and operator.stats.proposals == 2
