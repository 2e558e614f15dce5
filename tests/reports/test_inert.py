"""Text from a run shown inert (issue 37, hole 6): no control sequence of a variant's or a
model's reaches the terminal gi prints to, and no HTML, link or image reaches report.md."""

from __future__ import annotations

import io
import re

from rich.syntax import Syntax
from rich.table import Table

from gi.cli.output import InertConsole, bullets
from gi.reports.inert import inert, markdown_block, markdown_code, markdown_text

#: Clear the screen, a fake red figure, a hidden link (OSC 8), the window's title, a C1 CSI, a
#: carriage return over a line, text reversed by a bidirectional override.
HOSTILE = (
    "\x1b[2J\x1b[H\x1b[1;31m99x speed-up\x1b[0m \x1b]8;;https://example.invalid\x1b\\here\x1b]8;;\x1b\\"
    " \x1b]0;pwned\x07 \x9b31m \rover \u202edesrever"
)


def test_inert_text_shows_every_control_as_its_escape() -> None:
    shown = inert(HOSTILE + "\ttab\nline")
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]", shown)
    assert "\\x1b[2J" in shown and "\\u202e" in shown and "\ttab\nline" in shown


def test_nothing_gi_prints_drives_the_terminal() -> None:
    buffer = io.StringIO()
    console = InertConsole(file=buffer, force_terminal=True, width=100)
    console.print(HOSTILE, markup=False)
    table = Table()
    table.add_column("member")
    table.add_row(HOSTILE)
    console.print(table)
    console.print(bullets([HOSTILE]))
    console.print(Syntax(f"+ return a + b  # {HOSTILE}\n", "diff", theme="ansi_dark"))
    printed = buffer.getvalue()
    # Rich's own colours (SGR sequences it writes) are all that may remain of escape sequences.
    assert not re.search(r"\x1b(?!\[[0-9;]*m)", printed), repr(printed)
    assert not re.search("[\x07\x9b\r\u202e]", printed)
    assert "99x speed-up" in printed and "\\x1b]0;pwned" in printed


def test_markdown_carries_no_html_nor_links_from_a_run() -> None:
    text = markdown_text("<script>alert(1)</script> [click](https://example.invalid) ![x](y) a|b `c`")
    assert "<" not in text and ">" not in text and "](" not in text.replace("\\](", "")
    assert "\\|" in text and "\\`" in text
    code = markdown_code("x ``` y `` <b>")
    fence = re.match("`+", code)
    assert fence is not None and len(fence.group(0)) == 4 and code.endswith(fence.group(0))
    block = markdown_block("+ ```\n+ <img src=x onerror=alert(1)>\n", "diff")
    first = block.splitlines()[0]
    assert first == "````diff" and block.splitlines()[-1] == "````"
    assert "\x1b" not in markdown_block("\x1b[2J")
