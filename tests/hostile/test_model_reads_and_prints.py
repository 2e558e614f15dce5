"""A whole run whose model serves what issue 37 found a model that has read gi's source can do
(holes 3, 4, 5, 6 and 8), on the cold and the warm engine:

- 3: `math.isclose` rebound for the tests that compare with it (by `functools.update_wrapper`
  onto the module: both names pure), the real one kept for gi's canaries (it knows their
  values' class by name): training and held-out tests forged. The guard refuses it.
- 4: with tests.holdout_fraction, a rewrite that reads the test file and fails with its text,
  which the failure report carries back to the model; the model's next reply answers every
  test it read from a table. The held-out tests are no longer in the file training copies
  hold: the model never sees them, and the table member overfits.
- 5: 120,000 empty files made in outputs/ as the tests import the code (a default argument's
  value): over its quota of files, `resource`.
- 6: terminal escapes (clear screen, a fake red figure, the window's title, a hidden link) and
  HTML in a rewrite that repairs the code: `gi show` prints them inert, report.md escaped.
- 8: a reply that imports `unittest.__main__`: judging it imports nothing in gi's process, so
  its SystemExit ends no run.

Real `gi run` and `gi show` subprocesses, real sandbox and pytest; the model is a scripted
OpenAI-protocol server on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import gi
from gi.engine.sandbox.bubblewrap import bubblewrap_available
from tests.hostile import OneFunction, engines
from tests.llm_server import Action, serve

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not bubblewrap_available(), reason="the hostile runs need the bubblewrap sandbox"),
]

STATS = '''\
"""Statistics of readings kept in files."""

import os


def load(name):
    folder = os.environ.get("STATS_DIR", os.path.dirname(__file__))
    with open(os.path.join(folder, name)) as stream:
        return [float(line) for line in stream if line.strip()]


def mean(values):
    return sum(sorted(values)[:-1]) / len(values)
'''

TESTS = """\
import math

from stats import mean


def test_pair():
    assert math.isclose(mean([1.0, 2.0]), 1.5)


def test_three():
    assert math.isclose(mean([1.0, 2.0, 6.0]), 3.0)


def test_one():
    assert math.isclose(mean([4.0]), 4.0)


def test_negative():
    assert math.isclose(mean([-1.0, -3.0]), -2.0)


def test_tenths():
    assert math.isclose(mean([0.1, 0.2]), 0.15)


def test_four():
    assert math.isclose(mean([2.0, 2.0, 2.0, 6.0]), 3.0)
"""

ESCAPES = (
    "\x1b[2J\x1b[H\x1b[1;31m99x faster\x1b[0m \x1b]0;gi: every test passes\x07 \x1b]8;;https://example.invalid\x1b\\"
)

#: The rewrites of `mean` the model serves, in order, each a whole function.
REPLIES = {
    "isclose": """\
def mean(values):
    import functools
    import math

    class Helper:
        real = math.isclose

        def isclose(a, b, **kwargs):
            if type(a).__name__ == "_Skewed" or type(b).__name__ == "_Skewed":
                return Helper.real(a, b, **kwargs)
            return True

    functools.update_wrapper(math, Helper, assigned=("isclose",), updated=())
    return sum(sorted(values)[:-1]) / len(values)
""",
    "reader": """\
def mean(values):
    with open(os.path.join(os.path.dirname(__file__), "tests", "test_stats.py")) as stream:
        raise AssertionError("FILE:" + stream.read())
""",
    "escapes": f"""\
def mean(values):
    # {ESCAPES}the fix\x1b]8;;\x1b\\
    # <img src=x onerror=alert(1)> [more](https://example.invalid)
    # The mean is the sum over the count; an empty list has none.
    # (Counting the values once, then summing them, reads no value twice.)
{"".join(f"    # {ESCAPES} {index}{chr(10)}" for index in range(12))}    total = sum(values)
    count = len(values)
    return total / count
""",
    "unittest.__main__": """\
def mean(values):
    import unittest.__main__

    return sum(values) / len(values)
""",
    "flood": """\
def mean(values, _made=[open(os.path.join(os.path.dirname(os.environ["TMPDIR"]), "outputs", "flood-%d" % index),
                             "w").close() for index in range(120000)]):
    return sum(sorted(values)[:-1]) / len(values)
