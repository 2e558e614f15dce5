"""The report's figures, drawn with matplotlib's Agg renderer into PNG bytes.

Each function takes plain data read from run folders and returns the PNG of one figure. They
use `matplotlib.figure.Figure` directly, never pyplot: no global figure state, no display,
nothing left open after a figure is drawn.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from gi.report import gap_rate

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

#: One colour per arm (or for the front's members), cycling: matplotlib's default cycle.
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
DPI = 100


def _new_figure(width: float, height: float) -> Figure:
    """A figure of its own, on the Agg canvas; matplotlib is imported only when a report is drawn."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def _whole_numbers() -> MaxNLocator:
    """Ticks at whole numbers only, for generations."""
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    return buffer.getvalue()


def _title(name: str) -> str:
    return name.replace("_", " ")


def front_matrix(
    objectives: Sequence[str],
    groups: Mapping[str, Sequence[Mapping[str, Any]]],
    original: Mapping[str, float | None],
) -> bytes:
    """A scatter matrix of the front's objective values, one panel per pair of objectives (one
    axis when there is one objective): each group of members (a run's front, or an arm's) in
    its colour, members that overfit as crosses, the original as a black star."""
    names = list(objectives)
    pairs: list[tuple[str, str | None]] = [(x, y) for index, y in enumerate(names) for x in names[:index]]
    pairs = pairs or [(names[0], None)]
    size = len(names) - 1 if len(names) > 1 else 1
    figure = _new_figure(3.2 * size + 0.6, 3.0 * size + 0.4)
    axes = figure.subplots(size, size, squeeze=False)
    for row in range(size):
        for column in range(size):
            if column > row:
                axes[row][column].set_visible(False)
    for x_name, y_name in pairs:
        ax = axes[0][0] if y_name is None else axes[names.index(y_name) - 1][names.index(x_name)]
        for index, (label, members) in enumerate(groups.items()):
            colour = COLOURS[index % len(COLOURS)]
            for overfit, marker in ((False, "o"), (True, "x")):
                chosen = [m for m in members if bool(m.get("overfits")) == overfit]
                xs = [m["objectives"].get(x_name) for m in chosen]
                ys = [m["objectives"].get(y_name) if y_name else 0.0 for m in chosen]
                if not chosen:
                    continue
                ax.scatter(
                    np.array(xs, dtype=float),
                    np.array(ys, dtype=float),
                    c=colour,
                    marker=marker,
                    s=36,
                    alpha=0.8,
                    label=f"{label}{' (overfits)' if overfit else ''}",
                )
        ax.scatter(
            [original.get(x_name)],
            [original.get(y_name) if y_name else 0.0],
            c="black",
            marker="*",
            s=160,
            label="original",
            zorder=3,
        )
        ax.set_xlabel(_title(x_name))
        if y_name:
            ax.set_ylabel(_title(y_name))
        else:
            ax.set_yticks([])
        ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    for ax in (a for line in axes for a in line if a.get_visible()):
        more_handles, more_labels = ax.get_legend_handles_labels()
        for handle, label in zip(more_handles, more_labels, strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    figure.legend(handles, labels, loc="upper right", fontsize="small", frameon=False)
    figure.suptitle("Pareto front (the star is the original)")
    return _png(figure)


def hypervolume(series: Mapping[str, Sequence[Sequence[float]]]) -> bytes:
    """Hypervolume per generation: one line per run when a label has one run, else the median
    and the interquartile band over its runs (seeds)."""
    figure = _new_figure(6.4, 3.6)
    ax = figure.subplots()
    for index, (label, runs) in enumerate(series.items()):
        colour = COLOURS[index % len(COLOURS)]
        length = max((len(run) for run in runs), default=0)
        if length == 0:
            continue
        values = np.full((len(runs), length), np.nan)
        for row, run in enumerate(runs):
            values[row, : len(run)] = run
        generations = np.arange(length)
        if len(runs) == 1:
            ax.plot(generations, values[0], color=colour, marker="o", markersize=3, label=label)
            continue
        low, median, high = np.nanpercentile(values, [25, 50, 75], axis=0)
        ax.plot(generations, median, color=colour, label=f"{label}: median of {len(runs)} runs")
        ax.fill_between(generations, low, high, color=colour, alpha=0.25, label=f"{label}: interquartile range")
    ax.set_xlabel("generation")
    ax.xaxis.set_major_locator(_whole_numbers())
    ax.set_ylabel("hypervolume")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", frameon=False)
    figure.suptitle("Hypervolume of the front per generation")
    return _png(figure)


#: The operator figure's bars: (title, function of one operator's counts).
OPERATOR_BARS = ("proposed", "valid", "passing", "in front")


def operator_bars(rows: Mapping[str, Mapping[str, float]]) -> bytes:
    """Per operator, grouped bars: edits proposed, of them valid (they made a changed program
    that parses), programs passing every training test, members on the final front."""
    names = list(rows)
    figure = _new_figure(max(6.4, 0.7 * len(names) + 2.0), 3.8)
    ax = figure.subplots()
    positions = np.arange(len(names))
    width = 0.8 / len(OPERATOR_BARS)
    for index, bar in enumerate(OPERATOR_BARS):
        heights = [operator_counts(rows[name])[bar] for name in names]
        ax.bar(positions + (index - 1.5) * width, heights, width, label=bar, color=COLOURS[index])
    ax.set_xticks(positions, [name.replace("_", "\n") for name in names], fontsize="small")
    ax.set_ylabel("count")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small", frameon=False)
    figure.suptitle("What each operator proposed and what became of it")
    return _png(figure)


def operator_counts(row: Mapping[str, float]) -> dict[str, float]:
    """An operator's accounting as the report shows it: proposed, valid, passing, in front."""
    proposed = float(row.get("proposals", 0))
    wasted = sum(float(row.get(key, 0)) for key in ("unparseable", "wrong_kind", "no_ops"))
    return {
        "proposed": proposed,
        "valid": max(proposed - wasted, 0.0),
        "passing": float(row.get("passing", 0)),
        "in front": float(row.get("front", 0)),
    }


def gap_points(entries: Sequence[Mapping[str, Any]]) -> tuple[list[int], list[float]]:
    """The points of one run's generalisation-gap line: (generation, rate) of each generation
    that checked a member; one that checked none has no rate to draw (older run folders wrote 0)."""
    points = [(int(entry["generation"]), rate) for entry in entries if (rate := gap_rate(entry)) is not None]
    return [generation for generation, _ in points], [rate for _, rate in points]


def generalisation_gap(series: Mapping[str, Sequence[Mapping[str, Any]]]) -> bytes:
    """The share of checked members that overfit, per generation, one line per run; a generation
    that checked no member has no point (`gap_points`), rather than a point at 0."""
    figure = _new_figure(6.4, 3.4)
    ax = figure.subplots()
    for index, (label, entries) in enumerate(series.items()):
        generations, rates = gap_points(entries)
        ax.plot(generations, rates, color=COLOURS[index % len(COLOURS)], marker="o", markersize=3, label=label)
    ax.set_xlabel("generation")
    ax.xaxis.set_major_locator(_whole_numbers())
    ax.set_ylabel("share overfitting")
    ax.set_ylim(-0.05, 1.05)
    ax.grid(alpha=0.3)
    if len(series) > 1:
        ax.legend(fontsize="small", frameon=False)
    figure.suptitle("Generalisation gap: held-out checks during the search")
    return _png(figure)
