"""How well does a model serve gi in each mode? Speed and repair tasks, any OpenAI-compatible server.

Runs gi on a fixed set of tasks, once per mode (rewrite, diff, crossover) with the same seed
and budget, the model making every mutation it can (`mutators.llm = 1`; a classic operator
fills in only where the model gives nothing), and prints per mode, over the tasks:

- apply rate: the share of the model's readable replies whose change fitted the code (a diff's
  blocks found, the right function written); a crossover run asks for rewrites until the
  archive holds a second version of the function, and they count in its figures;
- pass rate: the share of the model's evaluated offspring that passed every training test;
- front share: the share of the final fronts' members (the original left out) the model made;
- to the first improvement: how many tasks the model improved (an offspring of its own on the
  front that passes the training tests and beats the original in an objective other than patch
  size), and the median evaluations, tokens and money it took to get there.

Tasks: `dedupe` (make a deduplication faster: its loop asks a list what a set already knows;
runtime measured with pyperf) and two repairs of benchmarks/repair_programs/words with a bug
planted (`vowels`: a vowel missing from a string; `longest`: `>=` where `>` keeps the first of
equal words). The runs go into a scratch folder, with a reply cache of their own unless
`--cache` names one (then a second run replays without the model); each mode has a cache of
its own, so that no mode is served replies another one paid for.

    python benchmarks/llm.py --base-url http://127.0.0.1:8000/v1 --model gemma-3-270m --api completions
    python benchmarks/llm.py --base-url https://api.openai.com/v1 --model gpt-4o-mini \\
        --api-key-env OPENAI_API_KEY --price-prompt 0.15 --price-completion 0.6
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MODES = ("rewrite", "diff", "crossover")


@dataclass(frozen=True)
class Task:
    name: str
    kind: str  # "speed" or "repair"
    root: Path
    module: str
    #: The text replacement that plants the bug (repair tasks).
    bug: tuple[str, str] | None = None


TASKS = (
    Task("dedupe", "speed", REPO / "experiments" / "programs" / "dedupe", "dedupe.py"),
    Task("vowels", "repair", REPO / "benchmarks" / "repair_programs" / "words", "words.py", ('"aeiou"', '"aeio"')),
    Task(
        "longest",
        "repair",
        REPO / "benchmarks" / "repair_programs" / "words",
        "words.py",
        ("if len(word) > len(best):", "if len(word) >= len(best):"),
    ),
)


def config_text(task: Task, mode: str, args: argparse.Namespace, cache: Path) -> str:
    speed = task.kind == "speed"
    objectives = '["failed_tests", "runtime", "size"]' if speed else '["failed_tests", "size"]'
    workload = '\n[workload]\ncall = "workload:run"\ncheck_output = true\nrigorous_processes = 2\n' if speed else ""
    holdout = 'holdout = ["holdout"]\n' if (task.root / "holdout").is_dir() else ""
    return f"""\
[experiment]
name = "{task.name}-{mode}"
seed = {args.seed}
output = "runs"

[program]
root = "{task.name}"
files = ["{task.module}"]

[tests]
train = ["tests"]
{holdout}timeout = 30

[objectives]
minimize = {objectives}
constraint = "{"train_pass" if speed else "none"}"

[search]
population = {args.population}
generations = {args.generations}

[mutators]
operators = ["statement_delete"]
llm = 1.0

