"""The language-model operator's parts, against a real server speaking the OpenAI protocol."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import openai
import pytest

from gi.model.edits import DeleteStatement, ReplaceFunction
from gi.model.patch import Patch, apply
from gi.model.program import Program
from gi.model.sites import SiteKind
from gi.mutators import MutationContext
from gi.mutators.llm import (
    LLMClient,
    LLMOperator,
    LLMSettings,
    LLMStoppedError,
    OfflineMissError,
    ReplyCache,
    extract_function,
    request_key,
)
from gi.mutators.llm.operator import FRUITLESS_LIMIT
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
    # The most a request may cost (its prompt estimated, max_tokens of reply) fits the cap: it is sent.
    costly = client(server, tmp_path / "other", max_cost=0.0001, price_prompt=1.0, price_completion=1.0,
                    max_tokens=60)  # fmt: skip
    costly.sample({"messages": [{"role": "user", "content": "a"}]}, 0)  # 150 tokens at $1 a million: $0.00015
    with pytest.raises(LLMStoppedError, match="money budget"):
        costly.sample({"messages": [{"role": "user", "content": "b"}]}, 0)
    # A request that could cost more than is left is never sent: the cap is hard.
    model, _ = scripted
    before = len(model.requests)
    capped = client(server, tmp_path / "third", max_cost=0.0005, price_prompt=1.0, price_completion=1.0)
    with pytest.raises(LLMStoppedError, match="money budget"):
        capped.sample({"messages": [{"role": "user", "content": "a"}]}, 0)  # up to 1024 tokens: $0.001
    assert len(model.requests) == before


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
    # The same prompt again asks for the next sample, which is a new request. The same rewrite
    # again is no news: counted, not evaluated, and not asked again.
    assert operator.propose(program, Patch(), np.random.default_rng(0), MutationContext()) is None
    assert len(model.requests) == 2 and operator.stats.proposals == 2
    assert operator.stats.modes["rewrite"].not_novel == 1 and operator.stats.modes["rewrite"].retries == 0


def test_a_completion_of_a_decorated_function_keeps_its_decorators(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    model, server = scripted
    program = make_program(
        "import functools\n\n\n@functools.lru_cache(maxsize=None)\n# memoised\ndef fib(n):\n"
        "    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n"
    )
    model.default = Action(reply="\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n"
                                 "    return a\n\n\nprint(fib(10))\n")  # fmt: skip
    operator = LLMOperator(client(server, tmp_path, api="completions"), "faster")
    edit = operator.propose(program, Patch(), np.random.default_rng(0), MutationContext())
    assert model.requests[0]["prompt"].endswith("\n@functools.lru_cache(maxsize=None)\n# memoised\ndef fib(n):")
    assert edit is not None, operator.stats.rejected
    assert apply(program, Patch((edit,))).sources["mod.py"] == (
        "import functools\n\n\n@functools.lru_cache(maxsize=None)\n# memoised\ndef fib(n):\n"
        "    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n"
    )


def test_extract_function_from_a_completion_of_a_signature_on_several_lines() -> None:
    assert (
        extract_function("\n    return a\nx = 1\n", "f", "def f(\n    a,\n):") == "def f(\n    a,\n):\n    return a\n"
    )


PROPERTY = """\
class Box:
    def __init__(self):
        self._size = 0

    @property
    def size(self):
        return self._size

    @size.setter
    def size(self, value):
        if value < 0:
            value = 0
        self._size = value
