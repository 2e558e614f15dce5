"""Steady-state runs with a model whose replies come out of order, against a scripted
OpenAI-compatible server: the search takes each offspring as its reply comes (not the oldest
request first), records the order it took them in, and a killed run resumes, and a finished one
replays offline, to the same events, front and history."""

from __future__ import annotations

import collections
import hashlib
import json
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gi.cli.main import main
from gi.config import load_config
from gi.engine.progress import Progress
from gi.run.experiment import run_experiment
from tests.llm_server import Action, ModelServer, ScriptedModel, serve
from tests.run.test_llm_runs import LINEAR, SECRET, write_experiment
from tests.run.test_steady_state import events, front, history, kill_when, summary_of

RUN = "pairs-seed3"


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GI_TEST_KEY", SECRET)


@pytest.fixture
def model() -> Iterator[tuple[ScriptedModel, ModelServer]]:
    scripted = ScriptedModel(default=Action(reply=LINEAR))
    for server in serve(scripted):
        yield scripted, server


def steady_config(tmp_path: Path, base_url: str, *, generations: int = 2) -> Path:
    """The pairs experiment in steady state, the model making every mutation it can, four
    requests in flight and no client timeout a held reply could run into."""
    path = write_experiment(tmp_path, base_url, share=1.0, extra="concurrency = 4\n")
    text = path.read_text()
    text = text.replace("population = 6\ngenerations = 3\n", f"population = 4\ngenerations = {generations}\n")
    text = text.replace("[search]\n", "[search]\nsteady_state = true\n").replace("timeout = 2\n", "timeout = 60\n")
    path.write_text(text)
    return path


def sampled(body: dict[str, Any], asked: collections.Counter[str]) -> str:
    """The linear version under a name made from the request and how often it was asked (a model
    sampling anew), so that each reply is a program of its own, the same again for the same ask."""
    text = json.dumps(body.get("messages", body), sort_keys=True)
    asked[text] += 1
    return LINEAR.replace("seen", "seen_" + hashlib.sha256(f"{text}{asked[text]}".encode()).hexdigest()[:8])


def picks(store: Path) -> list[list[int]]:
    """The orders of answers the run recorded, event by event ("bred", "topped", "settled")."""
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT individual FROM arrivals WHERE kind != 'told' ORDER BY seq").fetchall()
    return [[int(place) for place in text.split()] for (text,) in rows]


@pytest.mark.slow
def test_a_slow_first_reply_holds_up_no_other_and_the_order_taken_replays(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer]
) -> None:
    """The first request to reach the server (the first offspring's, but for a race between the
    pool's threads) has its reply held until the run has taken a result in (half a minute at
    most): a search that waited for the oldest request would take no result, and breed nothing
    more, until it came. The run takes later replies' offspring first and records the order; its
    replay, the server gone, takes the replies in the recorded order to the same front."""
    scripted, server = model
    told = threading.Event()
    asked: collections.Counter[str] = collections.Counter()

    def hold_the_first(body: dict[str, Any]) -> Action:
        reply = sampled(body, asked)
        if len(scripted.requests) == 1:
            return Action(reply=LINEAR.replace("seen", "seen_held"), hold=told, delay=30.0)
        return Action(reply=reply)

    scripted.respond = hold_the_first
    path = steady_config(tmp_path, server.base_url)

    def progress(state: Progress, generation_done: bool) -> None:
        if state.done_in_generation:
            told.set()

    summary = run_experiment(load_config(path), on_progress=progress).summary
    assert summary["stopped"]["reason"] == "generations"
    assert scripted.released[0] is True, "a result was taken in while the first reply was held"
    store = tmp_path / "runs" / RUN / "store.sqlite"
    with sqlite3.connect(store) as db:
        (first,) = db.execute("SELECT patch FROM individuals WHERE id = 'g0-i1'").fetchone()
    assert "seen_" in first and "seen_held" not in first, "the first offspring bred waited for no held reply"
    assert any(any(order) for order in picks(store)), "the order of answers taken is recorded, not oldest first"

    server.stop()
    assert main(["replay", str(path), "--quiet"]) == 0
    replayed = summary_of(store.parent / "replay")
    assert replayed["replay"] == {"history": True, "front": True}
    assert replayed["llm"]["requests"] == 0 and replayed["llm"]["cache_hits"] >= 1
    assert front(replayed) == front(summary) and history(replayed) == history(summary)
    assert events(store.parent / "replay" / "store.sqlite") == events(store)


