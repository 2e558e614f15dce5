"""The size measures: how many edits took effect, how many lines the diff changes, and how many
of the code's tokens it changes."""

from __future__ import annotations

import difflib
import io
import tokenize
from collections.abc import Mapping

#: Tokens that carry no code: layout and comments.
_LAYOUT = frozenset(
    {tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT, tokenize.ENDMARKER}
)


def diff_lines(diff: str) -> float:
    """Lines added or removed by a unified diff (file headers not counted)."""
    return float(sum(1 for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++ ", "--- "))))


def tokens_changed(before: Mapping[str, str], after: Mapping[str, str]) -> int:
    """How many of the code's tokens a change replaces, inserts or deletes, over the files of
    `after` (the larger side of each differing run of tokens; layout and comments not counted):
    `a + b` to `a - b` is 1, to `a - (b + 1)` is 5. The syntactic distance repair tools rank
    candidate patches by (S3, Le et al. 2017: the smaller change is likelier right)."""
    changed = 0
    for file, text in after.items():
        old, new = _tokens(before.get(file, "")), _tokens(text)
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        changed += sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal")
    return changed


def _tokens(source: str) -> list[str]:
    try:
        found = tokenize.generate_tokens(io.StringIO(source).readline)
        return [token.string for token in found if token.type not in _LAYOUT]
    except (tokenize.TokenError, SyntaxError):
        return source.split()
