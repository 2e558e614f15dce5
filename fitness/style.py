"""The style measure: pycodestyle (PEP 8) violations, counted in-process without output."""

from __future__ import annotations

from collections.abc import Mapping

import pycodestyle

_OPTIONS = pycodestyle.StyleGuide(quiet=True, max_line_length=100).options


def violations(sources: Mapping[str, str]) -> float:
    """Number of PEP 8 violations in the files (line length limit 100)."""
    total = 0
    for name, code in sources.items():
        checker = pycodestyle.Checker(filename=name, lines=code.splitlines(keepends=True), options=_OPTIONS)
        total += checker.check_all()
    return float(total)
