"""What every command prints with: one line, a bullet list, JSON; and the isolation a run gets."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from gi.reports.inert import inert

if TYPE_CHECKING:
    from gi.config import Config


class InertConsole(Console):
    """Rich's console, but nothing it prints drives the terminal: the text of every segment is
    made inert (gi.reports.inert) as it is rendered, whatever renderable it comes from (a
    variant's diff, a model's reply in a warning, a test's failure), while Rich's own styling
    and cursor control stay. Every console of gi's is one."""

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            yield segment if segment.control or not segment.text else Segment(inert(segment.text), segment.style)

    def render_str(self, text: str, **options: Any) -> Text:
        """A string made inert before it is laid out (so a table sizes it as it shows)."""
        return super().render_str(inert(text), **options)


def say_isolation(config: Config) -> None:
    """Say at the start of every run how the variants' code is isolated; loudly when it is not."""
    from gi.engine.sandbox.bubblewrap import isolation
    from gi.engine.sandbox.limits import memory_warning, sandbox_limits

    limits = sandbox_limits(config)
    isolated = isolation(limits)
    errors = InertConsole(stderr=True)
    if warning := memory_warning(limits):
        errors.print(f"gi: warning: {warning}", markup=False, highlight=False, soft_wrap=True)
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
