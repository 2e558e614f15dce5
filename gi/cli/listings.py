"""`gi operators`, `gi objectives`, `gi algorithms` and `gi compare`: what a config can name
(gi's own, and what installed packages add through entry points, each with where it comes
from), and the statistics between arms."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    pass
from gi.cli.output import print_json


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`gi operators`, `gi objectives`, `gi algorithms` and `gi compare`."""
    commands.add_parser(
        "operators",
        help="list the mutation operators and crossovers a config can name",
        description="List every mutation operator and crossover with what it does and where it comes from "
        "(gi, or the installed package whose gi.operators entry point adds it).",
    )
    commands.add_parser(
        "objectives",
        help="list the objectives a config can name",
        description="List every objective (objectives.minimize, objectives.maximize) with its direction, what it "
        "measures and where it comes from (gi, or the installed package whose gi.objectives entry point adds it).",
    )
    commands.add_parser(
        "algorithms",
        help="list the search algorithms a config can name",
        description="List every search algorithm (search.algorithm) with what it does and where it comes from "
        "(gi, or the installed package whose gi.algorithms entry point adds it).",
    )

    compare = commands.add_parser(
        "compare",
        help="compare the arms of an experiment (or several runs) with statistics",
        description="Per arm: final hypervolume on a shared reference point, best value of each objective, "
        "evaluations to reach it (0: the original had it), overfitting rate (median and interquartile range over "
        "seeds); between each pair of arms: two-sided Mann-Whitney U, Vargha-Delaney A12, Holm-corrected p. Writes "
        "compare.json, compare-arms.csv and compare-pairs.csv beside the runs.",
    )
    compare.add_argument("runs", type=Path, nargs="+", help="an experiment folder, or run folders")
    compare.add_argument("--output", type=Path, help="the folder for the CSV and JSON files")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON instead of tables")


def compare_command(args: argparse.Namespace, console: Console) -> int:
    from gi.reports.compare import arm_table, compare, output_folder, pair_table, write_outputs

    result = compare(args.runs)
    written = write_outputs(result, args.output or output_folder(args.runs))
    if args.json:
        print_json(result)
        return 0
    console.print(arm_table(result))
    if result["pairs"]:
        console.print(pair_table(result))
    else:
        console.print("(one arm only: nothing to test against)")
    console.print(f"written: {', '.join(str(path) for path in written)}")
    return 0


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    return table


def algorithms_command(args: argparse.Namespace, console: Console) -> int:
    from gi.algorithms import ALGORITHMS

    table = _table("Search algorithms (search.algorithm)", "name", "what it does", "from")
    for name in ALGORITHMS:
        shown = name + (" (default)" if name == "nsga2" else "")
        table.add_row(shown, ALGORITHMS.get(name).description, ALGORITHMS.origin(name))
    console.print(table)
    return 0


def objectives_command(args: argparse.Namespace, console: Console) -> int:
    from gi.fitness.objectives import OBJECTIVES

    table = _table("Objectives (objectives.minimize, objectives.maximize)", "name", "direction", "what it is", "from")
    for name in OBJECTIVES:
        objective = OBJECTIVES.get(name)
        table.add_row(name, objective.direction.value, objective.description, OBJECTIVES.origin(name))
    console.print(table)
    console.print("A function of your own beside the config is an objective too: 'module:function'.")
    return 0


def operators_command(args: argparse.Namespace, console: Console) -> int:
    from gi.mutators import CROSSOVERS, OPERATORS

    table = _table("Mutation operators (mutators.operators)", "name", "what it does", "from")
    for name in OPERATORS:
        table.add_row(name, OPERATORS.get(name).description, OPERATORS.origin(name))
    console.print(table)
    crossovers = Table(title="Crossovers (search.crossovers)")
    crossovers.add_column("name")
    crossovers.add_column("what it does")
    for name in CROSSOVERS:
        crossovers.add_row(name, CROSSOVERS.get(name).description)
    console.print(crossovers)
    return 0
