"""Where does a generation's wall time go?

Runs `gi run CONFIG` in this process with timestamps around the parts of a generation, and
prints, per generation after generation 0 (what benchmarks/real_projects.py's rate counts):

- wall: from one generation's checkpoint to the next;
- breed: `ask`, the batch's breeding (libcst's code of each edited module, tree hashes), and
  whether it overlapped the evaluations (it runs in a thread of its own, gi.run.loop);
- evaluate: the batch, from its first candidate to its last result, and inside it the
  evaluating threads' time: the static measures gi takes in its own process, the warm workers'
  round trips (of which the forked child's own seconds: pytest's collection and run), the rest
  (the patch's text, the stop plan, the cold path's copies and interpreters);
- idle: how long the first evaluating thread to finish its last variant waited for the others;
- held-out: the held-out runs of the front's new members after `tell`;
- tell+: `tell`, teaching the operators, the checkpoint (SQLite).

Only this process's functions are wrapped (to take the time); the run is gi's as written. The
run goes to a fresh run folder (experiment.name gets a suffix). Run it on a quiet machine:

python benchmarks/generation_profile.py CONFIG [--generations 3] [--population 10] [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import functools
import itertools
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gi.engine.evaluation as evaluation_module
from gi.algorithms.base import Search
from gi.cli.main import main as gi_main
from gi.engine.evaluation import Evaluator
from gi.engine.held_out import HeldOut
from gi.engine.service import EvaluationService
from gi.engine.warm import WarmWorker
from gi.run.loop import RunLoop


@dataclass(frozen=True)
class Span:
    part: str
    thread: str
    start: float
    end: float
    #: The forked child's own seconds, for a warm worker's round trip.
    child: float = 0.0

    @property
    def seconds(self) -> float:
        return self.end - self.start


SPANS: list[Span] = []
_LOCK = threading.Lock()


def _note(part: str, start: float, child: float = 0.0) -> None:
    with _LOCK:
        SPANS.append(Span(part, threading.current_thread().name, start, time.perf_counter(), child))


def timed(owner: Any, name: str, part: str) -> None:
    """Wrap owner.name so that each call is noted as a span of `part`."""
    function: Callable[..., Any] = getattr(owner, name)

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            _note(part, start)

    setattr(owner, name, wrapper)


def instrument() -> None:
    for owner, name, part in (
        (RunLoop, "_ask", "breed"),
        (EvaluationService, "evaluate", "batch"),
        (Evaluator, "evaluate", "variant"),
        (evaluation_module, "static_measures", "static"),
        (HeldOut, "generation", "held-out"),
        (Search, "tell", "tell+"),
        (RunLoop, "_teach", "tell+"),
        (RunLoop, "_checkpoint", "checkpoint"),
    ):
        timed(owner, name, part)
    run = WarmWorker.run

    def worker_run(self: WarmWorker, request: dict[str, Any], timeout: float) -> Any:
        start = time.perf_counter()
        outcome = run(self, request, timeout)
        _note("worker", start, outcome.seconds if outcome is not None else 0.0)
        return outcome

    WarmWorker.run = worker_run  # type: ignore[method-assign]


def report() -> None:
    checkpoints = [span for span in SPANS if span.part == "checkpoint"]
    print(f"{'gen':>3} {'wall':>6} {'breed':>6} {'overlap':>7} {'evaluate':>8} {'static':>7} {'worker':>7}"
          f" {'child':>6} {'rest':>6} {'idle':>5} {'held-out':>8} {'tell+':>6}")  # fmt: skip
    totals: dict[str, float] = {}
    for generation, (before, after) in enumerate(itertools.pairwise(checkpoints), start=1):
        inside = [span for span in SPANS if before.end <= span.start and span.end <= after.end]

        def total(part: str, spans: list[Span] = inside) -> float:
            return sum(span.seconds for span in spans if span.part == part)

        batch = next(span for span in inside if span.part == "batch")
        breed = next(span for span in inside if span.part == "breed")
        evaluating = [span for span in inside if batch.start <= span.start and span.end <= batch.end]
        variants = [span for span in evaluating if span.part == "variant"]
        last: dict[str, float] = {}
        for span in variants:
            last[span.thread] = max(last.get(span.thread, 0.0), span.end)
        row = {
            "wall": after.end - before.end,
            "breed": breed.seconds,
            "evaluate": batch.seconds,
            "static": total("static", evaluating),
            "worker": total("worker", evaluating),
            "child": sum(span.child for span in evaluating if span.part == "worker"),
            "rest": total("variant", evaluating) - total("static", evaluating) - total("worker", evaluating),
            "idle": max(last.values()) - min(last.values()) if len(last) > 1 else 0.0,
            "held-out": total("held-out"),
            "tell+": total("tell+") + total("checkpoint"),
        }
        for key, value in row.items():
            totals[key] = totals.get(key, 0.0) + value
        overlap = "yes" if breed.end > batch.start + 1e-3 else "no"
        print(f"{generation:>3} {row['wall']:>6.2f} {row['breed']:>6.2f} {overlap:>7} {row['evaluate']:>8.2f}"
              f" {row['static']:>7.2f} {row['worker']:>7.2f} {row['child']:>6.2f} {row['rest']:>6.2f}"
              f" {row['idle']:>5.2f} {row['held-out']:>8.2f} {row['tell+']:>6.2f}")  # fmt: skip
    evaluations = sum(1 for span in SPANS if span.part == "variant" and span.start >= checkpoints[0].end)
    if totals:
        print(f"generations 1..: {totals['wall']:.2f} s for {evaluations} evaluations"
              f" ({evaluations / totals['wall']:.2f} a second); static, worker, child and rest are the"
              " evaluating threads' seconds (2 threads: up to twice the batch's)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config")
    parser.add_argument("--generations", type=int, default=3)
    parser.add_argument("--population", type=int, default=10)
    parser.add_argument("--set", action="append", default=[], help="a config key, as gi run --set takes it")
    args = parser.parse_args()
    instrument()
    name = f"profile-{secrets.token_hex(3)}"
    sets = [item for value in [*args.set, f"experiment.name={name}"] for item in ("--set", value)]
    print(f"load {os.getloadavg()[0]:.2f} at the start; run {name}", flush=True)
    code = gi_main(["run", args.config, "--quiet", "--generations", str(args.generations),
                    "--population", str(args.population), *sets])  # fmt: skip
    report()
    print(f"gi run exit {code}; load {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
