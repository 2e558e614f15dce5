"""The size measures: how many edits took effect, and how many lines the diff changes."""

from __future__ import annotations


def diff_lines(diff: str) -> float:
    """Lines added or removed by a unified diff (file headers not counted)."""
    return float(sum(1 for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++ ", "--- "))))
