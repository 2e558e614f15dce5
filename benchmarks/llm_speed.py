"""How much do requests in flight save? The same run at `llm.concurrency` 1 and 8, side by side.

A scripted OpenAI-compatible server on 127.0.0.1 (tests/llm_server.py) answers every request
after `--delay` seconds (1 by default, about what a hosted model takes), by the prompt's content:
a rewrite, a SEARCH/REPLACE diff or a merge of two versions of a quadratic pair search, so the
replies, and so the run, are the same whatever order they come in. gi runs the same config
(every mode, the model making every mutation it can) once with `concurrency = 1` and once with
`concurrency = 8`, each with a reply cache of its own; the benchmark prints each run's wall time,
requests and front, the ratio of the wall times, and whether the fronts are the same.

    python benchmarks/llm_speed.py [--delay 1.0] [--population 24] [--generations 2] [--seed 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.llm_server import Action, ModelServer, ScriptedModel  # noqa: E402

PROGRAM = '''\
def has_pair_with_sum(values, target):
    """True if two different entries of values add up to target."""
    for i in range(len(values)):
        for j in range(len(values)):
            if i != j and values[i] + values[j] == target:
                return True
    return False
'''

TESTS = """\
from pairs import has_pair_with_sum


def test_found():
    assert has_pair_with_sum([1, 4, 6, 9], 10)


def test_not_found():
    assert not has_pair_with_sum([1, 2, 3], 10)


def test_same_entry_twice_does_not_count():
    assert not has_pair_with_sum([5], 10)
    assert has_pair_with_sum([5, 5], 10)
"""

REPLIES = {
    "rewrite": '''```python
def has_pair_with_sum(values, target):
    """True if two different entries of values add up to target."""
    seen = set()
    for value in values:
        if target - value in seen:
            return True
        seen.add(value)
    return False
```''',
    "diff": """<<<<<<< SEARCH
        for j in range(len(values)):
            if i != j and values[i] + values[j] == target:
=======
        for j in range(i + 1, len(values)):
            if values[i] + values[j] == target:
>>>>>>> REPLACE""",
    "crossover": '''```python
def has_pair_with_sum(values, target):
    """True if two different entries of values add up to target."""
    return any(target - value in values[i + 1 :] for i, value in enumerate(values))
```''',
}


def mode_of(body: dict[str, Any]) -> str:
    text = json.dumps(body)
    return "diff" if "SEARCH/REPLACE" in text else "crossover" if "combines the strengths" in text else "rewrite"


def write_run(folder: Path, base_url: str, concurrency: int, args: argparse.Namespace) -> Path:
    (folder / "pairs" / "tests").mkdir(parents=True)
    (folder / "pairs" / "pairs.py").write_text(PROGRAM)
    (folder / "pairs" / "tests" / "test_pairs.py").write_text(TESTS)
    config = folder / "pairs.toml"
    config.write_text(f"""\
[experiment]
name = "pairs"
seed = {args.seed}
output = "runs"

[program]
root = "pairs"
files = ["pairs.py"]

[tests]
train = ["tests"]
timeout = 20

[evaluation]
workers = 2

[objectives]
minimize = ["failed_tests", "complexity", "size"]

[search]
population = {args.population}
generations = {args.generations}

[mutators]
operators = ["statement_delete", "constant"]
llm = 1.0

[llm]
base_url = "{base_url}"
model = "scripted"
api_key_env = "GI_SPEED_KEY"
timeout = 60
retries = 0
concurrency = {concurrency}
modes = {{ rewrite = 1, diff = 1, crossover = 1 }}
""")
    return config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay", type=float, default=1.0, help="seconds the server takes a reply")
    parser.add_argument("--population", type=int, default=24)
    parser.add_argument("--generations", type=int, default=2)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args(argv)
    model = ScriptedModel(respond=lambda body: Action(reply=REPLIES[mode_of(body)], delay=args.delay))
    server = ModelServer(model)
    server.start()
    results = {}
    try:
        with tempfile.TemporaryDirectory(prefix="gi-llm-speed-") as scratch:
            for concurrency in (1, 8):
                config = write_run(Path(scratch) / f"c{concurrency}", server.base_url, concurrency, args)
                asked = len(model.requests)
                started = time.perf_counter()
                subprocess.run(
                    [sys.executable, "-m", "gi.cli", "run", str(config), "--quiet"], check=True, capture_output=True,
                    env={**os.environ, "GI_SPEED_KEY": "none"},
                )  # fmt: skip
                seconds = time.perf_counter() - started
                summary = json.loads((config.parent / "runs" / f"pairs-seed{args.seed}" / "summary.json").read_text())
                front = [(member["id"], member["edits"]) for member in summary["front"]]
                results[concurrency] = (seconds, len(model.requests) - asked, front)
    finally:
        server.stop()
    print(f"population {args.population}, {args.generations} generations, seed {args.seed}, every mode, the server"
          f" {args.delay:g} s a reply")  # fmt: skip
    for concurrency, (seconds, requests, front) in results.items():
        print(f"concurrency {concurrency}: {seconds:6.1f} s, {requests} requests, front {[m for m, _ in front]}")
    ratio = results[1][0] / results[8][0]
    same = results[1][2] == results[8][2]
    print(f"concurrency 8 is {ratio:.1f} times as fast as 1; the fronts are {'the same' if same else 'DIFFERENT'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
