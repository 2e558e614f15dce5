"""`gi show`, `gi report` and `gi apply`: read a finished run folder, print or write its results,
apply a front member's patch."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table

from gi.model.errors import UsageError

if TYPE_CHECKING:
    pass
from gi.cli.output import bullets, print_json, say


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`gi show`, `gi apply` and `gi report`."""
    show = commands.add_parser(
        "show",
        help="print a run's front, or one member's diff and objectives",
        description="Print the Pareto front of a finished run, or with PATCH, the diff, objectives "
        "and held-out results of one front member.",
    )
    show.add_argument("run", type=Path, help="a run folder (it holds summary.json)")
    show.add_argument("patch", nargs="?", help="a front member's id, as in the front table, or original")
    show.add_argument("--json", action="store_true", help="print the summary, or the member with its diff, as JSON")

    apply = commands.add_parser(
        "apply",
        help="apply a front member's patch to the project",
        description="Write a front member's changes into the project the run was made from (or into --project, "
        "a copy of it). Refuses, changing nothing, when a file it edits changed since the run; keeps the former "
        "files in the run folder (applied/ID-TIME/) and prints what it did. It writes the same files as "
        "`git apply RUN/patches/ID.diff` in the project.",
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


def show_command(args: argparse.Namespace, console: Console) -> int:
    from gi.engine.run_folder import ORIGINAL, find_member, read_diff, read_summary
    from gi.reports.tables import (
        behaviour_cell,
        describe_behaviour,
        describe_speedup,
        front_view,
        model_table,
        operator_table,
        oracle_line,
    )

    summary = read_summary(args.run)
    if args.patch is None:
        if args.json:
            print_json(summary)
            return 0
        console.print(front_view(summary))
        if (line := oracle_line(summary)) is not None:
            console.print(line, soft_wrap=True)
        if summary.get("operators"):
            console.print(operator_table(summary))
        if (model := model_table(summary)) is not None:
            console.print(model)
        _show_gap(summary, console)
        if summary.get("validation"):
            from gi.studies.validate import validation_table

            console.print(validation_table(summary["validation"]))
        return 0
    member = find_member(summary, args.patch)
    if member is None:
        ids = ", ".join(m["id"] for m in summary["front"]) or "no member"
        raise UsageError(
            f"{args.run}: no front member {args.patch!r}; the front holds {ids} ({ORIGINAL} is the original program)"
        )
    if args.json:
        print_json({**member, "diff_text": read_diff(args.run, member)})
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
    behaviour = member.get("behaviour")
    if not original and behaviour:
        row("behaviour (oracle)", "-", behaviour_cell(behaviour) if behaviour["verdict"] != "not checked" else "-")
    console.print(table)
    console.print(bullets(member["descriptions"]))
    if not original and behaviour:
        say(console, f"behaviour {describe_behaviour(behaviour)}")
        if behaviour.get("counterexample"):
            console.print(Syntax(behaviour["counterexample"], "python", theme="ansi_dark"))
    _show_studies(member, summary, console)
    diff = read_diff(args.run, member)
    if diff is None:
        console.print("(no change: this member is the original program)")
    else:
        console.print(Syntax(diff, "diff", theme="ansi_dark"))
    return 0


def apply_command(args: argparse.Namespace, console: Console) -> int:
    from gi.studies.apply_patch import apply_member

    applied = apply_member(args.run, args.patch, args.project)
    if not applied.changed:
        say(console, f"{applied.member} changes nothing: {applied.project} is left as it is")
        return 0
    for name in applied.changed:
        say(console, f"changed {applied.project / name}")
    say(console, f"applied {applied.member} from {args.run}; the former files are in {applied.backups}")
    return 0


def report_command(args: argparse.Namespace, console: Console) -> int:
    from gi.reports.document import write_report_files

    written = write_report_files(args.run)
    say(console, f"wrote {written.html} and {written.markdown} ({len(written.images)} plots)")
    return 0


def _show_studies(member: dict[str, Any], summary: dict[str, Any], console: Console) -> None:
    """A member's minimal patch and ablation, when `gi minimize` and `gi ablate` made them."""
    from gi.studies.ablation import ablation_table

    minimal = member.get("minimal")
    if minimal is not None:
        where = f" ({minimal['diff']})" if minimal["diff"] else ""
        console.print(f"minimal patch: {len(minimal['edits'])} of {len(member['edits'])} edits{where}")
        if not minimal.get("kept_itself", True):
            say(console, f"  ({minimal.get('why', 'not minimised')})")
        console.print(bullets(minimal["descriptions"]))
    if member.get("ablation"):
        console.print(ablation_table(member, [objective["name"] for objective in summary["objectives"]]))


def _show_gap(summary: dict[str, Any], console: Console) -> None:
    """The generalisation gap per generation, when the run had held-out tests."""
    from gi.reports.tables import gap_table

    if summary.get("generalisation_gap"):
        console.print(gap_table(summary["generalisation_gap"]))