@pytest.mark.slow
def test_a_killed_run_whose_replies_come_out_of_order_resumes_to_its_events_and_replays(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer]
) -> None:
    """Replies come after a delay that depends on the request, so they overtake one another. A
    run killed mid-generation keeps every event it recorded when resumed, orders of answers
    included, and the finished run's replay follows them all to its front and history."""
    scripted, server = model
    asked: collections.Counter[str] = collections.Counter()

    def shuffled(body: dict[str, Any]) -> Action:
        reply = sampled(body, asked)
        return Action(reply=reply, delay=int(hashlib.sha256(reply.encode()).hexdigest(), 16) % 5 * 0.15)

    scripted.respond = shuffled
    config = steady_config(tmp_path, server.base_url, generations=3)
    store = tmp_path / "runs" / RUN / "store.sqlite"
    recorded = kill_when(config, store, told=7)  # mid-way through generation 1
    command = [sys.executable, "-m", "gi.cli", "run", str(config), "--quiet"]
    resumed = subprocess.run(command, capture_output=True, check=False, text=True)
    assert resumed.returncode == 0, resumed.stderr
    finished = events(store)
    assert finished[: len(recorded)] == recorded
    assert any(any(order) for order in picks(store)), "no reply overtook another"
    summary = summary_of(store.parent)
    assert summary["stopped"]["reason"] == "generations"

    server.stop()
    assert main(["replay", str(config), "--quiet"]) == 0
    replayed = summary_of(store.parent / "replay")
    assert replayed["replay"] == {"history": True, "front": True}
    assert front(replayed) == front(summary) and history(replayed) == history(summary)
    assert events(store.parent / "replay" / "store.sqlite") == finished


@pytest.mark.slow
def test_a_run_killed_after_a_close_that_kept_requests_in_flight_resumes_and_replays(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer]
) -> None:
    """A generation's close waits for no answer: its checkpoint keeps the offspring still waiting
    on the model, and the requests stay in flight. A run killed just after such a checkpoint
    asks for them again when resumed, keeps every event it recorded, and its replay follows
    them all, offline, to its front and history."""
    scripted, server = model
    asked: collections.Counter[str] = collections.Counter()

    def shuffled(body: dict[str, Any]) -> Action:
        reply = sampled(body, asked)
        return Action(reply=reply, delay=int(hashlib.sha256(reply.encode()).hexdigest(), 16) % 5 * 0.15)

    scripted.respond = shuffled
    config = steady_config(tmp_path, server.base_url, generations=3)
    store = tmp_path / "runs" / RUN / "store.sqlite"
    recorded = kill_when(config, store, saved=2)
    with sqlite3.connect(store) as db:
        (state,) = db.execute("SELECT value FROM meta WHERE key = 'steady_state'").fetchone()
    assert json.loads(state)["waiting"], "the close kept offspring waiting on the model"
    assert all(kind != "settled" for kind, _, _ in recorded), "no close waited for the answers"
    command = [sys.executable, "-m", "gi.cli", "run", str(config), "--quiet"]
    resumed = subprocess.run(command, capture_output=True, check=False, text=True)
    assert resumed.returncode == 0, resumed.stderr
    finished = events(store)
    assert finished[: len(recorded)] == recorded
    summary = summary_of(store.parent)
    assert summary["stopped"]["reason"] == "generations"

    server.stop()
    assert main(["replay", str(config), "--quiet"]) == 0
    replayed = summary_of(store.parent / "replay")
    assert replayed["replay"] == {"history": True, "front": True}
    assert front(replayed) == front(summary) and history(replayed) == history(summary)
    assert events(store.parent / "replay" / "store.sqlite") == finished