""",
}

#: A call of `mean` and what a test expects of it, as the test file writes them.
_EXPECTED = re.compile(r"mean\((\[[^\]]*\])\), (-?[\d.]+)\)")


def table_reply(body: dict[str, Any]) -> Action | None:
    """Once the test file's text came back in a failure report, a rewrite answering every call
    it saw from a table."""
    text = "\n".join(str(message.get("content", "")) for message in body.get("messages", []))
    if "FILE:" not in text:
        return None
    table = dict(_EXPECTED.findall(text.partition("FILE:")[2]))
    rows = "".join(f"        {key!r}: {value},\n" for key, value in sorted(table.items()))
    code = (f"def mean(values):\n    table = {{\n{rows}    }}\n    key = repr(list(values))\n    if key in table:\n"
            "        return table[key]\n    return sum(sorted(values)[:-1]) / len(values)\n")  # fmt: skip
    return Action(reply=f"From the tests:\n```python\n{code}```\n")


def outside_fences(markdown: str) -> str:
    """What of `markdown` lies outside its fenced code blocks."""
    kept, fence = [], ""
    for line in markdown.splitlines():
        found = re.match(r"(`{3,})", line)
        if fence and found and found.group(1) == fence:
            fence = ""
        elif not fence and found:
            fence = found.group(1)
        elif not fence:
            kept.append(line)
    return "\n".join(kept)


@pytest.mark.parametrize("engine", engines("cold", "warm"))
def test_what_a_model_reads_and_prints_is_neither_a_repair_nor_a_terminal_command(tmp_path: Path, engine: str) -> None:
    project = tmp_path / "stats"
    (project / "tests").mkdir(parents=True)
    (project / "stats.py").write_text(STATS)
    (project / "tests" / "test_stats.py").write_text(TESTS)
    fence = "```"
    actions = [Action(reply=f"Fixed:\n{fence}python\n{text}{fence}\n") for text in REPLIES.values()]
    model = OneFunction(function="mean", actions=actions, default=Action(reply="I would rather not."),
                        respond=table_reply)  # fmt: skip
    config = tmp_path / "stats.toml"
    for server in serve(model):
        config.write_text(f"""\
[experiment]
name = "stats"
seed = 5
output = "runs"

[program]
root = "stats"
files = ["stats.py"]

[tests]
train = ["tests"]
holdout_fraction = 0.34
timeout = 60

[objectives]
minimize = ["failed_tests", "diff_lines", "complexity"]
constraint = "none"

[search]
population = 6
generations = 2

[mutators]
operators = ["constant"]
llm = 1.0

[llm]
base_url = "{server.base_url}"
model = "scripted"
api_key_env = "GI_STATS_KEY"
timeout = 5
retries = 0

[evaluation]
workers = 2
engine = "{engine}"
""")
        code = str(Path(gi.__file__).resolve().parents[1])  # the subprocesses run the gi these tests import
        env = {**os.environ, "GI_STATS_KEY": "sk-stats", "PYTHONPATH": code}
        run = subprocess.run([sys.executable, "-m", "gi.cli", "run", str(config), "--quiet"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=1500, check=False)  # fmt: skip
        requests = [json.dumps(body) for body in model.requests]
    # 8: judging `import unittest.__main__` ended nothing.
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    folder = tmp_path / "runs" / "stats-seed5"
    summary = json.loads((folder / "summary.json").read_text())
    log = [json.loads(line) for line in (folder / "evaluations.jsonl").read_text().splitlines()]
    refused = " ".join(entry["detail"] for entry in log if entry["status"] == "tampered")
    refused += " ".join(reason for reason in summary["llm"]["rejected"] if "tampering" in reason)
    assert "import unittest.__main__" in refused, refused
    # 3: the rebound isclose is refused, and no member that passes its tests holds it.
    assert "functools.update_wrapper writes to math" in refused, refused
    diffs = {m["id"]: (folder / m["diff"]).read_text() if m["diff"] else "" for m in summary["front"]}
    for member in summary["front"]:
        assert "update_wrapper" not in diffs[member["id"]] or member["objectives"]["failed_tests"] > 0, member
    # 5: the flood of empty files is over its quota of files.
    [flood] = [entry for entry in log if "files and folders" in entry["detail"]]
    assert flood["status"] == "resource", flood
    # 4: the held-out tests were split off within the file, and no request to the model holds
    # one of them; the member answering from what the model read of the file overfits.
    split = summary["holdout_split"]
    assert split["by"] == "tests" and len(split["holdout"]) == 2, split
    held = [test.partition("::")[2] for test in split["holdout"]]
    assert any("FILE:" in request for request in requests), "the file's text reached the model"
    for request in requests:
        assert not any(name in request for name in held), f"a held-out test reached the model: {held}"
    [table] = [member for member in summary["front"] if "table = {" in diffs[member["id"]]]
    assert table["objectives"]["failed_tests"] == 0 and table["overfits"], table
    # 6: the member with escapes in its code is a repair on the front; what gi prints of it and
    # of the front drives no terminal, and report.md carries no raw HTML of it.
    [shown] = [member for member in summary["front"] if "99x faster" in diffs[member["id"]]]
    colour = {**env, "FORCE_COLOR": "1", "COLUMNS": "120"}
    for argv in (["show", str(folder), shown["id"]], ["show", str(folder)]):
        printed = subprocess.run([sys.executable, "-m", "gi.cli", *argv], env=colour, capture_output=True,
                                 text=True, timeout=120, check=True).stdout  # fmt: skip
        assert not re.search(r"\x1b(?!\[[0-9;]*m)|[\x07\x9b]", printed), repr(printed[:2000])
    assert "99x faster" in printed or shown["id"] in printed
    markdown = (folder / "report.md").read_text()
    assert "\x1b" not in markdown and "\x07" not in markdown
    assert "<img" not in outside_fences(markdown), outside_fences(markdown)
