"""Experiments of several runs: every arm with every seed, into one experiment folder.

    config ─► Config.runs(): one config per (seed, arm), seed by seed
           ─► each run as `gi.run.experiment.run_experiment` would, in <output>/<name>/<arm>-seed<seed>/
           ─► experiment.json: the arms, the seeds and the run folders, for `gi compare`

Runs that finished (their report is written and their last checkpoint is the last
generation) are skipped; the others resume from their last checkpoint, so an experiment
killed at any moment resumes the runs that did not finish. Several runs go at once when
`experiment.parallel_runs` allows, each in its own process.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import queue
import sys
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from gi.config import Config
from gi.config.machine import usable_cores
from gi.engine.progress import Progress
from gi.engine.run_folder import STORE_NAME, SUMMARY_NAME
from gi.engine.store import RunStore
from gi.model.errors import GIError
from gi.reports.inert import inert
from gi.run.experiment import run_experiment

MANIFEST_NAME = "experiment.json"

#: Receives one line of progress (a generation of a run done, a run skipped or finished).
LineCallback = Callable[[str], None]


@dataclass(frozen=True)
class RunOutcome:
    """What became of one run of an experiment."""

    arm: str
    seed: int
    folder: Path
    #: "done" (ran or resumed to its end), "skipped" (finished before) or "failed".
    status: str
    error: str = ""
    exit_code: int = 0


def parallel_runs(config: Config) -> int:
    """How many runs go at once: `experiment.parallel_runs`, or with "auto" the cores over
    `evaluation.workers` (at least 1), and 1 when runtime is measured (timings must not overlap)."""
    wanted = config.experiment.parallel_runs
    if wanted != "auto":
        return wanted
    if "runtime" in config.objectives.names():
        return 1
    return max(1, usable_cores() // config.evaluation.workers)


def sharing_cores(run: Config, at_once: int) -> Config:
    """`run` as one of `at_once` runs at a time: `evaluation.spare_pages = "auto"` counts the
    other runs' workers too (a spare child's work only helps on a core no test run needs)."""
    if run.evaluation.spare_pages != "auto":
        return run
    free = run.evaluation.workers * at_once < usable_cores()
    return run.model_copy(update={"evaluation": run.evaluation.model_copy(update={"spare_pages": free})})


def finished(run: Config) -> bool:
    """Whether a run's folder holds this config's finished run: a report, and a last
    checkpoint at the last generation."""
    store_path = run.run_folder / STORE_NAME
    if not (run.run_folder / SUMMARY_NAME).is_file() or not store_path.is_file():
        return False
    store = RunStore(store_path)
    try:
        checkpoint = store.last_checkpoint()
        same = store.get_meta("config") == run.fingerprint()
    finally:
        store.close()
    return same and checkpoint is not None and checkpoint.generation >= run.search.generations


def write_manifest(config: Config, runs: list[Config]) -> Path:
    """experiment.json in the experiment folder: which arms, seeds and run folders it has."""
    folder = config.experiment_folder
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {
        "name": config.experiment.name,
        "config": str(config.source),
        "arms": list(dict.fromkeys(run.arm for run in runs)),
        "seeds": list(dict.fromkeys(run.experiment.seed for run in runs)),
        "runs": [
            {
                "arm": run.arm,
                "seed": run.experiment.seed,
                "algorithm": run.search.algorithm,
                "folder": run.run_folder.name,
            }
            for run in runs
        ],
    }
    path = folder / MANIFEST_NAME
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, path)
    return path


def _label(run: Config) -> str:
    return f"{run.arm} seed {run.experiment.seed}"


def _progress_lines(run: Config, on_line: LineCallback) -> Callable[[Progress, bool], None]:
    """A run's progress callback that says one line per finished generation."""

    def report(state: Progress, generation_done: bool) -> None:
        if not generation_done:
            return
        best = "  ".join(f"{name}={value:.4g}" for name, value in state.best.items())
        on_line(
            f"{_label(run)}: gen {state.generation:>3}/{state.generations}  front {state.front_size:>3}"
            f"  evals {state.evaluations}  HV {state.hypervolume:.4g}  {best}"
        )

    return report


