"""One `gi run`, timed part by part, for benchmarks/evaluation_floor.py (run as a subprocess).

python benchmarks/floor_probe.py CONFIG OUT.json [--breakdown] [gi run's options...]

Runs `gi run CONFIG --quiet ...` in this process with whichever gi is first on PYTHONPATH (this
tree's, or the code compared against), and writes OUT.json: the evaluations the search made,
the search's seconds (`RunLoop.run`: every generation, breeding to checkpoint), the whole
command's seconds and the front of summary.json. With `--breakdown`, it also wraps gi's
functions to take the time of each part of an evaluation (only this process's functions are
wrapped; the run is gi's as written), and has each test run load benchmarks/floor_timer.py,
whose timestamps of the child's phases come back on its stderr.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

TIMER = Path(__file__).resolve().parent / "floor_timer.py"
TIMER_MODULE = "gi_floor_timer"
MARKER = "GI-FLOOR-TIMES "
#: The line benchmarks/floor_timer.py writes as the child's pytest run hands over to gi's worker code.
ENDED = "GI-FLOOR-ENDED "

#: Seconds by part, summed over threads; the child's phases by name.
TOTALS: dict[str, float] = {}
COUNTS: dict[str, int] = {}
CHILDREN: list[dict[str, Any]] = []
#: The edited files of each variant the search evaluated (for the floor's harness).
VARIANTS: list[dict[str, str]] = []
_LOCK = threading.Lock()
#: Whether the search runs: only its parts are counted (not the original's runs before it).
SEARCHING = threading.Event()


def _add(part: str, seconds: float) -> None:
    if not SEARCHING.is_set():
        return
    with _LOCK:
        TOTALS[part] = TOTALS.get(part, 0.0) + seconds
        COUNTS[part] = COUNTS.get(part, 0) + 1


def timed(owner: Any, name: str, part: str) -> None:
    """Wrap owner.name (if it has it) so that each call's seconds count towards `part`."""
    function = getattr(owner, name, None)
    if function is None:
        return

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            _add(part, time.perf_counter() - started)

    setattr(owner, name, wrapper)


