"""`gi init`: write a commented starter config for a project (gi/cli/starter.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

if TYPE_CHECKING:
    pass
from gi.cli.output import say, say_isolation


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`gi init`."""
    init = commands.add_parser(
        "init",
        help="write a commented starter config for a project",
        description="Find the project's Python files and tests, run the training tests once on the original "
        "(sandboxed, as gi run does) and write gi.toml in it, a commented config that `gi run gi.toml` runs as it "
        "is (tests never editable, run folders beside the project; a repair's config when the original fails "
        "tests). Its training tests are the test folders (tests/, test/, testing/, also inside a package) or "
        "test files beside the code; a holdout/ folder holds held-out tests, else 20% of the training tests are "
        "held out (tests.holdout_fraction); a .venv (venv, .env, env) in the project is where the tests run "
        "(program.python); a workload.py with a no-argument run() makes runtime an objective. Time limits come "
        "from the tests' own times. When the original fails training tests, the config is a repair's "
        "(constraint = 'none', fault localisation on); tests that cannot run at all are one line saying why, "
        "and no config. Asks nothing; never overwrites an existing gi.toml.",
    )
    init.add_argument("project", type=Path, nargs="?", default=Path("."), help="the project folder (default: here)")


def init_command(args: argparse.Namespace, console: Console) -> int:
    from gi.cli.starter import HOLDOUT_FRACTION, write_starter_config

    path, project, original = write_starter_config(args.project, before_tests=say_isolation)
    say(console, f"wrote {path}")
    say(console, f"  editable files: {', '.join(project.files)}")
    if project.scripts:
        folders = ", ".join(f"{folder}/" for folder in project.scripts)
        say(
            console,
            f"  left out: {folders} (scripts beside the program; add them to program.files to edit them)",
        )
    say(console, f"  training tests: {', '.join(project.train)}")
    if project.holdout:
        say(console, f"  held-out tests: {', '.join(project.holdout)}")
    elif original.tests < 2:
        say(console, "  held-out tests: none found, and one training test is too few to hold a share out")
    else:
        say(
            console,
            f"  held-out tests: no folder found, so {HOLDOUT_FRACTION:.0%} of the training tests are held out"
            " (tests.holdout_fraction, seeded): they judge the front, never the search",
        )
    if project.python:
        say(console, f"  environment: the tests run in {project.python} (program.python)")
    if original.repair:
        timed = (
            f", {len(original.timed_out)} of them timed out after {original.limit:g} s" if original.timed_out else ""
        )
        say(
            console,
            f"  the original fails {len(original.failing)} of {original.tests} training tests{timed}: a repair"
            ' (constraint = "none", fault localisation on)',
        )
    else:
        say(console, f"  the original passes all {original.tests} training tests")
    if project.workload and not original.repair:
        say(console, f"  workload: {project.workload} (runtime is an objective)")
    say(console, f"next: read it, then gi run {path}")
    return 0
