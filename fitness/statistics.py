"""Statistics shared by the run's verdicts and the comparison of runs."""

from __future__ import annotations

from collections.abc import Sequence


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values (controls the family-wise error
    rate): the i-th smallest is multiplied by (m - i), kept monotone, capped at 1.

    Neither scipy (it has Benjamini-Hochberg and -Yekutieli only) nor any other package in
    the environment offers Holm, hence these few lines.
    """
    m = len(p_values)
    adjusted = [1.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted
