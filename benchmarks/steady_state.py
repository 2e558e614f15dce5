"""How busy do the evaluators stay while a slow model answers? Generational and steady-state
evaluation side by side, on the same budget.

A scripted OpenAI-compatible server on 127.0.0.1 (tests/llm_server.py) answers every request
after a delay drawn uniformly between `--fastest` and `--slowest` seconds (1 and 3 by default,
like a hosted model). Its reply is a new version of a quadratic pair search, made from the
request's content (a bound on the inner loop, a name, a constant), so almost every reply is a
program of its own (a prompt asked again gets another, as a model sampling at a temperature
does); a replay gets the same replies from the reply cache. The project's twelve tests take
`--test-seconds` each besides their checks (a second or two a variant in all, as a small
project's suite). gi runs one config (the model making every mutation, `evaluation.workers`
evaluators, `llm.concurrency` requests in flight) twice: generation by generation, and with
`search.steady_state = true`; each stops after `--evaluations` programs. The benchmark prints
each run's wall time, how busy its evaluators were (summary.json's `evaluators.busy`: their
seconds evaluating over workers x the search's seconds) and its front; then it stops the server
and replays the steady-state run offline, and prints whether the replay reached the recorded
front and history without measuring anything.

    python benchmarks/steady_state.py [--workers 4] [--population 8] [--evaluations 48]
        [--concurrency 8] [--fastest 1] [--slowest 3] [--test-seconds 0.1] [--seed 3]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.llm_speed import PROGRAM  # noqa: E402 (the same quadratic pair search)
from tests.llm_server import Action, ModelServer, ScriptedModel  # noqa: E402


def tests(seconds: float) -> str:
    """Twelve tests, each taking `seconds` besides its checks (a project's suite takes a while)."""
    return "import time\n\n\n" + "\n\n".join(
        f"def test_{number}():\n    from pairs import has_pair_with_sum\n\n    time.sleep({seconds})\n"
        f"    assert has_pair_with_sum(list(range({number})), {2 * number - 3}) == {number >= 2}\n"
        f"    assert not has_pair_with_sum([{number}], {2 * number})\n"
        for number in range(1, 13)
    )


#: The versions a reply picks from by the request's hash: some pass, some fail a test.
VERSIONS = (
    "    for i in range(len(values)):\n        for j in range(i + {k} - {k} + 1, len(values)):\n"
    "            if values[i] + values[j] == target:\n                return True\n    return False\n",
    "    seen_{k} = set()\n    for value in values:\n        if target - value in seen_{k}:\n"
    "            return True\n        seen_{k}.add(value)\n    return False\n",
    "    for i in range(len(values)):\n        for j in range(len(values)):\n"
    "            if i != j and values[i] + values[j] == target + {k} - {k}:\n                return True\n"
    "    return False\n",
    "    return any(target - values[i] in values[i + 1 :] for i in range(len(values) - {k} % 1))\n",
    "    return len(values) > {k} % 2\n",  # wrong: fails tests
)


def reply_for(body: dict[str, Any], asked: collections.Counter[str]) -> str:
    """A version of the function made from the request's content and how often it was asked (a
    model samples anew each time: the same prompt asked again gets another version)."""
    text = json.dumps(body, sort_keys=True)
    asked[text] += 1
    digest = int(hashlib.sha256(f"{text}{asked[text]}".encode()).hexdigest(), 16)
    version = VERSIONS[digest % len(VERSIONS)].format(k=digest % 997 + 2)
    header = (
        'def has_pair_with_sum(values, target):\n    """True if two different entries of values add up to target."""\n'
    )
    return f"```python\n{header}{version}```"


def write_run(folder: Path, base_url: str, steady: bool, args: argparse.Namespace) -> Path:
    (folder / "pairs" / "tests").mkdir(parents=True)
    (folder / "pairs" / "pairs.py").write_text(PROGRAM)
    (folder / "pairs" / "tests" / "test_pairs.py").write_text(tests(args.test_seconds))
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
timeout = 30

[evaluation]
workers = {args.workers}

[objectives]
minimize = ["failed_tests", "complexity", "size"]

[search]
population = {args.population}
generations = 1000
max_evaluations = {args.evaluations}
crossover_rate = 0.0
steady_state = {"true" if steady else "false"}

[mutators]
operators = ["statement_delete", "constant"]
llm = 1.0

[llm]
base_url = "{base_url}"
model = "scripted"
api_key_env = "GI_STEADY_KEY"
timeout = 60
retries = 0
concurrency = {args.concurrency}
max_requests = {10 * args.evaluations}
feedback_retries = 0
""")
    return config


def gi(*arguments: str) -> None:
    done = subprocess.run([sys.executable, "-m", "gi.cli", *arguments, "--quiet"], capture_output=True, text=True,
                          env={**os.environ, "GI_STEADY_KEY": "none"}, check=False)  # fmt: skip
    if done.returncode:
        raise SystemExit(f"gi {' '.join(arguments)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--population", type=int, default=8)
    parser.add_argument("--evaluations", type=int, default=48, help="programs each run evaluates")
    parser.add_argument("--concurrency", type=int, default=8, help="the model's requests in flight (llm.concurrency)")
    parser.add_argument("--fastest", type=float, default=1.0, help="the quickest reply, in seconds")
    parser.add_argument("--slowest", type=float, default=3.0, help="the slowest reply, in seconds")
    parser.add_argument("--test-seconds", type=float, default=0.1, help="what each of the 12 tests sleeps")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--keep", action="store_true", default=None, help="keep the runs' folders (printed)")
    args = parser.parse_args(argv)
    delays, samples = random.Random(args.seed), collections.Counter[str]()
    model = ScriptedModel(
        respond=lambda body: Action(reply=reply_for(body, samples), delay=delays.uniform(args.fastest, args.slowest))
    )
    server = ModelServer(model)
    server.start()
    results: dict[str, dict[str, Any]] = {}
    with contextlib.ExitStack() as stack:
        scratch = tempfile.mkdtemp(prefix="gi-steady-")
        if not args.keep:
            stack.callback(shutil.rmtree, scratch, ignore_errors=True)
        try:
            for name, steady in (("generational", False), ("steady-state", True)):
                config = write_run(Path(scratch) / name, server.base_url, steady, args)
                if args.keep:
                    print(f"{name}: {config.parent}")
                asked = len(model.requests)
                started = time.perf_counter()
                gi("run", str(config))
                seconds = time.perf_counter() - started
                folder = config.parent / "runs" / f"pairs-seed{args.seed}"
                summary = json.loads((folder / "summary.json").read_text())
                results[name] = {"config": config, "folder": folder, "seconds": seconds, "summary": summary,
                                 "requests": len(model.requests) - asked}  # fmt: skip
        finally:
            server.stop()  # the replay below has no server: offline, from the reply cache
        steady_run = results["steady-state"]
        gi("replay", str(steady_run["config"]))
        replayed = json.loads((steady_run["folder"] / "replay" / "summary.json").read_text())
    print(f"{args.workers} evaluators, population {args.population}, {args.evaluations} programs a run, seed"
          f" {args.seed}; the model answers in {args.fastest:g}-{args.slowest:g} s, {args.concurrency} requests in"
          f" flight; load at the end: {os.getloadavg()[0]:.1f}")  # fmt: skip
    for name, result in results.items():
        summary = result["summary"]
        busy = summary["evaluators"]
        print(f"{name:>13}: {result['seconds']:6.1f} s in all, search {busy['loop_seconds']:6.1f} s, evaluators busy"
              f" {busy['busy']:.0%} ({busy['busy_seconds']:.1f} s of {busy['workers']} x {busy['loop_seconds']:.1f} s),"
              f" {summary['evaluations']} programs, {result['requests']} requests, front"
              f" {[member['id'] for member in summary['front']]}")  # fmt: skip
    ratio = (
        results["generational"]["summary"]["evaluators"]["loop_seconds"]
        / steady_run["summary"]["evaluators"]["loop_seconds"]
    )
    print(f"steady-state's search took {1 / ratio:.2f} of the generational one's time")
    same = replayed["replay"] == {"history": True, "front": True} and not replayed["measurements"]["measured"]
    print(f"replay of the steady-state run, offline: {replayed['replay']}, measured anew:"
          f" {replayed['measurements']['measured'] or 'nothing'}")  # fmt: skip
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
