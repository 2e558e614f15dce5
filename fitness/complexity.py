"""The complexity measures, from radon: cyclomatic complexity, maintainability, Halstead volume."""

from __future__ import annotations

from collections.abc import Mapping

from radon.metrics import h_visit, mi_visit
from radon.visitors import ComplexityVisitor


def cyclomatic(sources: Mapping[str, str]) -> float:
    """Total cyclomatic complexity (radon's `total_complexity`) summed over the files."""
    return float(sum(ComplexityVisitor.from_code(code).total_complexity for code in sources.values()))


def maintainability(sources: Mapping[str, str]) -> float:
    """Mean maintainability index (0 to 100, higher is better) over the files."""
    if not sources:
        return 100.0
    return float(sum(mi_visit(code, multi=True) for code in sources.values())) / len(sources)


def halstead_volume(sources: Mapping[str, str]) -> float:
    """Total Halstead volume over the files."""
    return float(sum(h_visit(code).total.volume for code in sources.values()))
