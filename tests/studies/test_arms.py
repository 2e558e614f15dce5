"""Experiments of arms x seeds: the config, the run folders, and a killed experiment resuming."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gi.cli.main import main
from gi.config import load_config
from gi.model.errors import ConfigError
from gi.studies.arms import finished, parallel_runs, sharing_cores
from tests.runs import start_run

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
GRADING = EXPERIMENTS / "programs" / "grading"

ARMS = """
[experiment]
name = "tiny"
seeds = [1, 2]
output = "{output}"
parallel_runs = {parallel}

[program]
root = "{root}"
files = ["grading.py"]

[tests]
train = ["tests"]
holdout = ["holdout"]
timeout = 10

[objectives]
minimize = ["failed_tests", "complexity", "size"]

[search]
population = {population}
generations = {generations}

[evaluation]
workers = 1

[[arms]]
name = "nsga2"

[[arms]]
name = "ls"
search = {{ algorithm = "local_search" }}

[[arms]]
name = "random"
search = {{ algorithm = "random", max_edits = 3 }}
mutators = {{ operators = ["statement_delete", "statement_swap"] }}
"""


def write(tmp_path: Path, text: str = ARMS, **values: Any) -> Path:
    fields = {"output": tmp_path / "runs", "root": GRADING, "parallel": 1, "population": 4, "generations": 1}
    path = tmp_path / "tiny.toml"
    path.write_text(text.format(**{**fields, **values}))
    return path


def test_arms_and_seeds_make_one_config_per_run(tmp_path: Path) -> None:
    config = load_config(write(tmp_path))
    runs = config.runs()
    assert [(run.arm, run.experiment.seed) for run in runs] == [
        ("nsga2", 1), ("ls", 1), ("random", 1), ("nsga2", 2), ("ls", 2), ("random", 2),
    ]  # fmt: skip
    assert [run.search.algorithm for run in runs[:3]] == ["nsga2", "local_search", "random"]
    assert runs[2].search.max_edits == 3 and runs[2].search.population == 4, "an arm overrides key by key"
    assert runs[2].mutators.operators == ["statement_delete", "statement_swap"]
    assert runs[0].mutators.operators == "all"
    assert runs[4].run_folder == tmp_path / "runs" / "tiny" / "ls-seed2"
    assert all(not run.is_experiment and run.runs() == [run] for run in runs)
    assert len({json.dumps(run.fingerprint(), sort_keys=True) for run in runs}) == 6


def test_seeds_without_arms_name_the_runs_after_the_algorithm(tmp_path: Path) -> None:
    text = ARMS[: ARMS.index("[[arms]]")]
    runs = load_config(write(tmp_path, text)).runs()
    assert [run.run_folder.name for run in runs] == ["nsga2-seed1", "nsga2-seed2"]


def test_a_single_run_keeps_its_folder_and_fingerprint(tmp_path: Path) -> None:
    config = load_config(EXPERIMENTS / "grading.toml")
    assert config.runs() == [config] and config.run_folder.name == "grading-simplify-seed1"
    fingerprint = config.fingerprint()
    assert "arm" not in fingerprint and "seeds" not in fingerprint["experiment"]
    assert "reference_divisions" not in fingerprint["search"] and "parallel_runs" not in fingerprint["experiment"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('seeds = [1, 2]', 'seeds = [1, 1]'), "experiment.seeds = [1, 1]: a seed is named twice"),
        (('seeds = [1, 2]', 'seeds = [1, 2]\nseed = 3'), "give seed = N or seeds = [...], not both"),
        (('name = "ls"', 'name = "nsga2"'), "tiny.toml: arms: two arms are named 'nsga2'"),
        (('algorithm = "local_search"', 'algorithm = "local_serch"'),
         "arms[1] ('ls'): search.algorithm = 'local_serch': unknown algorithm 'local_serch'. Did you mean"),
        (('operators = ["statement_delete", "statement_swap"]', 'operators = ["nope"]'),
         "arms[2] ('random'): mutators.operators = ['nope']: unknown operator 'nope'"),
        (('name = "ls"', 'name = "ls"\nobjectives = {{ minimize = ["size"] }}'), "unknown key 'arms.1.objectives'"),
        (('name = "ls"', 'name = "ls"\nmutators = {{ llm = 0.5 }}'),
         "arms[1] ('ls'): mutators.llm = 0.5: the language model needs an [llm] section"),
    ],
)  # fmt: skip
def test_mistakes_in_arms_and_seeds_name_their_key(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_config(write(tmp_path, ARMS.replace(*change)))
    assert message in str(error.value)


def test_parallel_runs_follow_the_cores_and_the_workers(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, parallel='"auto"'))
    cores = len(os.sched_getaffinity(0))
    assert parallel_runs(config) == max(1, cores // 1)
    assert parallel_runs(load_config(write(tmp_path, parallel=3))) == 3


def test_runs_at_once_copy_ahead_only_where_their_workers_leave_a_core_free(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, parallel='"auto"'))
    assert config.evaluation.spare_pages == "auto"
    crowded = sharing_cores(config, at_once=4096)  # more runs than any machine here has cores
    assert crowded.evaluation.spare_pages is False and crowded.evaluation.workers == 1
    if len(os.sched_getaffinity(0)) >= 2:
        assert sharing_cores(config, at_once=1).evaluation.spare_pages is True
    told_text = ARMS.replace("workers = 1", "workers = 1\nspare_pages = true")
    told = load_config(write(tmp_path, told_text, parallel='"auto"'))
    assert sharing_cores(told, at_once=4096).evaluation.spare_pages is True, "what the config says stands"


def summaries(folder: Path) -> dict[str, dict[str, Any]]:
    return {path.parent.name: json.loads(path.read_text()) for path in sorted(folder.glob("*/summary.json"))}


# Exhaustive: tests/studies/test_arms.py resumes a killed local search to the same walk, and
# tests/run/test_experiment.py a killed run to the same front.
@pytest.mark.slow
@pytest.mark.exhaustive
def test_a_killed_experiment_resumes_the_runs_that_did_not_finish(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """2 arms x 2 seeds, two runs at a time in their own processes: killed (the whole process
    group, at once) after the first run finished; run again, it skips the finished ones,
    resumes the others, and ends with the comparison."""
    text = ARMS[: ARMS.index('[[arms]]\nname = "random"')].replace('holdout = ["holdout"]\n', "")
    config = write(tmp_path, text, parallel=2)
    folder = tmp_path / "runs" / "tiny"
    process = subprocess.Popen(
        [sys.executable, "-m", "gi.cli", "run", str(config), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while not list(folder.glob("*/summary.json")) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process.poll() is None, "the experiment ended before it could be killed"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    done_before = set(summaries(folder))
    assert 1 <= len(done_before) < 4

    assert main(["run", str(config)]) == 0
    out = capsys.readouterr().out
    for name in done_before:
        arm, seed = name.rsplit("-seed", 1)
        assert f"{arm} seed {seed}: finished before, skipped" in out
    runs = summaries(folder)
    assert set(runs) == {f"{arm}-seed{seed}" for arm in ("nsga2", "ls") for seed in (1, 2)}
    assert all(len(summary["hypervolume"]) == 2 for summary in runs.values())
    assert all(finished(run) for run in load_config(config).runs())
    manifest = json.loads((folder / "experiment.json").read_text())
    assert manifest["arms"] == ["nsga2", "ls"] and manifest["seeds"] == [1, 2]

    result = json.loads((folder / "compare.json").read_text())
    assert list(result["arms"]) == ["nsga2", "ls"]
    for name in ("failed_tests", "complexity", "size"):
        rows = [row for row in result["pairs"] if row["measure"] == f"best {name}"]
        assert [(row["first"], row["second"]) for row in rows] == [("nsga2", "ls")]
        assert 0 <= rows[0]["p_holm"] <= 1 and 0 <= rows[0]["a12"] <= 1
    assert not [row for row in result["pairs"] if row["measure"] == "overfitting rate"], "no held-out tests"
    assert "Holm" in out and "A12" in out
    assert (folder / "compare-arms.csv").read_text().startswith("arm,measure,n,median,q1,q3\n")
    assert "report.html" in out and "2 arms" not in out
    report = (folder / "report.md").read_text()
    assert "4 runs: " in report and all(f"{arm} seed {seed}" in report for arm in ("nsga2", "ls") for seed in (1, 2))
    # Runs made in this session drew their reports (one killed right after its summary may have none).
    assert all((folder / name / "report.html").is_file() for name in set(runs) - done_before)

    assert main(["compare", str(folder / "nsga2-seed1"), str(folder / "nsga2-seed2")]) == 0
    assert "one arm only" in capsys.readouterr().out
    assert main(["compare", str(folder), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["arms"] == result["arms"]


def local_search_config(tmp_path: Path, output: Path) -> Path:
    text = (EXPERIMENTS / "grading.toml").read_text()
    text = text.replace('root = "programs/grading"', f'root = "{GRADING}"')
    text = text.replace('output = "runs"', f'output = "{output}"')
    text = text.replace('algorithm = "nsga2"', 'algorithm = "local_search"')
    text = text.replace("population = 20", "population = 4").replace("generations = 10", "generations = 4")
    path = tmp_path / f"{output.name}.toml"
    path.write_text(text)
    return path


@pytest.mark.slow
def test_a_killed_local_search_resumes_to_the_same_walk(tmp_path: Path) -> None:
    """Local search keeps a state beyond its population (the programs it stood on and the
    neighbours it tried); a killed run must continue the same walk."""
    whole = local_search_config(tmp_path, tmp_path / "whole")
    assert main(["run", str(whole), "--quiet"]) == 0
    expected = json.loads((tmp_path / "whole" / "grading-simplify-seed1" / "summary.json").read_text())

    killed = local_search_config(tmp_path, tmp_path / "killed")
    store = tmp_path / "killed" / "grading-simplify-seed1" / "store.sqlite"
    process = start_run(killed, store, 2)
    assert process.poll() is None, "the run ended before it could be killed"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert main(["run", str(killed), "--quiet"]) == 0
    resumed = json.loads((store.parent / "summary.json").read_text())

    def walk(summary: dict[str, Any]) -> list[Any]:
        return [(m["id"], m["edits"], m["objectives"]) for m in summary["front"]]

    assert walk(resumed) == walk(expected)
    assert resumed["evaluations"] == expected["evaluations"]
    assert resumed["hypervolume"] == expected["hypervolume"]