def run_arms(
    config: Config,
    *,
    fresh: bool = False,
    offline: bool = False,
    on_line: LineCallback | None = None,
    parallel: int | None = None,
) -> list[RunOutcome]:
    """Run every arm with every seed (see the module's docstring); returns what became of each.

    A run that fails with bad input (a `GIError`) stops the experiment after the runs under
    way: the error is raised once they end. Ctrl-C stops every run; each resumes later.
    """
    say = on_line or (lambda line: None)
    runs = config.runs()
    write_manifest(config, runs)
    pending: list[Config] = []
    outcomes: dict[Path, RunOutcome] = {}
    for run in runs:
        if not fresh and finished(run):
            outcomes[run.run_folder] = RunOutcome(str(run.arm), run.experiment.seed, run.run_folder, "skipped")
            say(f"{_label(run)}: finished before, skipped")
        else:
            pending.append(run)
    at_once = parallel if parallel is not None else parallel_runs(config)
    if at_once <= 1:
        _run_here(pending, fresh, offline, say, outcomes)
    else:
        pending = [sharing_cores(run, at_once) for run in pending]
        _run_in_processes(pending, fresh, offline, at_once, on_line is not None, outcomes)
    ordered = [outcomes[run.run_folder] for run in runs if run.run_folder in outcomes]
    failed = [outcome for outcome in ordered if outcome.status == "failed"]
    if failed:
        raise RunsFailedError(failed)
    return ordered


class RunsFailedError(GIError):
    """Runs of an experiment failed on bad input; one line per run, its first error's exit code."""

    def __init__(self, failed: list[RunOutcome]) -> None:
        super().__init__("\n".join(f"{o.arm} seed {o.seed}: {o.error}" for o in failed))
        self.exit_code = failed[0].exit_code or 1


def _run_here(
    runs: list[Config], fresh: bool, offline: bool, say: LineCallback, outcomes: dict[Path, RunOutcome]
) -> None:
    """One run after another in this process; the first failure stops the rest."""
    for run in runs:
        try:
            result = run_experiment(run, fresh=fresh, offline=offline, on_progress=_progress_lines(run, say))
        except GIError as error:
            outcomes[run.run_folder] = RunOutcome(
                str(run.arm), run.experiment.seed, run.run_folder, "failed", str(error), error.exit_code
            )
            return
        outcomes[run.run_folder] = RunOutcome(str(run.arm), run.experiment.seed, result.folder, "done")
        say(f"{_label(run)}: done, {result.summary['evaluations']} evaluations")


def _child(run: Config, fresh: bool, offline: bool, verbose: bool, errors: Any) -> None:
    """A run in its own process: lines to standard output, a bad input's message to `errors`."""

    def say(line: str) -> None:
        if verbose:
            print(inert(line), flush=True)

    try:
        result = run_experiment(run, fresh=fresh, offline=offline, on_progress=_progress_lines(run, say))
    except GIError as error:
        errors.put((str(run.run_folder), str(error), error.exit_code))
        sys.exit(error.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    say(f"{_label(run)}: done, {result.summary['evaluations']} evaluations")


def _run_in_processes(
    runs: list[Config], fresh: bool, offline: bool, at_once: int, verbose: bool, outcomes: dict[Path, RunOutcome]
) -> None:
    """Up to `at_once` runs at a time, each in a fresh process; after a failure no new one starts.
    On Ctrl-C or SIGTERM here, every run still going is terminated (each resumes later)."""
    context = multiprocessing.get_context("spawn")
    errors = context.Queue()
    messages: dict[str, tuple[str, int]] = {}
    waiting = list(runs)
    going: dict[Any, tuple[BaseProcess, Config]] = {}
    stop = False
    try:
        while waiting or going:
            while waiting and not stop and len(going) < at_once:
                run = waiting.pop(0)
                process: BaseProcess = context.Process(target=_child, args=(run, fresh, offline, verbose, errors))
                process.start()
                going[process.sentinel] = (process, run)
            if not going:
                break
            for sentinel in wait(list(going)):
                process, run = going.pop(sentinel)
                process.join()
                if process.exitcode == 130:
                    raise KeyboardInterrupt
                arm, seed = str(run.arm), run.experiment.seed
                if process.exitcode == 0:
                    outcomes[run.run_folder] = RunOutcome(arm, seed, run.run_folder, "done")
                    continue
                stop = True
                message, code = _error_of(errors, messages, run, process.exitcode)
                outcomes[run.run_folder] = RunOutcome(arm, seed, run.run_folder, "failed", message, code)
    except BaseException:
        for process, _ in going.values():
            process.terminate()
        for process, _ in going.values():
            process.join()
        raise
    finally:
        errors.close()


def _error_of(errors: Any, messages: dict[str, tuple[str, int]], run: Config, exit_code: int | None) -> tuple[str, int]:
    """The message a failed child left (its GIError), or what its exit code says."""
    key = str(run.run_folder)
    try:
        while key not in messages:
            folder, message, code = errors.get(timeout=2)
            messages[folder] = (message, code)
    except queue.Empty:
        return f"the run's process ended with exit code {exit_code}", 1
    return messages[key]
