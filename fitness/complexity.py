"""The complexity measures, from radon: cyclomatic complexity, maintainability, Halstead volume.

Radon parses with `ast.parse`, which on CPython 3.11 may fail with "SystemError: AST constructor
recursion depth mismatch" while another thread builds an AST too (CPython issue 106905): every
ast.parse of gi's runs under gi.model.program's one lock (`compiler_warnings_ignored`).
"""

from __future__ import annotations

from collections.abc import Mapping

from radon.metrics import h_visit, mi_visit
from radon.visitors import ComplexityVisitor

from gi.model.program import compiler_warnings_ignored


def cyclomatic(sources: Mapping[str, str]) -> float:
    """Total cyclomatic complexity (radon's `total_complexity`) summed over the files."""
    with compiler_warnings_ignored():
        return float(sum(ComplexityVisitor.from_code(code).total_complexity for code in sources.values()))


def maintainability(sources: Mapping[str, str]) -> float:
    """Mean maintainability index (0 to 100, higher is better) over the files."""
    if not sources:
        return 100.0
    with compiler_warnings_ignored():
        return float(sum(mi_visit(code, multi=True) for code in sources.values())) / len(sources)


def halstead_volume(sources: Mapping[str, str]) -> float:
    """Total Halstead volume over the files."""
    with compiler_warnings_ignored():
        return float(sum(h_visit(code).total.volume for code in sources.values()))
