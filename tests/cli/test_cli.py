"""The command line on bad input and interruption: one line "gi: error: ..." naming the file,
key or problem, exit code 2, never a traceback, nothing lost; SIGTERM stops a run as Ctrl-C
does (exit 130) and the run resumes.

Runs are real: a tiny project whose every `if` deleted lowers its complexity, real pytest
runs in the sandbox, a real run store. These tests run as root on the project's machine,
where permission bits stop nothing, so "a folder gi may not write" is one no one may write
in: a path under a regular file, or under /proc.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gi.cli.main import main
from gi.config import load_config
from tests.runs import checkpoints, start_run

PROGRAM = """\
def classify(x):
    if x == 1:
        return "one"
    if x == 2:
        return "two"
    if x == 3:
        return "three"
    return "many"
"""

TESTS = """\
from chain import classify


def test_many():
    assert classify(7) == "many"
"""


def write_project(tmp_path: Path) -> Path:
    root = tmp_path / "chain"
    (root / "tests").mkdir(parents=True)
    (root / "chain.py").write_text(PROGRAM)
    (root / "tests" / "test_chain.py").write_text(TESTS)
    return root


def write_config(tmp_path: Path, output: Path | str, *, population: int = 2, generations: int = 1) -> Path:
    """A config for the tiny project: complexity only, no constraint, statement deletion only."""
    root = tmp_path / "chain"
    if not root.exists():
        write_project(tmp_path)
    config = tmp_path / "chain.toml"
    config.write_text(
        f"""\
[experiment]
name = "chain"
seed = 1
output = "{output}"

[program]
root = "{root}"
files = ["chain.py"]

[tests]
train = ["tests"]

[objectives]
minimize = ["complexity"]
constraint = "none"

[search]
population = {population}
generations = {generations}

[mutators]
operators = ["statement_delete"]
fault_localisation = false
"""
    )
    return config


def error_lines(err: str) -> list[str]:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got {lines}"
    assert lines[0].startswith("gi: error: ")
    return lines


def run_gi(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gi.cli", *args], capture_output=True, text=True, check=False, cwd=cwd, timeout=300
    )


# --- gi run: where the run folder goes ------------------------------------------------------------


def test_an_output_that_is_a_file_is_refused_without_a_traceback(tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.write_text("keep me\n")
    config = write_config(tmp_path, taken)
    result = run_gi("run", str(config), "--quiet")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    (line,) = error_lines(result.stderr)
    assert f"{config}: experiment.output" in line
    assert f"{taken} is a file, not a folder" in line
    assert taken.read_text() == "keep me\n"


@pytest.mark.parametrize("where", ["under a file", "under /proc"])
def test_an_output_no_one_may_write_in_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    # Root writes into any folder whatever its mode, so chmod 0o555 proves nothing here;
    # no one, root included, can create a folder inside a regular file or inside /proc.
    if where == "under /proc" and not Path("/proc/self").exists():
        pytest.skip("no /proc on this system")
    (tmp_path / "plain").write_text("")
    output = tmp_path / "plain" / "runs" if where == "under a file" else Path(f"/proc/gi-test-{os.getpid()}/runs")
    config = write_config(tmp_path, output)
    assert main(["run", str(config), "--quiet"]) == 2
    (line,) = error_lines(capsys.readouterr().err)
    assert "experiment.output" in line and f"cannot write the run folder {output / 'chain-seed1'}" in line
    assert not output.exists()


def test_fresh_does_not_delete_a_file_in_the_run_folders_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "runs"
    output.mkdir()
    squatter = output / "chain-seed1"
    squatter.write_text("not a run folder\n")
    config = write_config(tmp_path, output)
    assert main(["run", str(config), "--fresh", "--quiet"]) == 2
    (line,) = error_lines(capsys.readouterr().err)
    assert f"{squatter} is a file, not a folder" in line
    assert squatter.read_text() == "not a run folder\n"


def test_a_negative_seed_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, tmp_path / "runs")
    assert main(["run", str(config), "--seed", "-5"]) == 2
    (line,) = error_lines(capsys.readouterr().err)
    assert "--seed -5" in line
    assert not (tmp_path / "runs").exists()


def test_a_population_or_generations_the_config_could_not_hold_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, tmp_path / "runs")
    for argv, problem in (
        (["--population", "1"], "--population 1: input should be greater than or equal to 2 (search.population)"),
        (["--generations", "-1"], "--generations -1: input should be greater than or equal to 0"),
    ):
        assert main(["run", str(config), *argv]) == 2
        (line,) = error_lines(capsys.readouterr().err)
        assert problem in line
    assert not (tmp_path / "runs").exists()


# Exhaustive: tests/cli/test_starter.py runs every starter config with --population and --generations and
# counts the generations.
@pytest.mark.slow
@pytest.mark.exhaustive
def test_generations_and_population_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The run is shortened (or lengthened) without touching the config file, arms included."""
    config = write_config(tmp_path, tmp_path / "runs", population=2, generations=3)
    text = config.read_text()
    assert main(["run", str(config), "--quiet", "--generations", "1", "--population", "3"]) == 0
    assert config.read_text() == text
    summary = json.loads((tmp_path / "runs" / "chain-seed1" / "summary.json").read_text())
    assert [entry["generation"] for entry in summary["generations"]] == [0, 1]
    assert checkpoints(tmp_path / "runs" / "chain-seed1" / "store.sqlite") == 2
    assert main(["run", str(config), "--quiet"]) == 2, "as written, the config is another experiment"
    assert "holds a run of a different config; rerun with --fresh" in capsys.readouterr().err

    with_arm = text.replace('name = "chain"', 'name = "arms"') + (
        '\n[[arms]]\nname = "wide"\nsearch = { population = 4, generations = 5 }\n'
    )
    config.write_text(with_arm)
    assert main(["run", str(config), "--quiet", "--generations", "0"]) == 0
    summary = json.loads((tmp_path / "runs" / "arms" / "wide-seed1" / "summary.json").read_text())
    assert [entry["generation"] for entry in summary["generations"]] == [0], "the command line wins over the arm"
    assert summary["evaluations"] == 3, "the arm's own population stays: the original and 3 others"


