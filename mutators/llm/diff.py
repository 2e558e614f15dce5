"""SEARCH/REPLACE blocks, as aider and OpenEvolve ask models to write them, applied tolerantly.

A reply holds one or more blocks::

    <<<<<<< SEARCH
    lines of the code as it stands
    =======
    the lines to put in their place
    >>>>>>> REPLACE

Models, weak local ones most of all, copy the code they were shown imperfectly: trailing
spaces, the whole block shifted left or right (a method's body written from column 0), blank
lines dropped or added, tabs for spaces, Windows line ends, a fence inside the block. Each
block is matched at the first of these levels that finds it, and the level is recorded:

1. ``exact``: the lines as they are;
2. ``trailing whitespace``: each line's trailing spaces ignored;
   at both, a REPLACE written left of the lines it replaces as a whole (from column 0 under an
   indented SEARCH) is moved right to their indentation;
3. ``indentation``: the block found shifted by one indentation, the replacement shifted alike;
4. ``blank lines``: blank lines ignored on both sides, with the shift of level 3.

A SEARCH text must single out one place: text found at two places at the first level that
finds it is an error rather than a guess. Every failure is a `DiffError` whose message is
written to be sent back to the model in a retry (which block, what went wrong, the nearest
line of the code when the text was not found).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

SEARCH = re.compile(r"^\s*<{5,9}\s*SEARCH\b.*$")
DIVIDER = re.compile(r"^\s*={5,9}\s*$")
REPLACE = re.compile(r"^\s*>{5,9}\s*REPLACE\b.*$")
FENCE = re.compile(r"^\s*```")
#: The levels of matching, most exact first (see the module's doc).
LEVELS = ("exact", "trailing whitespace", "indentation", "blank lines")


class DiffError(ValueError):
    """A reply's blocks could not be read or applied; the message is meant for the model."""


@dataclass(frozen=True)
class Block:
    """One SEARCH/REPLACE pair, as lines without their line ends."""

    search: tuple[str, ...]
    replace: tuple[str, ...]


def has_blocks(reply: str) -> bool:
    """Whether the reply holds at least the start of a SEARCH/REPLACE block."""
    return any(SEARCH.match(line) for line in reply.splitlines())


def parse_blocks(reply: str) -> list[Block]:
    """The blocks of a reply, in order; prose and fences around them are ignored."""
    lines = reply.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        if not SEARCH.match(lines[index]):
            if DIVIDER.match(lines[index]) or REPLACE.match(lines[index]):
                raise DiffError(f"block {len(blocks) + 1}: a `=======` or `>>>>>>> REPLACE` line without its"
                                " `<<<<<<< SEARCH` line above it")  # fmt: skip
            index += 1
            continue
        number = len(blocks) + 1
        search, index = _section(lines, index + 1, DIVIDER, number, "=======")
        replace, index = _section(lines, index + 1, REPLACE, number, ">>>>>>> REPLACE")
        blocks.append(Block(_unfenced(search), _unfenced(replace)))
        index += 1
    if not blocks:
        raise DiffError(
            "the reply holds no SEARCH/REPLACE block: write each change as `<<<<<<< SEARCH`, the lines as they"
            " are, `=======`, the new lines, `>>>>>>> REPLACE`"
        )
    return blocks


def _section(lines: list[str], start: int, end: re.Pattern[str], number: int, name: str) -> tuple[list[str], int]:
    """The lines from `start` up to the line matching `end`, and that line's index."""
    for index in range(start, len(lines)):
        if end.match(lines[index]):
            return lines[start:index], index
        if SEARCH.match(lines[index]) or (end is REPLACE and DIVIDER.match(lines[index])):
            break
    raise DiffError(f"block {number} lacks its `{name}` line")


def _unfenced(lines: list[str]) -> tuple[str, ...]:
    """A section without a fence line opening or closing it (models often put one inside)."""
    if lines and FENCE.match(lines[0]):
        lines = lines[1:]
    if lines and FENCE.match(lines[-1]):
        lines = lines[:-1]
    return tuple(line.rstrip("\r") for line in lines)


def apply_blocks(text: str, blocks: Sequence[Block]) -> tuple[str, list[str]]:
    """`text` with each block applied in turn; returns it and the level at which each matched.

    An empty SEARCH appends its REPLACE lines at the end of the text (a new definition).
    """
    tabs = "\t" in text
    ends_in_newline = text.endswith("\n")
    lines = text.removesuffix("\n").split("\n")
    levels: list[str] = []
    for number, block in enumerate(blocks, 1):
        search = block.search if tabs else tuple(_untabbed(line) for line in block.search)
        replace = block.replace if tabs else tuple(_untabbed(line) for line in block.replace)
        if not any(line.strip() for line in search):
            lines = [*lines, *(() if lines and not lines[-1].strip() else ("",)), *replace]
            levels.append("append")
            continue
        lines, level = _apply_one(lines, search, replace, number)
        levels.append(level)
    return "\n".join(lines) + ("\n" if ends_in_newline else ""), levels


def _untabbed(line: str) -> str:
    """Leading tabs as four spaces each (for code written with spaces)."""
    stripped = line.lstrip("\t")
    return "    " * (len(line) - len(stripped)) + stripped


Matcher = Callable[[list[str], Sequence[str], Sequence[str]], list[tuple[int, int, list[str]]]]


