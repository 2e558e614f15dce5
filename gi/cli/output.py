"""What every command prints with: one line, a bullet list, JSON; and the isolation a run gets."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from gi.config import Config


def say_isolation(config: Config) -> None:
    """Say at the start of every run how the variants' code is isolated; loudly when it is not."""
    from gi.engine.sandbox.bubblewrap import isolation
    from gi.engine.sandbox.limits import sandbox_limits

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


def bullets(lines: Sequence[str]) -> Table:
    """Lines as a list, each after "  - ": a line too long for the terminal goes on under its
    own first character (a hanging indent), never under the dash; a word longer than the
    width is broken, never cut."""
    grid = Table.grid()
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for line in lines:
        grid.add_row("  - ", Text(line))
    return grid


def say(console: Console, line: str) -> None:
    """A line of plain text: no markup, no colouring, paths never broken."""
    console.print(line, markup=False, highlight=False, soft_wrap=True)


def print_json(data: object) -> None:
    """JSON for scripts: plain text on stdout, no colour or wrapping."""
    sys.stdout.write(json.dumps(data, indent=2) + "\n")