def test_set_lays_keys_over_the_config_for_the_run_and_its_arms(tmp_path: Path) -> None:
    """`gi run --set table.key=VALUE`: TOML values, bare words as text, nested tables, and an
    arm's own value of the key giving way; the file itself is never touched."""
    config = write_config(tmp_path, tmp_path / "runs", population=2, generations=3)
    text = config.read_text() + '\n[[arms]]\nname = "wide"\nsearch = { population = 4, max_edits = 2 }\n'
    config.write_text(text)
    settings = [
        "search.population=6",
        "search.algorithm=nsga3",
        'mutators.operators=["statement_delete", "constant"]',
        "experiment.name=other",
    ]
    loaded = load_config(config, settings)
    assert config.read_text() == text
    assert loaded.search.population == 6 and loaded.search.algorithm == "nsga3"
    assert loaded.mutators.operators == ["statement_delete", "constant"]
    assert loaded.experiment.name == "other"
    [wide] = loaded.runs()
    assert wide.search.population == 6, "the command line wins over the arm"
    assert wide.search.max_edits == 2, "the arm's other keys stay"
    assert load_config(config).search.population == 2


def test_a_run_made_with_set_replays_with_the_same_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, tmp_path / "runs", population=2, generations=1)
    setting = ["--set", "search.population=3"]
    assert main(["run", str(config), "--quiet", *setting]) == 0
    capsys.readouterr()
    assert main(["replay", str(config), "--quiet"]) == 2, "without it, the config is another experiment"
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("gi: error: ") and "Traceback" not in line, line
    assert main(["replay", str(config), "--quiet", *setting]) == 0
    replay = json.loads((tmp_path / "runs" / "chain-seed1" / "replay" / "summary.json").read_text())
    assert replay["replay"] == {"front": True, "history": True}
    assert (
        replay["evaluations"]
        == json.loads((tmp_path / "runs" / "chain-seed1" / "summary.json").read_text())["evaluations"]
    )


