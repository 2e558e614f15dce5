"""Which waiting offspring a batch takes first, with the language-model operator asking a real
OpenAI-protocol server on 127.0.0.1 whose first reply is slow: a generational `Batch` waits for
the oldest request, so that the seed alone fixes which reply serves which candidate; a
steady-state `ArrivalBatch` takes the first reply in, says so in `picked`, and follows a recorded
order when given one."""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gi.algorithms.variation import ArrivalBatch, Batch, OrderError, Variation
from gi.model.patch import Patch
from gi.model.program import Program
from gi.mutators import OPERATORS
from gi.mutators.llm import LLMClient, LLMOperator, LLMSettings
from tests.llm_server import Action, ModelServer, ScriptedModel, serve
from tests.run.test_llm_runs import LINEAR, PROGRAM

#: The slow first reply: another version (not the linear one under other names), so that its
#: candidate can be told apart.
SLOW = '''\
```python
def has_pair_with_sum(values, target):
    """True if two different entries of values add up to target."""
    return any(values[i] + values[j] == target for i in range(len(values)) for j in range(i + 1, len(values)))
```
'''


@pytest.fixture
def model() -> Iterator[tuple[ScriptedModel, ModelServer, threading.Event]]:
    """A server whose first reply waits for the event (5 s at most); the others come at once."""
    release = threading.Event()
    scripted = ScriptedModel(default=Action(reply=LINEAR))

    def first_slow(body: dict[str, Any]) -> Action | None:
        return Action(reply=SLOW, hold=release, delay=5.0) if len(scripted.requests) == 1 else None

    scripted.respond = first_slow
    for server in serve(scripted):
        yield scripted, server, release


def two_waiting(kind: type[Batch], tmp_path: Path, program: Program, scripted: ScriptedModel, url: str) -> Batch:
    """A batch of `kind` holding two offspring of the model operator, the first one's request at
    the server before the second is asked for."""
    settings = LLMSettings(base_url=url, model="scripted", cache=tmp_path / "cache", retries=0, concurrency=2)
    operators = [OPERATORS.get("statement_delete"), LLMOperator(LLMClient(settings), "faster", share=1.0)]
    variation = Variation(program, operators, [], np.random.default_rng(0))
    variation.start_generation(4)
    batch = kind(variation, 0, {program.tree_hash}, 5)
    for count in (1, 2):
        made = variation.new_edit(Patch())
        assert made is not None and made.later is not None, "the model makes every mutation"
        batch.offer(made.offspring(Patch(), (), made.label))
        deadline = time.monotonic() + 30
        while len(scripted.requests) < count and time.monotonic() < deadline:
            time.sleep(0.01)
    assert batch.waiting == 2 and len(scripted.requests) == 2
    return batch


def slow(batch: Batch) -> list[bool]:
    """For each candidate, whether the slow reply made it."""
    return ["any(" in repr(candidate.patch.to_json()) for candidate in batch.candidates]


def test_a_generational_batch_waits_for_the_oldest_request(
    tmp_path: Path, make_program: Callable[[str], Program], model: tuple[ScriptedModel, ModelServer, threading.Event]
) -> None:
    scripted, server, _ = model
    batch = two_waiting(Batch, tmp_path, make_program(PROGRAM), scripted, server.base_url)
    batch.settle_one()
    assert slow(batch) == [True] and batch.waiting == 1
    assert scripted.released == [False], "the first reply came when its hold ran out"


def test_an_arrival_batch_takes_the_first_reply_in_and_records_which(
    tmp_path: Path, make_program: Callable[[str], Program], model: tuple[ScriptedModel, ModelServer, threading.Event]
) -> None:
    scripted, server, release = model
    batch = two_waiting(ArrivalBatch, tmp_path, make_program(PROGRAM), scripted, server.base_url)
    assert isinstance(batch, ArrivalBatch)
    batch.settle_one()
    assert slow(batch) == [False] and batch.waiting == 1, "the second offspring's reply came first"
    release.set()
    batch.settle_one()
    assert slow(batch) == [False, True] and batch.take_picked() == [1, 0]
    assert scripted.released == [True], "the first reply was still held when the second was taken"


def test_an_arrival_batch_follows_a_recorded_order(
    tmp_path: Path, make_program: Callable[[str], Program], model: tuple[ScriptedModel, ModelServer, threading.Event]
) -> None:
    """Given the order a run recorded, the batch takes the offspring it names, waiting for the
    slow reply if need be; an order that names no waiting offspring is an error, and so is one
    that runs out where the record took an answer, unless the batch is lenient (a closing
    generation's order the run did not live to record): then the oldest."""
    scripted, server, release = model
    batch = two_waiting(ArrivalBatch, tmp_path, make_program(PROGRAM), scripted, server.base_url)
    assert isinstance(batch, ArrivalBatch)
    batch.recorded_order, batch.lenient = collections.deque([0, 3]), False
    threading.Timer(0.5, release.set).start()  # the slow reply comes while the batch waits for it
    batch.settle_one()
    assert slow(batch) == [True] and batch.picked == [0] and scripted.released == [True]
    with pytest.raises(OrderError):
        batch.settle_one()
    batch.recorded_order = collections.deque()
    with pytest.raises(OrderError):
        batch.settle_one()
    batch.lenient = True
    batch.settle_one()
    assert slow(batch) == [True, False] and batch.waiting == 0
