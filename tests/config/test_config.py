"""Config validation: every mistake is one clear line naming the key, and exit code 2."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gi.config import load_config
from gi.model.errors import ConfigError

EXAMPLES = Path(__file__).resolve().parents[2] / "experiments"

GOOD = """\
[experiment]
name = "grading-simplify"
seed = 1
output = "runs"

[program]
root = "PROGRAMS/grading"
files = ["grading.py"]

[tests]
train = ["tests"]
holdout = ["holdout"]
timeout = 10

[objectives]
minimize = ["failed_tests", "complexity", "size"]
constraint = "train_pass"

[search]
algorithm = "nsga2"
population = 20
generations = 10

[mutators]
operators = "all"
"""

# (what to replace, its replacement, a regular expression the one error line must match)
MISTAKES = [
    ("population = 20", "populaton = 20", r"unknown key 'search\.populaton'\. Did you mean 'population'\?"),
    ("population = 20", 'population = "twenty"', r"search\.population = 'twenty': .*valid integer"),
    ("population = 20", "population = 1", r"search\.population = 1: .*greater than or equal to 2"),
    ('root = "PROGRAMS/grading"\n', "", r"missing key 'program\.root'"),
    (
        'minimize = ["failed_tests", "complexity", "size"]',
        'minimize = ["speed"]',
        r"objectives\.minimize = \['speed'\]: unknown objective 'speed'",
    ),
    (
        'minimize = ["failed_tests", "complexity", "size"]',
        'maximize = ["failed_tests"]',
        r"'failed_tests' can only be minimized; move it to objectives\.minimize",
    ),
    (
        'operators = "all"',
        'operators = ["statement_delet"]',
        r"mutators\.operators = \['statement_delet'\]: unknown operator 'statement_delet'\."
        r" Did you mean 'statement_delete'\?",
    ),
    ('root = "PROGRAMS/grading"', 'root = "PROGRAMS/nowhere"', r"program\.root = '.*nowhere': no such folder"),
    ('train = ["tests"]', 'train = ["tset"]', r"tests\.train: 'tset' does not exist under program\.root"),
    (
        'constraint = "train_pass"',
        'constraint = "always"',
        r"objectives\.constraint = 'always': .*'train_pass' or 'none'",
    ),
    ("[search]", "[serach]", r"unknown key 'serach'\. Did you mean 'search'\?"),
    ("seed = 1", "seed = -1", r"experiment\.seed = -1: .*greater than or equal to 0"),
    ("timeout = 10", "timeout = 10\nholdout_fraction = 1", r"tests\.holdout_fraction = 1: .*less than 1"),
    (
        "timeout = 10",
        'timeout = 10\ndifferential_inputs = { "grading.letter" = [[1]] }',
        r"tests\.differential_inputs = .*'grading\.letter' is not 'module:function'",
    ),
    (
        'holdout = ["holdout"]',
        'holdout = ["tests"]',
        r"tests\.holdout 'tests' holds tests\.train 'tests': a held-out test must be one the search never runs",
    ),
    (
        'files = ["grading.py"]',
        'files = ["grading.py"]\npython = ".venv/bin/python"',
        r"program\.python = '\.venv/bin/python': no such interpreter",
    ),
    ("timeout = 10", "timeout = 10\ntimeout = 11", r"not valid TOML: Cannot overwrite a value \(at line 14"),
    (
        "generations = 10",
        "generations = 10\nneighbourhood = 1.5",
        r"search\.neighbourhood = 1\.5: Input should be 'auto' or less than or equal to 1; search\.neighbourhood is",
    ),
    ('algorithm = "nsga2"', 'algorithm = "nsga9"', r"search\.algorithm = 'nsga9': unknown algorithm 'nsga9'\. Did you"),
    ('"complexity", "size"]', '"runtime", "size"]', r"objectives: 'runtime' needs a \[workload\] section"),
    ('operators = "all"', 'operators = "all"\n\n[workload]\ncall = "bench"', r"workload\.call = 'bench': .*pattern"),
    (
        'operators = "all"',
        'operators = "all"\n\n[workload]\ncheck_output = true',
        r"workload: give either call = \"module:function\" or command = \[\.\.\.\], not both",
    ),
    # Quality diversity: the grid's features and the islands (search.grid, search.islands).
    (
        "generations = 10",
        'generations = 10\ngrid = { features = ["complexty"] }',
        r"search\.grid\.features = \['complexty'\]: unknown feature 'complexty'\. Did you mean 'complexity'\?",
    ),
    (
        "generations = 10",
        'generations = 10\ngrid = { features = ["size"], ranges = { size = [5, 1] } }',
        r"search\.grid = .*: ranges\.size: low must be below high",
    ),
    (
        "generations = 10",
        'generations = 10\ngrid = { features = ["runtime"] }',
        r"search\.grid\.features: 'runtime' is measured only when an objective is runtime",
    ),
    (
        "generations = 10",
        'generations = 10\ngrid = { features = ["measures:lines"] }',
        r"feature 'measures:lines' is a function of your own: give its \[low, high\] in ranges",
    ),
    (
        'algorithm = "nsga2"',
        'algorithm = "islands"\nislands = { island = [{ operators = ["statement_delete", "llm"] }] }',
        r"search\.islands\.island\[0\]\.operators: llm not among the run's operators",
    ),
    (
        'algorithm = "nsga2"',
        'algorithm = "islands"\nislands = { island = [{ algorithm = "islands" }] }',
        r"an island's algorithm is one of .*, not 'islands'",
    ),
    (
        'algorithm = "nsga2"',
        'algorithm = "islands"\nislands = { migration = "ringg" }',
        r"unknown migration 'ringg'\. Did you mean 'ring'\?",
    ),
    (
        'algorithm = "nsga2"',
        'algorithm = "islands"\nislands = { migration = "nowhere:Ring" }',
        r"search\.islands\.migration: cannot import 'nowhere'",
    ),
]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "experiment.toml"
    path.write_text(text.replace("PROGRAMS", str(EXAMPLES / "programs")))
    return path


def test_the_issue_example_is_valid(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, GOOD))
    assert config.search.population == 20 and config.objectives.names() == ["failed_tests", "complexity", "size"]
    assert config.run_folder == tmp_path / "runs" / "grading-simplify-seed1"


@pytest.mark.parametrize(("old", "new", "pattern"), MISTAKES, ids=[m[2][:40] for m in MISTAKES])
def test_mistake_is_one_clear_line(tmp_path: Path, old: str, new: str, pattern: str) -> None:
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert len(message.splitlines()) == 1, message
    assert message.startswith(str(path)), message
    assert re.search(pattern, message), message


@pytest.mark.parametrize(("old", "new", "pattern"), MISTAKES[:10], ids=[m[2][:40] for m in MISTAKES[:10]])
def test_gi_run_exits_2_with_one_line_and_no_traceback(tmp_path: Path, old: str, new: str, pattern: str) -> None:
    path = write(tmp_path, GOOD.replace(old, new, 1))
    result = subprocess.run(
        [sys.executable, "-m", "gi.cli", "run", str(path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gi: error: "), result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not (tmp_path / "runs").exists(), "nothing may run before the config is valid"


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "nope.toml")


def test_fail_fast_needs_the_train_pass_constraint(tmp_path: Path) -> None:
    """Under constraint = "none" the number of failed tests ranks the variants: all must run."""
    text = GOOD.replace("timeout = 10", "timeout = 10\nfail_fast = true")
    load_config(write(tmp_path, text))
    with pytest.raises(ConfigError) as error:
        load_config(write(tmp_path, text.replace('constraint = "train_pass"', 'constraint = "none"')))
    assert re.fullmatch(r".*experiment\.toml: tests\.fail_fast = true needs objectives\.constraint = 'train_pass'.*",
                        str(error.value))  # fmt: skip
    assert "\n" not in str(error.value)


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs two cores to pin to one"
)
def test_the_default_workers_are_the_cores_gi_may_run_on(tmp_path: Path) -> None:
    """A process pinned to one core (taskset, a container's cpuset) evaluates one variant at a
    time by default, however many cores the machine has."""
    config = write(tmp_path, GOOD)
    script = (
        "import os, sys\n"
        "os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
        "from pathlib import Path\n"
        "from gi.config import load_config\n"
        "print(load_config(Path(sys.argv[1])).evaluation.workers)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(config)], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "1"