@pytest.mark.parametrize(
    ("setting", "error"),
    [
        ("population=4", "--set population=4: give table.key=VALUE, as in --set workload.rigorous_processes=4"),
        ("search.population", "--set search.population: give table.key=VALUE"),
        ("serach.population=4", "--set serach.population=4: no table 'serach'. Valid tables: experiment,"),
        ("search.population=1", "--set: search.population = 1: Input should be greater than or equal to 2;"),
        ("search.popluation=4", "--set: unknown key 'search.popluation'. Did you mean 'population'?"),
        ("search.population.size=4", "--set search.population.size=4: search.population is not a table"),
        (
            "llm.modes.rewrite=1",
            "--set: [llm] lacks llm.base_url and llm.model, and mutators.llm is 0, so the model is not used: to use"
            " it, set mutators.llm to its share of the edits (e.g. 0.3) and give llm.base_url and llm.model;",
        ),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(
    tmp_path: Path, setting: str, error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, tmp_path / "runs", population=2, generations=0)
    assert main(["run", str(config), "--quiet", "--set", setting]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"gi: error: {error}"), line
    assert not (tmp_path / "runs").exists()


def test_the_sigterm_handler_lasts_only_as_long_as_the_run(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGTERM)
    assert main(["run", str(tmp_path / "missing.toml")]) == 2
    assert signal.getsignal(signal.SIGTERM) is before


# --- gi show: damaged run folders -----------------------------------------------------------------


def summary_of_one_member() -> dict[str, Any]:
    """The parts of summary.json `gi show` reads, for a run with one front member."""
    return {
        "experiment": {"name": "chain", "seed": 1},
        "objectives": [{"name": "complexity", "direction": "minimize"}],
        "baseline": {"objectives": {"complexity": 4}, "holdout": None},
        "front": [
            {
                "id": "g1-i0",
                "generation": 1,
                "operator": "statement_delete",
                "objectives": {"complexity": 3},
                "descriptions": ["delete_statement at chain.py"],
                "diff": "patches/g1-i0.diff",
                "training": {"passed": 1, "failed": 0},
                "holdout": None,
                "overfits": None,
            }
        ],
    }


def write_run(folder: Path, summary: Any, *, diff: bool = True) -> Path:
    (folder / "patches").mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps(summary))
    if diff:
        (folder / "patches" / "g1-i0.diff").write_text("--- a/chain.py\n+++ b/chain.py\n")
    return folder


def test_show_on_a_well_formed_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", summary_of_one_member())
    assert main(["show", str(run)]) == 0
    assert main(["show", str(run), "g1-i0"]) == 0
    assert "--- a/chain.py" in capsys.readouterr().out


def test_show_with_an_unknown_member_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", summary_of_one_member())
    assert main(["show", str(run), "g9-i9"]) == 2
    (line,) = error_lines(capsys.readouterr().err)
    assert "no front member 'g9-i9'; the front holds g1-i0" in line


def damaged(change: str) -> Any:
    summary = summary_of_one_member()
    if change == "empty":
        return {}
    if change == "a list":
        return [summary]
    if change == "member without id":
        del summary["front"][0]["id"]
    elif change == "objective not a number":
        summary["front"][0]["objectives"]["complexity"] = "low"
    elif change == "front not a list":
        summary["front"] = "g1-i0"
    elif change == "speed-up without its interval":
        summary["front"][0]["speedup"] = {"value": 2.0}
    return summary


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ("empty", "missing keys 'experiment', 'objectives', 'baseline', 'front'"),
        ("a list", "it is not a JSON object"),
        ("member without id", "missing key 'front.0.id'"),
        ("objective not a number", "front.0.objectives.complexity: input should be a valid number"),
        ("front not a list", "front: input should be a valid list"),
        (
            "speed-up without its interval",
            "front.0.speedup: a speed-up has value, low, high, p_value and significant, or an error",
        ),
    ],
)
def test_show_on_a_summary_gi_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: str, problem: str
) -> None:
    run = write_run(tmp_path / "run", damaged(change))
    for argv in (["show", str(run)], ["show", str(run), "g1-i0"]):
        assert main(argv) == 2
        (line,) = error_lines(capsys.readouterr().err)
        assert f"{run / 'summary.json'}: not a summary gi wrote: {problem}" in line


