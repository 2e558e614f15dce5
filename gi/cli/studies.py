"""`gi minimize`, `gi ablate` and `gi validate`: study a finished run's front."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from gi.model.errors import UsageError

if TYPE_CHECKING:
    pass
from gi.cli.output import say, say_isolation


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`gi minimize`, `gi ablate` and `gi validate`: the studies of a finished run's front."""
    minimize = commands.add_parser(
        "minimize",
        help="reduce each front member to a 1-minimal patch with the same objective values",
        description="Delta debugging (ddmin), then single-edit removals: the fewest edits of each front member "
        "(or of ID) that keep its objective values (runtime within its measured interval; size aside). "
        "Evaluations go through the run's evaluator and are kept in its store; summary.json gives each "
        "member's `minimal` patch, and patches/<id>.min.diff its diff.",
    )
    _finished_run(minimize, member=True)
    ablate = commands.add_parser(
        "ablate",
        help="measure what each edit of each front member contributes, and which cause held-out failures",
        description="For each front member (or ID), remove each edit in turn and measure again: its contribution "
        "to each objective, whether the member stays feasible without it, and the held-out tests it causes to "
        "fail (failing with the whole patch, passing without that edit) and those it breaks alone. summary.json "
        "gives each member's "
        "`ablation`; `gi show RUN ID` prints it.",
    )
    _finished_run(ablate, member=True)
    validate = commands.add_parser(
        "validate",
        help="run a finished run's front and every feasible program it saw under other tests",
        description="Run the front, and every feasible program the search evaluated, under the tests at PATHS "
        "(a suite written later, another project's; copied into each copy of the program) or, without --tests, "
        "the run's own held-out tests; prints and stores the overfitting rate of the front, of every feasible "
        "program and per operator (language model against classic edits), with the overfits each operator "
        "introduced apart from those inherited from a parent. summary.json: `validation`.",
    )
    _finished_run(validate)
    validate.add_argument("--tests", type=Path, nargs="+", metavar="PATH", help="test files or folders")


def _finished_run(parser: argparse.ArgumentParser, *, member: bool = False) -> None:
    """The arguments every study takes: the finished run folder, its config where the folder
    was moved, and (`member`) one front member's id."""
    parser.add_argument("run", type=Path, help="a finished run folder (it holds summary.json)")
    parser.add_argument(
        "--config",
        type=Path,
        help="the run's config, when summary.json's path to it does not hold (a run folder copied from elsewhere)",
    )
    if member:
        parser.add_argument("patch", nargs="?", help="one front member's id (default: every member; not original)")


def _refuse_original(args: argparse.Namespace, verb: str) -> None:
    """`gi minimize RUN original` and `gi ablate RUN original` have nothing to work on."""
    from gi.engine.run_folder import ORIGINAL

    if args.patch == ORIGINAL:
        raise UsageError(
            f"{args.run}: the original has no edits, so there is nothing to {verb}; name a front member"
            f" (gi show {args.run} lists them)"
        )


def minimize_command(args: argparse.Namespace, console: Console) -> int:
    from gi.studies.minimize import minimize_front
    from gi.studies.rerun import FinishedRun

    _refuse_original(args, "minimise")
    with FinishedRun(args.run, args.config) as run:
        before = {member["id"]: len(member["edits"]) for member in run.members(args.patch)}
        say_isolation(run.config)
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
            say(console, f"{member}: {record['why']}")
    return 0


def ablate_command(args: argparse.Namespace, console: Console) -> int:
    from gi.studies.ablation import ablate_front, ablation_table
    from gi.studies.rerun import FinishedRun

    _refuse_original(args, "ablate")
    with FinishedRun(args.run, args.config) as run:
        members = run.members(args.patch)
        say_isolation(run.config)
        done = ablate_front(run, args.patch)
        names = list(run.names)
    for member in members:
        if done[member["id"]]:
            console.print(ablation_table({**member, "ablation": done[member["id"]]}, names))
        else:
            console.print(f"{member['id']}: no edit to ablate (the original program)")
    return 0


def validate_command(args: argparse.Namespace, console: Console) -> int:
    from gi.studies.rerun import FinishedRun
    from gi.studies.validate import suite_files, validate, validation_table

    if args.tests:
        suite_files(args.tests)  # a missing or empty suite is refused before the run is opened
    with FinishedRun(args.run, args.config) as run:
        say_isolation(run.config)
        figures = validate(run, args.tests)
    console.print(validation_table(figures))
    return 0