def timed_property(owner: Any, name: str, part: str) -> None:
    """Time a functools.cached_property's computation."""
    prop = owner.__dict__.get(name)
    if isinstance(prop, functools.cached_property):
        function = prop.func

        def compute(self: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(self)
            finally:
                _add(part, time.perf_counter() - started)

        prop.func = compute


def timed_context(owner: Any, name: str, part: str) -> None:
    """Time the whole `with` block of a context-manager method."""
    method = getattr(owner, name, None)
    if method is None:
        return

    @contextlib.contextmanager
    def wrapper(*args: Any, **kwargs: Any) -> Iterator[Any]:
        started = time.perf_counter()
        try:
            with method(*args, **kwargs) as value:
                yield value
        finally:
            _add(part, time.perf_counter() - started)

    setattr(owner, name, wrapper)


def instrument() -> None:
    """Wrap the parts of an evaluation in gi's process, and have test runs load the timer plugin."""
    from gi.algorithms import variation
    from gi.algorithms.base import Search
    from gi.engine import evaluation, warm
    from gi.engine.held_out import HeldOut
    from gi.engine.service import EvaluationService
    from gi.engine.store import RunStore
    from gi.model.patch import Variant
    from gi.run.loop import RunLoop

    timed(RunLoop, "_ask", "breeding")
    timed(variation, "apply", "edit application and code generation")
    timed_property(Variant, "tree_hash", "tree hash")
    timed_property(Variant, "syntax_error", "compiling the edited files")
    timed(evaluation.Evaluator, "evaluate", "evaluate")
    evaluate = evaluation.Evaluator.evaluate

    def keep_variant(self: Any, variant: Any, *args: Any, **kwargs: Any) -> Any:
        if SEARCHING.is_set():
            with _LOCK:
                VARIANTS.append({file: variant.sources[file] for file in variant.changed_files})
        return evaluate(self, variant, *args, **kwargs)

    evaluation.Evaluator.evaluate = keep_variant
    timed(evaluation.Evaluator, "refusal", "the guard")
    timed(evaluation, "static_measures", "static measures")
    timed(warm.WarmPool, "run_tests", "warm run")
    timed(warm.WarmWorker, "settled", "waiting for the worker to settle")
    timed(warm, "read_report", "reading the report")
    timed(warm, "plugin_files", "the request's files")
    timed_context(RunStore, "transaction", "the store")
    timed(EvaluationService, "evaluate", "batch")
    timed(Search, "tell", "tell")
    timed(RunLoop, "_teach", "teaching the operators")
    timed(RunLoop, "_checkpoint", "checkpoint")
    timed(HeldOut, "generation", "held-out runs")

    arguments = warm.pytest_arguments
    warm.pytest_arguments = lambda *args, **kwargs: ["-p", TIMER_MODULE, *arguments(*args, **kwargs)]
    files = warm.plugin_files

    def plugin_files(install: Callable[[str, str], Path], *args: Any, **kwargs: Any) -> dict[str, str]:
        install(f"{TIMER_MODULE}.py", TIMER.read_text(encoding="utf-8"))
        return dict(files(install, *args, **kwargs))

    warm.plugin_files = plugin_files
    run = warm.WarmWorker.run

    def worker_run(self: Any, request: dict[str, Any], timeout: float) -> Any:
        sent = time.perf_counter()
        outcome = run(self, request, timeout)
        answered = time.perf_counter()
        _add("round trip", answered - sent)
        if outcome is None:
            return outcome
        kept, times, ended = [], None, None
        for line in outcome.stderr.splitlines(keepends=True):
            if line.startswith(MARKER):
                times = json.loads(line[len(MARKER) :])
            elif line.startswith(ENDED):
                ended = float(line[len(ENDED) :])
            else:
                kept.append(line)
        if times is not None and ended is not None:
            times["ended"] = ended
        if times is not None and SEARCHING.is_set():
            with _LOCK:
                CHILDREN.append({**times, "sent": sent, "answered": answered})
        import dataclasses

        return dataclasses.replace(outcome, stderr="".join(kept))

    warm.WarmWorker.run = worker_run


def front(folder: Path) -> list[Any]:
    """The front of a run folder's summary.json, as comparable data: each member's id, edits,
    objectives, diff and held-out outcome."""
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    keys = ("id", "edits", "objectives", "feasible", "diff", "training", "holdout")
    return [{key: member.get(key) for key in keys} for member in summary.get("front", [])]


def descendants_cpu() -> float:
    """CPU seconds of this process's live descendants (the warm workers) and of the children
    they reaped (each variant's child)."""
    import psutil

    total = 0.0
    for process in psutil.Process().children(recursive=True):
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def main() -> None:
    config, out, *rest = sys.argv[1:]
    breakdown = "--breakdown" in rest
    rest = [word for word in rest if word != "--breakdown"]
    from gi.cli.main import main as gi_main
    from gi.run.loop import RunLoop

    if breakdown:
        instrument()
    search: list[float] = []
    cpu: dict[str, float] = {"gi": 0.0, "warm": 0.0, "cold": 0.0}
    loop_run = RunLoop.run

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        started, before, warm = time.perf_counter(), os.times(), descendants_cpu()
        SEARCHING.set()
        try:
            return loop_run(self, *args, **kwargs)
        finally:
            SEARCHING.clear()
            search.append(time.perf_counter() - started)
            after = os.times()
            cpu["gi"] += after.user + after.system - before.user - before.system
            cpu["cold"] += (after.children_user + after.children_system - before.children_user
                            - before.children_system)  # fmt: skip
            cpu["warm"] += descendants_cpu() - warm

    RunLoop.run = run  # type: ignore[method-assign]
    started = time.perf_counter()
    code = gi_main(["run", config, "--quiet", "--fresh", *rest])
    wall = time.perf_counter() - started
    from gi.config import load_config

    loaded = load_config(Path(config))
    folder = loaded.run_folder
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8")) if code == 0 else {}
    result = {
        "exit": code,
        "evaluations": summary.get("evaluations", 0),
        "search_seconds": sum(search),
        "wall_seconds": wall,
        "cpu": cpu,
        "front": front(folder) if code == 0 else [],
        "totals": TOTALS,
        "counts": COUNTS,
        "children": CHILDREN,
        "variants": VARIANTS,
    }
    Path(out).write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    main()
