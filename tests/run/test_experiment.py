"""Whole runs from the example configs: real pytest runs, a real run store, real diffs."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gi.cli.main import main
from gi.config import Config, load_config
from gi.run.experiment import run_experiment
from tests.runs import checkpoints, start_run

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


def checksums(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def example(name: str, output: Path, program: Path, **search: Any) -> Config:
    """An example config, writing into `output` and pointing at a copy of its program."""
    config = load_config(EXPERIMENTS / f"{name}.toml")
    update: dict[str, Any] = {
        "experiment": config.experiment.model_copy(update={"output": output}),
        "program": config.program.model_copy(update={"root": program}),
        "search": config.search.model_copy(update=search),
    }
    if config.workload is not None:
        # The rigorous protocol is 30 processes a program; 6 keep CI within its budget, and the
        # exact Mann-Whitney test of 6 against 6 still reaches p = 0.0022 when every process of
        # one side is faster (the dedupe speed-up is over 100x): significant after Holm's
        # correction over a front of up to 20 members (4 against 4 reached 0.029, which Holm
        # takes past 0.05 as soon as two members are measured).
        update["workload"] = config.workload.model_copy(update={"rigorous_processes": 6})
    return config.model_copy(update=update)


def front(summary: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    return [(m["id"], m["edits"], m["objectives"]) for m in summary["front"]]


# Exhaustive: README's quick start (tests/test_readme.py) makes this simplification search on grading, and
# tests/studies/test_overfitting.py flags overfitting members.
@pytest.mark.slow
@pytest.mark.exhaustive
def test_simplification_run_finds_simpler_code_and_flags_overfitting(
    tmp_path: Path, example_copy: Callable[[str], Path]
) -> None:
    program = example_copy("grading")
    before = checksums(program)
    result = run_experiment(example("grading", tmp_path / "runs", program))
    summary = result.summary
    assert checksums(program) == before, "the program's files must be unchanged"

    baseline = summary["baseline"]["objectives"]
    assert baseline == {"failed_tests": 0.0, "complexity": 12.0, "size": 0.0}
    simpler = [
        m for m in summary["front"] if m["objectives"]["failed_tests"] == 0 and m["objectives"]["complexity"] < 12
    ]
    assert simpler, f"no passing member with lower complexity in {front(summary)}"

    for member in summary["front"]:
        held = member["holdout"]
        if not member["diff"]:
            assert member["overfits"] is False, "the original program never overfits"
        original = summary["baseline"]["holdout"]
        assert held["passed"] + held["failed"] + held["skipped"] == sum(original.values())
        if member["diff"]:
            diff = (result.folder / member["diff"]).read_text()
            if '-        raise ValueError(f"score out of range: {score}")' in diff or "-    if score < 0 or" in diff:
                assert member["overfits"], f"{member['id']} deletes the range check but is not flagged"
            subprocess.run(["git", "apply", "--check", str(result.folder / member["diff"])], cwd=program, check=True)
    rates = [m["overfits"] for m in summary["front"] if m["diff"]]  # the original is in no rate
    assert summary["overfitting_rate"] == (pytest.approx(sum(rates) / len(rates)) if rates else None)

    assert (result.folder / "store.sqlite").exists()
    log = (result.folder / "evaluations.jsonl").read_text().splitlines()
    assert len(log) == summary["evaluations"] + 1  # every evaluation, and the baseline
    assert {json.loads(line)["status"] for line in log} <= {"ok", "unparseable", "timed_out", "crashed"}
    assert len(summary["hypervolume"]) == 11 and summary["hypervolume"][-1] >= summary["hypervolume"][0]
    assert summary["wall_seconds"] > 0


# Exhaustive: README's Repairing failing tests (tests/test_readme.py) makes a repair search from gi init.
@pytest.mark.slow
@pytest.mark.exhaustive
def test_repair_run_finds_a_patch_passing_every_training_test(
    tmp_path: Path, example_copy: Callable[[str], Path]
) -> None:
    program = example_copy("windows")
    before = checksums(program)
    # 3 generations rather than the example's 10: the CI budget (the repair comes in generation 1).
    summary = run_experiment(example("windows", tmp_path / "runs", program, generations=3)).summary
    assert checksums(program) == before
    assert summary["baseline"]["objectives"]["failed_tests"] == 4
    repaired = [m for m in summary["front"] if m["objectives"]["failed_tests"] == 0]
    assert repaired, f"no repair in {front(summary)}"
    # Every test runs the loop condition (line 12), so it is among the most suspicious lines.
    scores = {entry["line"]: entry["score"] for entry in summary["fault_localisation"]}
    assert scores[12] == max(scores.values())


def write_small_config(tmp_path: Path, program: Path, output: Path) -> Path:
    """The grading example at 8 x 4, writing into `output`."""
    text = (EXPERIMENTS / "grading.toml").read_text()
    text = text.replace('root = "programs/grading"', f'root = "{program}"')
    text = text.replace('output = "runs"', f'output = "{output}"')
    text = text.replace("population = 20", "population = 8").replace("generations = 10", "generations = 4")
    path = tmp_path / f"{output.name}.toml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    """One uninterrupted small run through the command line: (config, run folder, summary)."""
    tmp_path = tmp_path_factory.mktemp("small")
    program = EXPERIMENTS / "programs" / "grading"
    before = checksums(program)
    config = write_small_config(tmp_path, program, tmp_path / "whole")
    assert main(["run", str(config), "--quiet"]) == 0
    assert checksums(program) == before
    folder = tmp_path / "whole" / "grading-simplify-seed1"
    return config, folder, json.loads((folder / "summary.json").read_text())


# Exhaustive: test_the_warm_and_the_cold_path_give_the_same_run (this file) runs one config and seed twice and
# compares the runs.
@pytest.mark.slow
@pytest.mark.exhaustive
def test_same_config_and_seed_give_the_same_front(tmp_path: Path, small_run: tuple[Path, Path, dict[str, Any]]) -> None:
    _, _, expected = small_run
    again = write_small_config(tmp_path, EXPERIMENTS / "programs" / "grading", tmp_path / "again")
    assert main(["run", str(again), "--quiet"]) == 0
    summary = json.loads((tmp_path / "again" / "grading-simplify-seed1" / "summary.json").read_text())
    assert front(summary) == front(expected)
    assert summary["evaluations"] == expected["evaluations"]
    assert summary["hypervolume"] == expected["hypervolume"]
    assert summary["generalisation_gap"] == expected["generalisation_gap"]


@pytest.mark.slow
def test_a_killed_run_resumes_to_the_same_front(
    tmp_path: Path, example_copy: Callable[[str], Path], small_run: tuple[Path, Path, dict[str, Any]]
) -> None:
    _, _, expected = small_run
    program = example_copy("grading")
    killed = write_small_config(tmp_path, program, tmp_path / "killed")
    store = tmp_path / "killed" / "grading-simplify-seed1" / "store.sqlite"
    scratch = tmp_path / "scratch"  # where both runs make their workspaces
    scratch.mkdir()
    environment = {**os.environ, "TMPDIR": str(scratch)}
    process = start_run(killed, store, 2, env=environment)
    assert process.poll() is None, "the run ended before it could be killed"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert not (store.parent / "summary.json").exists()
    # Kept on purpose: shipped bundles, and the user's folder of locks
    # (gi.engine.sandbox.files.user_folder).
    kept = (f"gi-bundles-{os.getuid()}", f"gi-{os.getuid()}")
    left = [folder for folder in scratch.glob("gi-*") if folder.name not in kept]
    assert left, "the killed run left its workers' workspaces behind"

    command = [sys.executable, "-m", "gi.cli", "run", str(killed), "--quiet"]
    again = subprocess.run(command, check=False, env=environment, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    resumed = json.loads((store.parent / "summary.json").read_text())
    assert front(resumed) == front(expected)
    assert resumed["generalisation_gap"] == expected["generalisation_gap"]
    assert not any(folder.exists() for folder in left), "the resumed run removed the killed one's workspaces"


@pytest.mark.slow
def test_show_prints_a_members_diff(
    small_run: tuple[Path, Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    _, folder, summary = small_run
    member = next(m for m in summary["front"] if m["diff"])
    assert main(["show", str(folder), member["id"]]) == 0
    out = capsys.readouterr().out
    assert "--- a/grading.py" in out and member["id"] in out
    assert main(["show", str(folder)]) == 0
    assert "Pareto front of grading-simplify" in capsys.readouterr().out
    assert main(["show", str(folder), "nobody"]) == 2
    assert "no front member 'nobody'" in capsys.readouterr().err


def test_a_run_folder_of_another_config_is_refused(tmp_path: Path, example_copy: Callable[[str], Path]) -> None:
    program = example_copy("grading")
    config = write_small_config(tmp_path, program, tmp_path / "runs")
    folder = tmp_path / "runs" / "grading-simplify-seed1"
    folder.mkdir(parents=True)
    from gi.engine.store import Checkpoint, RunStore

    store = RunStore(folder / "store.sqlite")
    store.set_meta("config", {"something": "else"})
    store.checkpoint(Checkpoint(0, [], [], {}, {}))  # that run got going: it is not ours to delete
    store.close()
    result = subprocess.run(
        [sys.executable, "-m", "gi.cli", "run", str(config)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert "holds a run of a different config; rerun with --fresh" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_run_that_never_started_gives_way_to_the_corrected_config(
    tmp_path: Path, example_copy: Callable[[str], Path]
) -> None:
    """A first run whose baseline failed left a store and no checkpoint: the fixed config runs."""
    program = example_copy("grading")
    broken = write_small_config(tmp_path, program, tmp_path / "runs")
    text = broken.read_text()
    broken.write_text(text.replace("timeout = 10", "timeout = 0.01"))
    assert main(["run", str(broken), "--quiet"]) == 2
    store = tmp_path / "runs" / "grading-simplify-seed1" / "store.sqlite"
    assert store.exists() and checkpoints(store) == 0
    fixed = text.replace("generations = 4", "generations = 0")
    broken.write_text(fixed)
    assert main(["run", str(broken), "--quiet"]) == 0
    assert checkpoints(store) == 1


def test_two_runs_of_one_folder_at_once_are_refused(tmp_path: Path, example_copy: Callable[[str], Path]) -> None:
    from gi.engine.storage import lock_run_folder

    program = example_copy("grading")
    config = write_small_config(tmp_path, program, tmp_path / "runs")
    folder = tmp_path / "runs" / "grading-simplify-seed1"
    folder.mkdir(parents=True)
    holder = subprocess.Popen(  # another process holds the run folder, as a running `gi run` does
        [sys.executable, "-c", "import sys, time; from gi.engine.storage import lock_run_folder;"
         " from pathlib import Path;"
         f" lock_run_folder(Path({str(folder)!r})); print('locked', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        result = subprocess.run(
            [sys.executable, "-m", "gi.cli", "run", str(config)], capture_output=True, text=True, check=False
        )
        assert result.returncode == 2, result.stderr
        assert "another gi run is using this run folder" in result.stderr
    finally:
        holder.kill()
        holder.wait()
    lock = lock_run_folder(folder)  # released with its process
    os.close(lock)


def test_show_on_a_folder_that_is_no_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(tmp_path)]) == 2
    assert "no summary.json here" in capsys.readouterr().err


def test_operators_lists_every_operator(capsys: pytest.CaptureFixture[str]) -> None:
    from gi.mutators import CROSSOVERS, OPERATORS

    assert main(["operators"]) == 0
    out = capsys.readouterr().out
    for name in OPERATORS.names() + CROSSOVERS.names():
        assert name in out


# Exhaustive: README's Faster code (tests/test_readme.py) makes this search on dedupe from gi init, and
# checks its member that changes the quadratic check is timed again.
# Not `timing`: the speed-up is over 100x and asserted at 3x, far beyond what a test running
# beside it can skew (the batching one below is 1.8x, and runs alone).
@pytest.mark.slow
@pytest.mark.exhaustive
def test_speed_run_removes_the_redundant_quadratic_check(tmp_path: Path, example_copy: Callable[[str], Path]) -> None:
    program = example_copy("dedupe")
    before = checksums(program)
    # 12 x 5 rather than the example's 20 x 10: the CI budget (the search finds the deletion early).
    summary = run_experiment(example("dedupe", tmp_path / "runs", program, population=12, generations=5)).summary
    assert checksums(program) == before
    assert summary["baseline"]["objectives"]["runtime"] == 1.0
    confirmed = [
        m
        for m in summary["front"]
        if m["objectives"]["failed_tests"] == 0 and m.get("speedup") and m["speedup"].get("significant")
    ]
    assert confirmed, f"no confirmed speed-up in {front(summary)}"
    best = max(confirmed, key=lambda m: m["speedup"]["value"])
    assert best["speedup"]["low"] >= 3.0, best["speedup"]
    assert best["training"]["failed"] == 0
    assert len(summary["runtime_drift"]) == 6  # the original, timed again every generation
    assert "dedupe" in summary["hot_functions"]


@pytest.mark.slow
def test_the_warm_and_the_cold_path_give_the_same_run(tmp_path: Path) -> None:
    """The warm engine is a shortcut, never a different answer: same evaluations, generation
    by generation, and the same front. At 8 x 1: the cold path costs a fresh interpreter and
    pytest start-up per evaluation, three times the warm path's whole 8 x 4 run."""
    runs = {}
    for engine in ("warm", "cold"):
        config = write_small_config(tmp_path, EXPERIMENTS / "programs" / "grading", tmp_path / engine)
        config.write_text(config.read_text().replace("generations = 4", "generations = 1"))
        config.write_text(config.read_text() + f'\n[evaluation]\nengine = "{engine}"\n')
        assert main(["run", str(config), "--quiet"]) == 0
        folder = tmp_path / engine / "grading-simplify-seed1"
        entries = [json.loads(line) for line in (folder / "evaluations.jsonl").read_text().splitlines()]
        log = [
            (e["generation"], e["tree_hash"], e["status"], e["tests"], e["measures"].get("failed_tests"))
            for e in entries
        ]
        runs[engine] = json.loads((folder / "summary.json").read_text()), log
    (warm, warm_log), (cold, cold_log) = runs["warm"], runs["cold"]
    assert (warm["engine"]["training_tests"], cold["engine"]["training_tests"]) == ("warm", "cold")
    assert (warm["engine"]["held_out_tests"], cold["engine"]["held_out_tests"]) == ("warm", "cold")
    assert {generation for generation, *_ in warm_log} == {-1, 0, 1} and len(warm_log) > 9
    assert cold_log == warm_log
    assert front(cold) == front(warm)
    held_out = {run["engine"]["held_out_tests"]: [m["holdout"] for m in run["front"]] for run in (warm, cold)}
    assert held_out["warm"] == held_out["cold"] and any(held_out["warm"]), held_out
    assert warm["generalisation_gap"] == cold["generalisation_gap"]
    assert cold["generations"] == warm["generations"] and cold["hypervolume"] == warm["hypervolume"]


