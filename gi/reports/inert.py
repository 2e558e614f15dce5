"""Text from a run made inert for where gi shows it: a variant's code, a model's reply, a test's
failure, a diff. None of it may drive the terminal that prints it (escape sequences that clear
the screen, colour a fake figure, set the window's title or hide a link) nor become markup in
report.md (raw HTML, links, images): every control character is shown as its escape, and
Markdown gets its own escaping."""

from __future__ import annotations

import re

#: Characters that control a terminal or reorder what it shows: C0 controls but tab and newline,
#: DEL and the C1 controls (ESC and CSI among them), and Unicode's bidirectional controls.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: What Markdown would read as code, a link or an image, or a table's column, in running text
#: (HTML's own characters become entities; emphasis is harmless and stays).
_MARKDOWN = re.compile(r"([\\`\[\]|])")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def _escaped(found: re.Match[str]) -> str:
    code = ord(found.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert(text: str) -> str:
    """`text` with every control character shown as its escape (`\\x1b`, `\\u202e`), tabs and
    newlines kept."""
    return _CONTROL.sub(_escaped, text)


def markdown_text(text: str) -> str:
    """`text` for running Markdown: inert, HTML's special characters as entities and Markdown's
    punctuation escaped, so nothing in it becomes a tag, a link or an image."""
    text = "".join(_HTML.get(character, character) for character in inert(text))
    return _MARKDOWN.sub(r"\\\1", text)


def _backticks(text: str, least: int) -> str:
    """A run of backticks longer than any in `text`, and `least` long at least (CommonMark's rule
    for what closes code)."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    return "`" * max(least, longest + 1)


def markdown_code(text: str) -> str:
    """`text` as inline Markdown code: inert, on one line, between backticks it cannot close."""
    text = inert(text).replace("\n", " ")
    fence = _backticks(text, 1)
    padding = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def markdown_block(text: str, language: str = "") -> str:
    """`text` as a fenced Markdown code block whose fence nothing in it can close."""
    text = inert(text).rstrip()
    fence = _backticks(text, 3)
    return f"{fence}{language}\n{text}\n{fence}"