[llm]
base_url = "{args.base_url}"
model = "{args.model}"
api = "{args.api}"
api_key_env = "{args.api_key_env}"
max_tokens = {args.max_tokens}
timeout = {args.timeout}
max_requests = {args.max_requests}
max_cost = {args.max_cost}
price_prompt = {args.price_prompt}
price_completion = {args.price_completion}
cache = "{cache}"
modes = {{ {mode} = 1.0 }}
{workload}"""


def run_task(task: Task, mode: str, args: argparse.Namespace, scratch: Path, cache: Path) -> dict[str, Any]:
    """One gi run of a task in a mode; its summary.json."""
    folder = scratch / f"{task.name}-{mode}"
    shutil.copytree(task.root, folder / task.name, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    if task.bug is not None:
        module = folder / task.name / task.module
        text = module.read_text()
        assert text.count(task.bug[0]) == 1, f"{task.name}: the bug's site is not one place"
        module.write_text(text.replace(*task.bug))
    config = folder / "task.toml"
    config.write_text(config_text(task, mode, args, cache / mode))  # each mode pays for its own replies
    run = subprocess.run(
        [sys.executable, "-m", "gi.cli", "run", str(config), "--quiet", "--fresh"], capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    if run.returncode != 0:
        raise SystemExit(f"gi run {config} exited with {run.returncode}:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
    summary: dict[str, Any] = json.loads(
        (folder / "runs" / f"{task.name}-{mode}-seed{args.seed}" / "summary.json").read_text()
    )
    return summary


def _share(numerator: float, denominator: float) -> str:
    return f"{numerator / denominator:.0%}" if denominator else "-"


def _median(values: list[float], form: str) -> str:
    return form.format(statistics.median(values)) if values else "-"


def mode_row(mode: str, summaries: list[dict[str, Any]]) -> list[str]:
    """The figures of one mode over the tasks' runs."""
    readable = applied = evaluated = passing = front = made = 0.0
    firsts = []
    for summary in summaries:
        llm = summary["llm"] or {}
        for counts in llm.get("modes", {}).values():  # (a crossover asks for a rewrite until it has a partner)
            parsed = counts.get("replies", 0) - counts.get("unparseable", 0)
            readable += parsed
            applied += parsed - counts.get("not_applied", 0) - counts.get("wrong_kind", 0)
        for name, row in summary["operators"].items():
            if name.startswith("llm."):
                evaluated += row.get("evaluated", 0)
                passing += row.get("passing", 0)
        members = [m for m in summary["front"] if m["id"] != "original"]
        front += len(members)
        made += sum(m["operator"].split("+")[-1].removeprefix("replace:").startswith("llm") for m in members)
        if llm.get("first_improvement"):
            firsts.append(llm["first_improvement"])
    return [
        mode,
        _share(applied, readable),
        _share(passing, evaluated),
        _share(made, front),
        f"{len(firsts)}/{len(summaries)}",
        _median([f["evaluations"] for f in firsts], "{:.0f}"),
        _median([f["tokens"] for f in firsts], "{:.0f}"),
        _median([f["cost"] for f in firsts], "${:.4f}"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="the OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--model", required=True, help="the model's name on that server")
    parser.add_argument("--api", choices=("chat", "completions"), default="chat")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="the NAME of the variable holding the key")
    parser.add_argument("--price-prompt", type=float, default=0.0, help="USD per million prompt tokens")
    parser.add_argument("--price-completion", type=float, default=0.0, help="USD per million completion tokens")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a request may take")
    parser.add_argument("--max-requests", type=int, default=24, help="requests per run (a task in a mode)")
    parser.add_argument("--max-cost", type=float, default=1.0, help="USD per run")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated modes (default: all)")
    parser.add_argument("--tasks", default=",".join(task.name for task in TASKS), help="comma-separated tasks")
    parser.add_argument("--population", type=int, default=6)
    parser.add_argument("--generations", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cache", type=Path, help="a reply cache to keep (default: a scratch one)")
    args = parser.parse_args(argv)
    modes = [mode for mode in args.modes.split(",") if mode]
    tasks = [task for task in TASKS if task.name in args.tasks.split(",")]
    if not tasks or any(mode not in MODES for mode in modes):
        parser.error(f"--tasks from {[t.name for t in TASKS]}, --modes from {list(MODES)}")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gi-llm-bench-") as scratch:
        cache = (args.cache or Path(scratch) / "llm-cache").resolve()
        rows = []
        for mode in modes:
            summaries = [run_task(task, mode, args, Path(scratch), cache) for task in tasks]
            rows.append(mode_row(mode, summaries))
    header = ["mode", "apply rate", "pass rate", "front share", "improved", "evaluations", "tokens", "money"]
    names = ", ".join(task.name for task in tasks)
    budget = f"population {args.population}, {args.generations} generations, {args.max_requests} requests a run"
    print(f"{args.model} at {args.base_url} ({args.api}); tasks {names}; seed {args.seed}, {budget} at most")
    print("                                                        (to the first improvement, median)")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    print(f"{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
