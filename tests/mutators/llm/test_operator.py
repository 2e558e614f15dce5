"""The model operator's modes, retries, reviewer, models and overseer, against a scripted server."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gi.model.edits import AddDefinition, AddImport, DeleteStatement, Edit, ReplaceFunction, WriteStatement
from gi.model.guard import risky_names
from gi.model.patch import Patch, apply
from gi.model.program import Program
from gi.model.sites import SiteKind
from gi.mutators import MutationContext
from gi.mutators.llm import Budget, LLMClient, LLMOperator, LLMSettings, Member, Models, Outcome, RequestPool
from gi.mutators.llm.prompts import ALLOWED_CODE
from tests.llm_server import Action, ModelServer, ScriptedModel, serve

SOURCE = """\
def total(items):
    result = 0
    for item in items:
        result = result + item
    return result


def double(values):
    return [value * 2 for value in values]
"""

DIFF = """\
I'll replace the loop.

<<<<<<< SEARCH
  result = 0
  for item in items:
      result = result + item
=======
  result = sum(items)
>>>>>>> REPLACE
"""

SUMMED = "def total(items):\n    result = sum(items)\n    return result\n"


@pytest.fixture
def scripted() -> Iterator[tuple[ScriptedModel, ModelServer]]:
    model = ScriptedModel(default=Action(reply=DIFF))
    for server in serve(model):
        yield model, server


def client(server: ModelServer, tmp_path: Path, **changes: Any) -> LLMClient:
    values: dict[str, Any] = {"base_url": server.base_url, "model": "scripted", "cache": tmp_path / "cache",
                              "retries": 0, "timeout": 5, **changes}  # fmt: skip
    return LLMClient(LLMSettings(**values))


def total_only(program: Program) -> MutationContext:
    """A context in which only `total` is ever chosen."""
    return MutationContext(site_weights={"total": 1.0}, default_weight=0.0).bind(program)


def function_of(program: Program, edits: tuple[Edit, ...]) -> str:
    """`total` as the edits make it."""
    assert edits
    return apply(program, Patch(edits)).sources["mod.py"].split("\n\n\n")[0] + "\n"


def test_a_diff_with_drifted_indentation_becomes_the_edited_function(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    model, server = scripted
    program = make_program(SOURCE)
    operator = LLMOperator(client(server, tmp_path), "faster", modes={"diff": 1.0})
    edits = operator.propose_edits(program, Patch(), np.random.default_rng(0), total_only(program))
    assert function_of(program, edits) == SUMMED
    assert "SEARCH/REPLACE" in model.requests[0]["messages"][0]["content"]
    # A local change: edits at the statements it touched, so the return stays the original's.
    write, delete = edits
    assert isinstance(write, WriteStatement) and write.source == "result = sum(items)\n"
    assert (write.mode, write.model, write.prompt_tokens, write.completion_tokens) == ("diff", "scripted", 100, 50)
    assert isinstance(delete, DeleteStatement) and delete.target.path == "body[0].body.body[1]"
    counts = operator.stats.modes["diff"]
    assert (counts.proposals, counts.replies, counts.edits, counts.parse_rate, counts.apply_rate) == (1, 1, 1, 1, 1)


def test_a_diff_that_does_not_apply_is_fed_back_and_the_retry_applies(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    model, server = scripted
    model.actions = [Action(reply=DIFF.replace("for item in items:", "for item in item_list:")), Action(reply=DIFF)]
    program = make_program(SOURCE)
    operator = LLMOperator(client(server, tmp_path), "faster", modes={"diff": 1.0})
    edit = operator.propose_edits(program, Patch(), np.random.default_rng(0), total_only(program))
    assert function_of(program, edit) == SUMMED
    feedback = model.requests[1]["messages"][-1]["content"]
    assert "its SEARCH text is not in the code" in feedback and "the nearest is `for item in items:`" in feedback
    counts = operator.stats.modes["diff"]
    assert (counts.replies, counts.not_applied, counts.retries, counts.edits) == (2, 1, 1, 1)
    assert counts.apply_rate == 0.5

    # With no retries left, the failure is counted and the proposal gives up.
    model.actions = [Action(reply="<<<<<<< SEARCH\n    nothing = 1\n=======\n    x = 2\n>>>>>>> REPLACE")]
    strict = LLMOperator(client(server, tmp_path / "other"), "faster", modes={"diff": 1.0}, feedback_retries=0)
    assert strict.propose_edits(program, Patch(), np.random.default_rng(0), total_only(program)) == ()
    assert strict.stats.modes["diff"].not_applied == 1 and strict.stats.modes["diff"].retries == 0


def test_a_completion_model_continues_a_search_block(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    model, server = scripted
    model.default = Action(reply=DIFF.split("<<<<<<< SEARCH\n", 1)[1])  # it continues after the marker
    program = make_program(SOURCE)
    operator = LLMOperator(client(server, tmp_path, api="completions"), "faster", modes={"diff": 1.0})
    edit = operator.propose_edits(program, Patch(), np.random.default_rng(0), total_only(program))
    assert function_of(program, edit) == SUMMED
    assert model.requests[0]["prompt"].endswith("<<<<<<< SEARCH\n")


def archive_member(program: Program, identifier: str, source: str, objectives: dict[str, float]) -> Member:
    edit = ReplaceFunction(program.sites_of(SiteKind.FUNCTION)[0].location, source)
    return Member(identifier, Patch((edit,)), objectives, tuple(objectives.values()))


def test_crossover_shows_two_versions_and_inspirations_show_the_archive(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    model, server = scripted
    merged = "def total(items):\n    return sum(item for item in items)\n"
    model.default = Action(reply=f"```python\n{merged}```")
    program = make_program(SOURCE)
    operator = LLMOperator(client(server, tmp_path), "faster", modes={"crossover": 1.0}, inspirations=2)
    context = total_only(program)
    # Without an archive there is no partner: the crossover is asked as a rewrite.
    edit = operator.propose_edits(program, Patch(), np.random.default_rng(0), context)
    assert function_of(program, edit) == merged
    assert "combines the strengths of both" not in model.requests[0]["messages"][1]["content"]
    assert operator.stats.modes["rewrite"].edits == 1

    fast = "def total(items):\n    return sum(items)\n"
    small = "def total(items):\n    r = 0\n    for i in items: r += i\n    return r\n"
    members = [archive_member(program, "g1-i0", fast, {"runtime": 0.5, "size": 3.0}),
               archive_member(program, "g1-i1", small, {"runtime": 0.9, "size": 1.0})]  # fmt: skip
    operator.learn([], members)
    # (The same merge with its loop variable renamed would be no news: novelty normalises names.)
    model.default = Action(reply="```python\ndef total(items):\n    return sum(items, 0)\n```")
    edit = operator.propose_edits(program, Patch(), np.random.default_rng(1), context)
    assert edit is not None and operator.stats.modes["crossover"].edits == 1
    prompt = model.requests[-1]["messages"][1]["content"]
    assert "combines the strengths of both" in prompt and "result = result + item" in prompt
    partner = fast if "The second, measured runtime = 0.5" in prompt else small
    assert partner.strip() in prompt.split("The second, measured")[1]
    # The inspirations: the best member in each objective, with its measurements.
    assert "Other versions of `total` the search has found" in prompt
    assert "(runtime = 0.5, size = 3)" in prompt and "(runtime = 0.9, size = 1)" in prompt


def test_the_reviewer_s_objection_goes_back_into_a_retry(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    model, server = scripted
    broken = "def total(items):\n    return len(items)\n"
    model.actions = [
        Action(reply=f"```python\n{broken}```"),
        Action(reply="This counts the items instead of adding them."),
        Action(reply=f"```python\n{SUMMED}```"),
        Action(reply="APPROVE"),
    ]
    program = make_program(SOURCE)
    operator = LLMOperator(client(server, tmp_path), "faster", reviewer=True)
    edit = operator.propose_edits(program, Patch(), np.random.default_rng(0), total_only(program))
    assert function_of(program, edit) == SUMMED
    review = model.requests[1]["messages"]
    assert "APPROVE" in review[0]["content"] and "return len(items)" in review[1]["content"]
    assert "a reviewer objected: This counts the items" in model.requests[2]["messages"][-1]["content"]
    counts = operator.stats.modes["rewrite"]
    assert (counts.reviews, counts.reviewer, counts.retries, counts.edits) == (2, 1, 1, 1)
    assert operator.spent.requests == 4


def test_helpers_and_imports_beside_the_function_are_read_and_other_code_is_refused(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    from gi.mutators.llm.operator import Pending
    from gi.mutators.llm.replies import RejectionError, read_code

    program = make_program(SOURCE)
    module = program.modules["mod.py"]
    code = read_code(
        "import math\nfrom itertools import chain\n\n\ndef _add(a, b):\n    return a + b\n\n\n"
        "def total(items):\n    return math.fsum(items)\n",
        "total", module=module,
    )  # fmt: skip
    assert code.imports == ("import math", "from itertools import chain")
    assert code.definitions == ("def _add(a, b):\n    return a + b\n",)
    assert code.function == "def total(items):\n    return math.fsum(items)\n"
    for source, message in [
        ("LIMIT = 3\n\ndef total(items):\n    return 0\n", "`LIMIT = 3` stands beside the function"),
        ("def double(x):\n    return x\n\ndef total(items):\n    return 0\n", "`double` is already defined"),
        ("def other(items):\n    return 0\n", "defines no function `total`"),
        ("def total(items:\n", "does not parse"),
    ]:
        with pytest.raises(RejectionError, match=message):
            read_code(source, "total", module=module)
    assert Pending  # the type the engine holds between prepare and finish


def test_the_bandit_favours_the_model_whose_offspring_succeed(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path
) -> None:
    _, server = scripted
    pool, budget = RequestPool(2), Budget()
    clients = [client(server, tmp_path, model=name) for name in ("weak", "strong")]
    for each in clients:
        each.pool, each.budget = pool, budget
    weighted = Models(clients, [3.0, 1.0])
    rng = np.random.default_rng(0)
    drawn = [weighted.choose(rng).name for _ in range(400)]
    assert 0.68 < drawn.count("weak") / 400 < 0.82

    bandit = Models(clients, choice="bandit")
    weak, strong = bandit.arms
    weak.trials, weak.successes = 40, 1
    strong.trials, strong.successes = 40, 20
    drawn = [bandit.choose(rng).name for _ in range(200)]
    assert drawn.count("strong") > 190
    restored = Models([client(server, tmp_path, model=name) for name in ("weak", "strong")], choice="bandit")
    restored.restore(json.loads(json.dumps(bandit.state())))
    assert [(arm.trials, arm.successes) for arm in restored.arms] == [(40, 1), (40, 20)]


def test_the_overseer_replans_then_stops_a_model_that_spends_without_progress(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    model, server = scripted
    program = make_program(SOURCE)
    replies = iter(range(1000))
    model.respond = lambda body: Action(reply=f"```python\ndef total(items):\n    return {next(replies)}\n```")
    operator = LLMOperator(client(server, tmp_path), "faster", patience=3)
    rng, context = np.random.default_rng(0), total_only(program)

    def generation(successful: bool = False) -> None:
        made = [operator.propose_edits(program, Patch(), rng, context) for _ in range(2)]
        outcomes = [Outcome("llm.rewrite", edits, True, True, successful) for edits in made if edits]
        operator.learn(outcomes, [])

    generation(successful=True)
    generation()
    assert not operator.notes and operator.stopped() is None
    generation()  # four requests since the last success
    assert operator.notes and "re-planned" in operator.notes[0] and set(operator.modes) == {"rewrite", "diff",
                                                                                           "crossover"}  # fmt: skip
    generation()
    generation()
    assert (operator.stopped() or "").endswith(
        "the overseer stopped it: 4 requests without an offspring entering the archive (llm.patience = 3)"
    )
    asked = len(model.requests)
    assert operator.propose_edits(program, Patch(), rng, context) == () and len(model.requests) == asked
    assert operator.successes == {"rewrite": 2}


def test_a_version_whose_tests_fail_is_asked_again_with_their_output(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    model, server = scripted
    broken = "def total(items):\n    return len(items)\n"
    model.actions = [Action(reply=f"```python\n{broken}```"), Action(reply=f"```python\n{SUMMED}```")]
    program = make_program(SOURCE)
    operator = LLMOperator(client(server, tmp_path), "faster")
    rng, context = np.random.default_rng(0), total_only(program)
    edits = operator.propose_edits(program, Patch(), rng, context)
    assert function_of(program, edits) == broken
    operator.learn([Outcome("llm.rewrite", edits, True, False, False, failures="E   assert 3 == 6")], [])
    saved = json.loads(json.dumps(operator.state()))
    assert len(saved["follow_ups"]) == 1

    # A resumed run asks the same follow-up, first, for the patch it is given.
    resumed = LLMOperator(client(server, tmp_path), "faster")
    resumed.restore(saved)
    fixed = resumed.propose_edits(program, Patch(), rng, context)
    assert function_of(program, fixed) == SUMMED
    asked = model.requests[1]["messages"]
    assert [m["role"] for m in asked] == ["system", "user", "assistant", "user"]
    assert "with this version the tests fail" in asked[3]["content"] and "assert 3 == 6" in asked[3]["content"]
    assert resumed.stats.modes["rewrite"].failed_tests == 1 and resumed.stats.modes["rewrite"].retries == 1
    # One retry allowed (feedback_retries = 1): a failure of the follow-up is not asked again.
    resumed.learn([Outcome("llm.rewrite", fixed, True, False, False, failures="E   still failing")], [])
    assert resumed.follow_ups == []


def test_imports_and_helpers_in_a_reply_become_edits_of_their_own(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    model, server = scripted
    reply = (
        "```python\nimport math\n\n\ndef _add_all(items):\n    return math.fsum(items)\n\n\n"
        "def total(items):\n    return _add_all(items)\n```"
    )
    model.default = Action(reply=reply)
    program = make_program('"""Sums."""\n\n' + SOURCE)
    operator = LLMOperator(client(server, tmp_path), "faster")
    edits = operator.propose_edits(program, Patch(), np.random.default_rng(0), total_only(program))
    kinds = [type(edit) for edit in edits]
    assert kinds == [AddImport, AddDefinition, ReplaceFunction]
    assert edits[0].prompt_tokens == 100 and edits[1].prompt_tokens == 0  # type: ignore[attr-defined]
    source = apply(program, Patch(edits)).sources["mod.py"]
    assert source.startswith('"""Sums."""\n\nimport math\n')
    assert "\n\n\ndef _add_all(items):\n    return math.fsum(items)\n\ndef total(items):\n" in source
    namespace: dict[str, Any] = {}
    exec(compile(source, "mod.py", "exec"), namespace)
    assert namespace["total"]([1, 2, 3]) == 6
    # Each is an edit like any other: without the helper, the rewrite alone breaks the program.
    assert "_add_all" not in apply(program, Patch(edits[2:])).sources["mod.py"].split("def total")[0]


def test_a_reply_that_reaches_for_the_test_machinery_is_refused_and_plain_stdlib_is_not(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    model, server = scripted
    forged = "```python\nimport os\n\n\ndef total(items):\n    os._exit(0)\n```"
    honest = (
        "```python\nimport heapq\nfrom collections import Counter\n\n\ndef total(items):\n    return sum(items)\n```"
    )
    model.actions = [Action(reply=forged), Action(reply=honest)]
    program = make_program(SOURCE)
    operator = LLMOperator(client(server, tmp_path), "faster")
    edits = operator.propose_edits(program, Patch(), np.random.default_rng(0), total_only(program))
    assert [type(edit) for edit in edits] == [AddImport, AddImport, ReplaceFunction]
    assert operator.stats.modes["rewrite"].tampering == 1
    assert "os._exit" in model.requests[1]["messages"][-1]["content"]


def test_the_prompts_tell_the_model_what_the_guard_lets_through(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    """The chat and diff prompts name the imports new code may use, and every module they name
    passes the guard (a prompt that promised what the guard refuses would waste the request)."""
    model, server = scripted
    model.default = Action(reply="no code")
    program = make_program(SOURCE)
    operator = LLMOperator(client(server, tmp_path), "faster", modes={"rewrite": 1, "diff": 1}, feedback_retries=0)
    rng = np.random.default_rng(0)
    for _ in range(10):
        operator.propose_edits(program, Patch(), rng, total_only(program))
    assert {mode_of(request) for request in model.requests} == {"rewrite", "diff"}
    assert all(ALLOWED_CODE in request["messages"][0]["content"] for request in model.requests)
    named = re.findall(r"\b[a-z]+\b", ALLOWED_CODE[ALLOWED_CODE.index("(") + 1 : ALLOWED_CODE.index(")")])
    assert len(named) >= 5 and all(not risky_names(f"import {module}\n") for module in named), named
    assert risky_names("import numpy\n")  # what the sentence bars, the guard refuses


def mode_of(request: dict[str, Any]) -> str:
    return "diff" if "SEARCH/REPLACE" in request["messages"][0]["content"] else "rewrite"


def test_retries_go_out_as_replies_fail_not_when_the_search_takes_them(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    """Four diffs in flight, each failing to apply at first: each retry is sent as soon as its
    reply came back, so the four retries are in the air together, not one after another."""
    model, server = scripted
    broken = DIFF.replace("for item in items:", "for item in item_list:")

    def respond(body: dict[str, Any]) -> Action:
        retry = "its SEARCH text is not in the code" in json.dumps(body)
        return Action(reply=DIFF if retry else broken, delay=0.4)

    model.respond = respond
    program = make_program(SOURCE)
    operator = LLMOperator(client(server, tmp_path, concurrency=4), "faster", modes={"diff": 1.0})
    rng, context = np.random.default_rng(0), total_only(program)
    pending = [operator.prepare(program, Patch(), rng, context) for _ in range(4)]
    made = [operator.finish(each, program, Patch()) for each in pending if each is not None]
    assert len(made) == 4 and all(function_of(program, edits) == SUMMED for edits in made[:1])
    retries = sorted(at for at, body in zip(model.arrivals, model.requests, strict=True) if "not in the code" in
                     json.dumps(body))  # fmt: skip
    assert len(retries) == 4 and retries[-1] - retries[0] < 0.3, retries
    assert operator.stats.modes["diff"].retries == 4 and operator.spent.requests == 8
    assert operator.client.budget.held == 0, "what the proposals held for retries is given back"


def test_a_proposal_a_checkpoint_keeps_in_flight_is_asked_again_and_counted_once(
    scripted: tuple[ScriptedModel, ModelServer], tmp_path: Path, make_program: Callable[[str], Program]
) -> None:
    """Two proposals await their replies when the operator's state is saved: the first has had
    its reply (unreadable) and its retry's, the second's reply is held at the server. The state
    leaves their requests out; an operator restored from it and given the two as `suspend` kept
    them asks again for the same samples: the first from the cache, to the same edits, the
    second of the server again. Every request that reached the server counts once."""
    model, server = scripted
    release = threading.Event()
    answers = iter([
        Action(reply="I would rather not."),
        Action(reply="```python\ndef total(items):\n    return sum(items)\n```"),
        Action(reply="held", hold=release, delay=60.0),
        Action(reply="```python\ndef total(items):\n    return sum(items, 0)\n```"),
    ])  # fmt: skip
    model.respond = lambda body: next(answers)
    program = make_program(SOURCE)
    rng, context = np.random.default_rng(0), total_only(program)
    operator = LLMOperator(client(server, tmp_path, concurrency=2), "faster")
    try:
        first = operator.prepare(program, Patch(), rng, context)
        assert first is not None and first.arrival is not None
        first.arrival.result(timeout=30)  # its retry has been answered too
        second = operator.prepare(program, Patch(), rng, context)
        assert second is not None
        deadline = time.monotonic() + 30
        while len(model.requests) < 3 and time.monotonic() < deadline:  # the second reaches the server
            time.sleep(0.01)
        state = json.loads(json.dumps(operator.state()))
        kept = json.loads(json.dumps([operator.suspend(first), operator.suspend(second)]))
        assert operator.spent.requests == 3 and len(model.requests) == 3
        assert state["usage"]["requests"] == 0 and state["models"]["scripted"]["usage"]["requests"] == 0

        resumed = LLMOperator(client(server, tmp_path, concurrency=2), "faster")
        resumed.restore(state)
        again = [resumed.resume(saved, program, Patch()) for saved in kept]
        assert again[0] is not None and again[1] is not None
        made = resumed.finish(again[0], program, Patch())
        assert made == operator.finish(first, program, Patch())
        assert function_of(program, made) == "def total(items):\n    return sum(items)\n"
        assert "sum(items, 0)" in function_of(program, resumed.finish(again[1], program, Patch()))
        assert len(model.requests) == 4, "the first proposal's replies came from the cache"
        assert resumed.spent.requests == 4, "each request that reached the server counts once"
        assert resumed.asked == operator.asked and resumed.stats.modes["rewrite"].proposals == 2
    finally:
        release.set()