"""

SETTER = "```python\n@size.setter\ndef size(self, value):\n    self._size = max(0, value)\n```"


@pytest.mark.parametrize("earlier", ["none", "shifted"])
def test_a_property_setter_is_rewritten_as_the_setter(
    earlier: str, scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    model, server = scripted
    model.default = Action(reply=SETTER)
    program = make_program(PROPERTY)
    init, getter, setter = (site.location for site in program.sites_of(SiteKind.FUNCTION))
    patch = Patch()
    if earlier == "shifted":  # __init__ gone, the getter rewritten: the setter stands elsewhere
        patch = Patch((DeleteStatement(init), ReplaceFunction(getter, "@property\ndef size(self):\n    return 7\n")))
    # Fault localisation points at the setter's body: only it may be chosen.
    context = MutationContext(line_weights={("mod.py", 11): 1.0}).bind(program)
    operator = LLMOperator(client(server, tmp_path), "repair")
    edit = operator.propose(program, patch, np.random.default_rng(0), context)
    assert edit is not None and edit.target == setter
    prompt = model.requests[0]["messages"][1]["content"]
    assert "```python\n@size.setter\ndef size(self, value):\n    if value < 0:" in prompt
    assert "def size(self):" in prompt.split("The code above it in the file:")[1]  # the getter is context
    source = apply(program, patch.appended(edit)).sources["mod.py"]
    getter_body = "return 7" if earlier == "shifted" else "return self._size"
    assert f"    @property\n    def size(self):\n        {getter_body}\n" in source
    assert source.endswith("    @size.setter\n    def size(self, value):\n        self._size = max(0, value)\n")


def test_a_function_the_patch_took_away_is_not_asked_about(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    model, server = scripted
    program = make_program(CLASS_SOURCE)
    (total,) = (site.location for site in program.sites_of(SiteKind.FUNCTION))
    deleted = Patch((DeleteStatement(total),))
    operator = LLMOperator(client(server, tmp_path), "simpler")
    assert operator.propose(program, deleted, np.random.default_rng(0), MutationContext()) is None
    assert model.requests == []


def test_a_function_the_model_rewrote_is_asked_about_as_rewritten_and_rewritten_again(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    model, server = scripted
    program = make_program(CLASS_SOURCE)
    (total,) = (site.location for site in program.sites_of(SiteKind.FUNCTION))
    first = ReplaceFunction(total, "def total(self, items):\n    return sum(item for item in items)\n")
    model.default = Action(reply="```python\ndef total(self, items):\n    return sum(items, 0)\n```")
    operator = LLMOperator(client(server, tmp_path), "simpler")
    again = operator.propose(program, Patch((first,)), np.random.default_rng(0), MutationContext())
    assert "return sum(item for item in items)" in model.requests[0]["messages"][1]["content"]
    assert isinstance(again, ReplaceFunction)
    variant = apply(program, Patch((first, again)))
    assert "return sum(items, 0)" in variant.sources["mod.py"] and variant.effective == (False, True)


def test_the_model_never_rewrites_an_excluded_function(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    model, server = scripted
    model.default = Action(reply="```python\ndef work(values):\n    return 0\n```")
    program = make_program("def work(values):\n    return sum(values)\n\n\ndef run():\n    return work(range(6000))\n")
    context = MutationContext(excluded_functions=frozenset({"run"})).bind(program)
    operator = LLMOperator(client(server, tmp_path), "faster")
    rng = np.random.default_rng(0)
    edits = [operator.propose(program, Patch(), rng, context) for _ in range(6)]
    assert {edit.target.path for edit in edits if edit is not None} == {"body[0]"}
    assert all("`work`" in request["messages"][1]["content"] for request in model.requests)


def test_a_prompt_that_keeps_giving_nothing_new_is_not_asked_again(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    model, server = scripted
    program = make_program(CLASS_SOURCE)
    unchanged = "def total(self, items):\n    result = 0\n    for item in items:\n        result = result + item\n"
    model.default = Action(reply=f"```python\n{unchanged}    return result\n```")
    operator = LLMOperator(client(server, tmp_path), "simpler")
    rng = np.random.default_rng(0)
    for _ in range(5):
        assert operator.propose(program, Patch(), rng, MutationContext()) is None
    assert len(model.requests) == FRUITLESS_LIMIT and operator.stats.no_ops == FRUITLESS_LIMIT

    # Rewrites the search reports as programs it already has count the same way.
    model.default = Action(reply=REWRITE)
    fresh = LLMOperator(client(server, tmp_path / "other"), "faster")
    edit = fresh.propose(program, Patch(), rng, MutationContext())
    assert isinstance(edit, ReplaceFunction)
    for _ in range(FRUITLESS_LIMIT):
        fresh.note_duplicate(edit)
    assert fresh.propose(program, Patch(), rng, MutationContext()) is None
    assert len(model.requests) == FRUITLESS_LIMIT + 1

    # What a resumed run needs is JSON, and restores the same decisions.
    resumed = LLMOperator(client(server, tmp_path / "other"), "faster")
    resumed.restore(json.loads(json.dumps(fresh.state())))
    assert resumed.state() == fresh.state()
    assert fresh.state()["asked"] == {edit.prompt_hash: 1} and fresh.state()["fruitless"] == {edit.prompt_hash: 2}
    assert resumed.propose(program, Patch(), rng, MutationContext()) is None


def test_an_unset_key_is_named_when_the_server_refuses(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, server = scripted
    model.default = Action(status=401)
    monkeypatch.delenv("GI_UNSET_KEY", raising=False)
    unset = client(server, tmp_path, api_key_env="GI_UNSET_KEY")
    assert unset.key_missing == "GI_UNSET_KEY"
    with pytest.raises(openai.AuthenticationError):
        unset.sample({"messages": [{"role": "user", "content": "x"}]}, 0)
    assert unset.usage.errors[0].startswith("401 from the server; GI_UNSET_KEY is not set")

    secret = "sk-test-do-not-leak-42"
    monkeypatch.setenv("GI_SET_KEY", secret)
    model.default = Action(status=403)
    wrong = client(server, tmp_path, api_key_env="GI_SET_KEY")
    assert wrong.key_missing is None
    for index in range(3):
        with pytest.raises(openai.PermissionDeniedError):
            wrong.sample({"messages": [{"role": "user", "content": "x"}]}, index)
    assert "not set" not in wrong.usage.errors[0] and wrong.usage.stopped is not None
    recorded = " ".join([*wrong.usage.errors, wrong.usage.stopped])
    assert secret not in recorded and model.headers[-1]["authorization"] == f"Bearer {secret}"
    for path in tmp_path.rglob("*"):
        assert not path.is_file() or secret.encode() not in path.read_bytes()


def test_parse_rate_counts_replies_not_proposals(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    model, server = scripted
    program = make_program(CLASS_SOURCE)
    model.default = Action(status=500)
    operator = LLMOperator(client(server, tmp_path), "simpler")
    rng = np.random.default_rng(0)
    operator.propose(program, Patch(), rng, MutationContext())
    assert operator.stats.proposals == 1 and operator.stats.replies == 0 and operator.stats.parse_rate is None
    model.actions = [Action(reply="```python\ndef total(self, items:\n```"), Action(reply=REWRITE)]
    operator.propose(program, Patch(), rng, MutationContext())
    operator.propose(program, Patch(), rng, MutationContext())
    assert operator.stats.replies == 2 and operator.stats.parse_rate == 0.5