def test_show_on_a_summary_that_is_not_utf8(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_bytes(b'{"experiment": "\xff\xfe"}')
    result = run_gi("show", str(run))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    (line,) = error_lines(result.stderr)
    assert f"{run / 'summary.json'}: not UTF-8 text (byte 16)" in line


def test_show_on_a_file_names_the_folder_to_give(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", summary_of_one_member())
    assert main(["show", str(run / "summary.json")]) == 2
    (line,) = error_lines(capsys.readouterr().err)
    assert f"a file, not a run folder; give the folder that holds it: gi show {run}" in line
    other = tmp_path / "notes.txt"
    other.write_text("")
    assert main(["show", str(other)]) == 2
    (line,) = error_lines(capsys.readouterr().err)
    assert line == f"gi: error: {other}: a file, not a run folder"


def test_show_with_the_patches_folder_gone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", summary_of_one_member(), diff=False)
    (run / "patches").rmdir()
    assert main(["show", str(run)]) == 0  # the front needs no diff
    assert main(["show", str(run), "g1-i0"]) == 2
    captured = capsys.readouterr()
    (line,) = error_lines(captured.err)
    assert f"{run / 'patches' / 'g1-i0.diff'}: missing; member g1-i0's diff is gone" in line
    assert "g1-i0 (generation 1, by statement_delete)" in captured.out  # what is there is still shown


def test_show_reads_no_diff_outside_the_run_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary = summary_of_one_member()
    summary["front"][0]["diff"] = "../secret"
    (tmp_path / "secret").write_text("--- a/secret\n")
    run = write_run(tmp_path / "run", summary)
    assert main(["show", str(run), "g1-i0"]) == 2
    captured = capsys.readouterr()
    assert "diff '../secret' is not in patches/" in error_lines(captured.err)[0]
    assert "a/secret" not in captured.out


# --- real runs -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One tiny real run (2 x 1) through the command line: (config, run folder)."""
    tmp_path = tmp_path_factory.mktemp("cli")
    config = write_config(tmp_path, tmp_path / "runs")
    assert main(["run", str(config), "--quiet"]) == 0
    return config, tmp_path / "runs" / "chain-seed1"


@pytest.mark.slow
def test_a_real_run_folder_with_its_patches_deleted(
    finished_run: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    config, run = finished_run
    summary = json.loads((run / "summary.json").read_text())
    member = next(m for m in summary["front"] if m["diff"])
    assert main(["show", str(run), member["id"]]) == 0
    capsys.readouterr()
    diff = (run / member["diff"]).read_text()
    for path in (run / "patches").iterdir():
        path.unlink()
    (run / "patches").rmdir()

    assert main(["show", str(run), member["id"]]) == 2
    (line,) = error_lines(capsys.readouterr().err)
    assert f"{run / member['diff']}: missing" in line
    assert "running `gi run` on its config again rewrites patches/ from store.sqlite" in line
    assert main(["show", str(run)]) == 0

    # The hint holds: a finished run run again rewrites its report, diffs included.
    assert main(["run", str(config), "--quiet"]) == 0
    assert (run / member["diff"]).read_text() == diff
    assert main(["show", str(run), member["id"]]) == 0
    assert main(["show", str(run), "nobody"]) == 2


@pytest.mark.slow
def test_sigterm_stops_a_run_like_ctrl_c_and_it_resumes(tmp_path: Path) -> None:
    config = write_config(tmp_path, tmp_path / "runs", population=2, generations=4)
    store = tmp_path / "runs" / "chain-seed1" / "store.sqlite"
    process = start_run(config, store, 1, timeout=120, stderr=subprocess.PIPE)
    try:
        assert process.poll() is None, "the run ended before it could be stopped"
        process.send_signal(signal.SIGTERM)  # to gi alone, as `kill PID` does
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert "gi: interrupted; run the same command again to resume from the last generation" in err
    done = checkpoints(store)
    assert done >= 1
    assert not (store.parent / "summary.json").exists()

    resumed = run_gi("run", str(config))
    assert resumed.returncode == 0, resumed.stderr
    assert "gen   0  front" not in resumed.stdout  # it went on from its checkpoint
    assert "gen   4  front" in resumed.stdout
    assert checkpoints(store) == 5
    assert json.loads((store.parent / "summary.json").read_text())["front"]


def test_show_original_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", summary_of_one_member())
    assert main(["show", str(run), "original"]) == 0
    out = capsys.readouterr().out
    assert "original (the original program)" in out and "no change" in out
    assert main(["show", str(run), "g1-i0", "--json"]) == 0
    member = json.loads(capsys.readouterr().out)
    assert member["id"] == "g1-i0" and member["diff_text"] == "--- a/chain.py\n+++ b/chain.py\n"
    assert main(["show", str(run), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["front"][0]["id"] == "g1-i0"
    assert main(["show", str(run), "--json", "g1-i0"]) == 0  # the option among the positionals
    assert json.loads(capsys.readouterr().out)["id"] == "g1-i0"
    with pytest.raises(SystemExit, match="2"):  # argparse's own error, for a stray argument
        main(["show", str(run), "--json", "g1-i0", "stray"])
    assert "unrecognized arguments: stray" in capsys.readouterr().err
    assert main(["show", str(run), "original", "--json"]) == 0
    original = json.loads(capsys.readouterr().out)
    assert original["objectives"] == {"complexity": 4} and original["diff_text"] is None


def test_a_long_edit_line_wraps_under_its_own_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 80 columns a description wraps with a hanging indent: continuation lines start under
    its first character, not at the margin under the dash."""
    monkeypatch.setenv("COLUMNS", "80")
    long = (
        'chain.py:12 replace "if grade_boundaries[index] <= score and not override:" with a copy'
        ' of "return letter_for(score, boundaries=grade_boundaries, default=DEFAULT_GRADE)"'
    )
    summary = summary_of_one_member()
    summary["front"][0]["descriptions"] = [long, "chain.py:3 delete 'return 1'"]
    run = write_run(tmp_path / "run", summary)
    assert main(["show", str(run), "g1-i0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    first = next(index for index, line in enumerate(lines) if line.startswith("  - chain.py:12 "))
    continued = lines[first + 1 : next(i for i in range(first + 1, len(lines)) if lines[i].startswith("  - "))]
    assert continued, "the description fits in 80 columns: make it longer"
    assert all(len(line) <= 80 for line in lines[first : first + 1 + len(continued)])
    assert all(line.startswith("    ") and line[4] != " " for line in continued), continued
    assert " ".join(line.strip() for line in [lines[first][4:], *continued]) == long


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"gi {version('gi-improve')}"


def test_the_progress_line_gives_shares_and_the_time_left_at_this_sessions_pace() -> None:
    from gi.cli.run import Pace
    from gi.engine.progress import Progress

    pace = Pace(total=100)
    # A resumed run: 40 of 100 programs were done before this session, 30 evaluated, 10 from the cache.
    assert pace.status(Progress(evaluations=30, cache_hits=10), 40, now=1000.0) == ("ETA -  cache hits 25%  timeouts -")
    # 20 more in 10 s, 4 of the 16 evaluations stopped by a time limit: 40 left take 20 s.
    assert pace.status(Progress(evaluations=46, cache_hits=14, timed_out=4), 60, now=1010.0) == (
        "ETA 20s  cache hits 23%  timeouts 25%"
    )
    assert pace.status(Progress(evaluations=46, cache_hits=14, timed_out=4), 61, now=1610.0) == (
        "ETA 18m53s  cache hits 23%  timeouts 25%"  # 39 left at 21 per 610 s
    )


@pytest.mark.parametrize("width", [80, 60, 40])
def test_the_progress_line_keeps_the_generation_and_evaluations_whole_when_narrow(width: int) -> None:
    """Only the status is cut, at its end; gen N/M and evals N stay whole."""
    from rich.console import Console

    from gi.cli.run import run_progress

    console = Console(width=width, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    status = "ETA 1m05s  cache hits 25%  timeouts 3%  HV 0.4312  failed_tests=0  complexity=11  size=1"
    with run_progress(console, disable=False) as progress:
        task = progress.add_task("search", total=220, generation=7, generations=10, evaluations=158, status=status)
        progress.update(task, completed=180)
        console.print(progress.make_tasks_table(progress.tasks))
    lines = [line for line in console.export_text().splitlines() if line.strip()]
    console.file.close()
    line = lines[-1]
    assert len(line) <= width
    assert line.startswith("gen 7/10 evals 158 "), line
    assert "180/220" in line, line
    assert "ETA" in line, "the status starts with the time left"
    if width == 80:
        assert "ETA 1m05s  cache hits 25%  timeouts 3%" in line and line.endswith("…"), line


def test_the_commands_around_a_run_on_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", summary_of_one_member())
    sources = {"root": str(tmp_path), "files": ["chain.py"], "sources": {"chain.py": "0" * 64}}
    read = write_run(tmp_path / "read", {**summary_of_one_member(), "program": sources})
    cases = [
        (["report", str(tmp_path / "nowhere")], "no such run or experiment folder"),
        (["apply", str(run), "g1-i0"], "no record of the files the run read (program.sources)"),
        (["apply", str(tmp_path / "nowhere"), "g1-i0"], "no such run folder"),
        (["init", str(tmp_path / "nowhere")], "no such project folder"),
        (["init", str(run / "summary.json")], "summary.json: a file, not a project folder; gi init takes the"),
        (["apply", str(read), "g1-i0", "--project", str(tmp_path / "nowhere")], "nowhere: no such project folder"),
    ]
    for argv, problem in cases:
        assert main(argv) == 2, argv
        (line,) = error_lines(capsys.readouterr().err)
        assert problem in line, (argv, line)