# Exhaustive: tests/engine/test_fail_fast_verdict.py gives tests.fail_fast's verdicts through the real
# evaluator, stopping and not.
@pytest.mark.slow
@pytest.mark.exhaustive
def test_stopping_at_the_first_failure_leaves_the_run_as_it_is(tmp_path: Path) -> None:
    """tests.fail_fast: the shortcut (failed-most-recently first, stop at the first failure)
    saves test runs and changes nothing else: same individuals, front and figures."""
    runs = {}
    for name, shortcuts in (("stopping", "true"), ("whole", "false")):
        config = write_small_config(tmp_path, EXPERIMENTS / "programs" / "grading", tmp_path / name)
        text = config.read_text().replace("timeout = 10 ", "timeout = 10\nfail_fast = true ", 1)
        config.write_text(text + f"\n[evaluation]\nshortcuts = {shortcuts}\n")
        assert main(["run", str(config), "--quiet"]) == 0
        folder = tmp_path / name / "grading-simplify-seed1"
        log = [json.loads(line) for line in (folder / "evaluations.jsonl").read_text().splitlines()]
        runs[name] = json.loads((folder / "summary.json").read_text()), log
    (stopping, stopped_log), (whole, whole_log) = runs["stopping"], runs["whole"]
    assert front(stopping) == front(whole)
    assert stopping["generations"] == whole["generations"] and stopping["hypervolume"] == whole["hypervolume"]
    assert [(e["individual"], e["tree_hash"], e["measures"].get("failed_tests")) for e in stopped_log] == [
        (e["individual"], e["tree_hash"], e["measures"].get("failed_tests")) for e in whole_log
    ]
    failing = [e for e in whole_log if e["measures"].get("failed_tests")]
    assert failing and {e["measures"]["failed_tests"] for e in failing} == {1.0}, "failing is failing, once"
    assert any(sum(o != "passed" for o in e["tests"].values()) > 1 for e in failing), "some fail several tests"
    ran = {name: sum(o != "not_run" for e in log for o in e["tests"].values()) for name, (_, log) in runs.items()}
    assert ran["stopping"] < ran["whole"], f"the shortcut ran no fewer tests: {ran}"
    assert not any("not_run" in e["tests"].values() for e in whole_log)