def _apply_one(lines: list[str], search: Sequence[str], replace: Sequence[str], number: int) -> tuple[list[str], str]:
    for level, matcher in zip(LEVELS, _MATCHERS, strict=True):
        found = matcher(lines, search, replace)
        if len(found) == 1:
            start, end, new = found[0]
            return [*lines[:start], *new, *lines[end:]], level
        if len(found) > 1:
            at = ", ".join(str(start + 1) for start, _, _ in found[:5])
            raise DiffError(
                f"block {number}: its SEARCH text is found at {len(found)} places (lines {at}); include more"
                " lines around the change so that it names one place"
            )
    raise DiffError(f"block {number}: its SEARCH text is not in the code{_nearest(lines, search)}; copy the lines"
                    " exactly as they are in the code you were given")  # fmt: skip


def _nearest(lines: list[str], search: Sequence[str]) -> str:
    """A hint naming the code line nearest the first SEARCH line that is not found as it is."""
    stripped = [line.strip() for line in lines]
    for wanted in (line.strip() for line in search if line.strip()):
        if wanted in stripped:
            continue
        close = difflib.get_close_matches(wanted, [line for line in stripped if line], n=1, cutoff=0.6)
        if close:
            return f" (`{wanted}` is not a line of it; the nearest is `{close[0]}`)"
        return f" (`{wanted}` is not a line of it)"
    return " (its lines are there, but not in this order or not together)"


def _exact(lines: list[str], search: Sequence[str], replace: Sequence[str]) -> list[tuple[int, int, list[str]]]:
    wanted, size = list(search), len(search)
    return [
        (i, i + size, _aligned(lines[i : i + size], replace))
        for i in range(len(lines) - size + 1)
        if lines[i : i + size] == wanted
    ]


def _trailing(lines: list[str], search: Sequence[str], replace: Sequence[str]) -> list[tuple[int, int, list[str]]]:
    wanted, size = [line.rstrip() for line in search], len(search)
    stripped = [line.rstrip() for line in lines]
    return [
        (i, i + size, _aligned(lines[i : i + size], replace))
        for i in range(len(lines) - size + 1)
        if stripped[i : i + size] == wanted
    ]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _aligned(matched: Sequence[str], replace: Sequence[str]) -> list[str]:
    """The REPLACE lines as written; or, when they sit left of the matched lines as a whole (their
    first line at their least indentation, which is less than the matched lines'), moved right by
    the difference in the matched lines' own indentation. A REPLACE whose first line keeps the
    match's indentation (a new top-level definition after the match's last line, say) stays."""
    filled = [line for line in replace if line.strip()]
    found = [line for line in matched if line.strip()]
    if not filled or not found:
        return list(replace)
    have = min(_indent(line) for line in found)
    written = min(_indent(line) for line in filled)
    if written >= have or _indent(filled[0]) != written:
        return list(replace)
    prefix = next(line for line in found if _indent(line) == have)[: have - written]
    return [prefix + line if line.strip() else line for line in replace]


def _shifted(search: Sequence[str], replace: Sequence[str]) -> tuple[list[str], list[str]]:
    """Both sides moved left by the indentation all their non-blank lines share, right-stripped."""
    shared = min((_indent(line) for line in (*search, *replace) if line.strip()), default=0)
    return (
        [line[shared:].rstrip() if line.strip() else "" for line in search],
        [line[shared:].rstrip() if line.strip() else "" for line in replace],
    )


def _offset(window: Sequence[str], search: Sequence[str]) -> str | None:
    """The one indentation that, put before each non-blank SEARCH line, gives the window's line."""
    offset: str | None = None
    for have, want in zip(window, search, strict=True):
        if not want:
            if have.strip():
                return None
            continue
        text = have.rstrip()
        if not text.endswith(want) or text[: len(text) - len(want)].strip():
            return None
        prefix = text[: len(text) - len(want)]
        if offset is None:
            offset = prefix
        elif prefix != offset:
            return None
    return offset


def _reindented(replace: Sequence[str], offset: str) -> list[str]:
    return [offset + line if line else "" for line in replace]


def _indentation(lines: list[str], search: Sequence[str], replace: Sequence[str]) -> list[tuple[int, int, list[str]]]:
    wanted, new = _shifted(search, replace)
    size, found = len(wanted), []
    for i in range(len(lines) - size + 1):
        offset = _offset(lines[i : i + size], wanted)
        if offset is not None:
            found.append((i, i + size, _reindented(new, offset)))
    return found


def _blank_lines(lines: list[str], search: Sequence[str], replace: Sequence[str]) -> list[tuple[int, int, list[str]]]:
    wanted, new = _shifted(search, replace)
    wanted = [line for line in wanted if line]
    while new and not new[0]:
        new = new[1:]
    while new and not new[-1]:
        new = new[:-1]
    filled = [index for index, line in enumerate(lines) if line.strip()]
    size, found = len(wanted), []
    for i in range(len(filled) - size + 1):
        window = [lines[index] for index in filled[i : i + size]]
        offset = _offset(window, wanted)
        if offset is not None:
            found.append((filled[i], filled[i + size - 1] + 1, _reindented(new, offset)))
    return found


_MATCHERS: tuple[Matcher, ...] = (_exact, _trailing, _indentation, _blank_lines)
