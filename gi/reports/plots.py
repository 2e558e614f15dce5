"""The report's figures, drawn with matplotlib's Agg renderer into PNG bytes.

Each function takes plain data read from run folders and returns the PNG of one figure. They
use `matplotlib.figure.Figure` directly, never pyplot: no global figure state, no display,
nothing left open after a figure is drawn.
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from gi.engine.run_folder import gap_rate

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


#: Objectives drawn on a logarithmic axis: ratios, where members 100x faster and 2x faster
#: would otherwise sit together near 0.
LOG_SCALE = frozenset({"runtime"})


def constant_objectives(
    objectives: Sequence[str], groups: Mapping[str, Sequence[Mapping[str, Any]]], original: Mapping[str, float | None]
) -> list[str]:
    """The objectives the front's plot leaves out: those that take one value over every point
    it draws (every member and the original), which a scatter matrix would give a row and a
    column for nothing; when every objective is constant, the first is still drawn."""
    constant = []
    for name in objectives:
        values = {m["objectives"].get(name) for members in groups.values() for m in members} | {original.get(name)}
        if len({float(value) for value in values if value is not None}) <= 1:
            constant.append(name)
    return constant[1:] if len(constant) == len(objectives) else constant


def _plain_log_ticks(axis: Any, values: Sequence[float]) -> None:
    """Tick labels of a log axis as plain numbers (0.01, 0.5, 1), the ticks between powers of
    ten labelled only when the values span less than a power of ten (else too many)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    plain = FuncFormatter(lambda value, _: f"{value:g}")
    axis.set_major_formatter(plain)
    axis.set_minor_formatter(plain if max(values) < 10 * min(values) else NullFormatter())


def _positive(values: Sequence[float]) -> bool:
    """Whether a log axis can show these values: some, all finite and above 0."""
    return bool(values) and all(np.isfinite(value) and value > 0 for value in values)


def front_matrix(
    objectives: Sequence[str],
    groups: Mapping[str, Sequence[Mapping[str, Any]]],
    original: Mapping[str, float | None],
) -> bytes:
    """The PNG of `front_figure`."""
    return _png(front_figure(objectives, groups, original))


def front_figure(
    objectives: Sequence[str],
    groups: Mapping[str, Sequence[Mapping[str, Any]]],
    original: Mapping[str, float | None],
) -> Figure:
    """A scatter matrix of the front's objective values, one panel per pair of objectives that
    vary (one axis when one does; constant objectives are left out, `front_caption` names them):
    each group of members (a run's front, or an arm's) in its colour, members that overfit as
    crosses, the original as a black star; `runtime` on a logarithmic axis."""
    constant = constant_objectives(objectives, groups, original)
    names = [name for name in objectives if name not in constant]
    pairs: list[tuple[str, str | None]] = [(x, y) for index, y in enumerate(names) for x in names[:index]]
    pairs = pairs or [(names[0], None)]
    size = len(names) - 1 if len(names) > 1 else 1
    figure = _new_figure(3.2 * size + 0.6, 3.0 * size + 0.4)
    axes = figure.subplots(size, size, squeeze=False)
    for row in range(size):
        for column in range(size):
            if column > row:
                axes[row][column].set_visible(False)
    everything = [m for members in groups.values() for m in members]

    def values(name: str) -> list[float]:
        found = [m["objectives"].get(name) for m in everything] + [original.get(name)]
        return [float(value) for value in found if value is not None]

    def logarithmic(name: str) -> bool:
        return name in LOG_SCALE and _positive(values(name))

    def whole(name: str) -> bool:
        """Counts (tests, edits, complexity) get ticks at whole numbers only."""
        return all(value.is_integer() for value in values(name))

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
        ax.set_xlabel(_title(x_name) + (" (log scale)" if logarithmic(x_name) else ""))
        if logarithmic(x_name):
            ax.set_xscale("log")
            _plain_log_ticks(ax.xaxis, values(x_name))
        elif len(set(values(x_name))) == 1:  # one value (the original alone): one tick
            ax.set_xticks(values(x_name)[:1])
        elif whole(x_name):
            ax.xaxis.set_major_locator(_whole_numbers())
        if y_name:
            ax.set_ylabel(_title(y_name) + (" (log scale)" if logarithmic(y_name) else ""))
            if logarithmic(y_name):
                ax.set_yscale("log")
                _plain_log_ticks(ax.yaxis, values(y_name))
            elif whole(y_name):
                ax.yaxis.set_major_locator(_whole_numbers())
        else:
            ax.set_yticks([])
        ax.margins(0.1)  # no point on the frame
        ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    for ax in (a for line in axes for a in line if a.get_visible()):
        more_handles, more_labels = ax.get_legend_handles_labels()
        for handle, label in zip(more_handles, more_labels, strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    if size == 1:  # beside the one panel; in a matrix, in the empty corner above the diagonal
        figure.legend(handles, labels, loc="center left", bbox_to_anchor=(0.98, 0.5), fontsize="small", frameon=False)
    else:
        figure.legend(handles, labels, loc="upper right", fontsize="small", frameon=False)
    figure.suptitle("Pareto front (the star is the original)")
    return figure


def front_caption(constant: Sequence[str], original: Mapping[str, float | None]) -> str:
    """What the front's plot leaves out: 'Not drawn: failed tests, 0 for every member and the original.'"""
    parts = [f"{_title(name)} ({_value(original.get(name))})" for name in constant]
    return f"Not drawn, the same for every member and the original: {', '.join(parts)}."


def _value(value: float | None) -> str:
    """An objective's value for a caption: whole numbers without decimals."""
    if value is None:
        return "-"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.4g}"


def hypervolume(series: Mapping[str, Sequence[Sequence[float]]]) -> bytes:
    """Hypervolume per generation: one line per run when a label has one run, else the median
    and the interquartile band over its runs (seeds)."""
    return per_generation(series, "hypervolume", "Hypervolume of the front per generation")


def per_generation(series: Mapping[str, Sequence[Sequence[float]]], measure: str, title: str) -> bytes:
    """A measure per generation: one line per run when a label has one run, else the median and
    the interquartile band over its runs (seeds)."""
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
    ax.set_ylabel(measure)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", frameon=False)
    figure.suptitle(title)
    return _png(figure)


def grid_map(grid: Mapping[str, Any]) -> bytes:
    """The MAP-Elites grid as a heat map over its first two features (one row for one feature):
    each cell coloured by its elite's quality (the hypervolume it dominates, in originals), the
    best over the other features where there are more; empty cells blank."""
    features = list(grid["features"])
    shape = [int(feature["bins"]) for feature in features[:2]] + [1] * (2 - min(len(features), 2))
    values = np.full((shape[1], shape[0]), np.nan)
    for elite in grid["elites"]:
        cell = [int(index) for index in elite["cell"]]
        x, y = cell[0], cell[1] if len(features) > 1 else 0
        if np.isnan(values[y, x]) or elite["quality"] > values[y, x]:
            values[y, x] = float(elite["quality"])
    figure = _new_figure(min(10.0, 2.5 + 0.5 * shape[0]), min(8.0, 1.8 + 0.45 * shape[1]))
    ax = figure.subplots()
    image = ax.imshow(values, origin="lower", cmap="viridis", aspect="auto")
    figure.colorbar(image, ax=ax, label="quality (original = 1)")
    for axis, feature, count in (
        (ax.xaxis, features[0], shape[0]),
        (ax.yaxis, features[1] if len(features) > 1 else None, shape[1]),
    ):
        if feature is None:
            axis.set_ticks([])
            continue
        axis.set_ticks(range(count))
        labels = feature.get("labels") or []
        if labels:
            axis.set_ticklabels(labels, fontsize="small")
        else:
            edges = np.linspace(float(feature["low"]), float(feature["high"]), count + 1)
            axis.set_ticklabels([f"{low:g}-{high:g}" for low, high in itertools.pairwise(edges)], fontsize="x-small")
        axis.set_label_text(_title(feature["name"]))
    ax.tick_params(axis="x", labelrotation=45)
    figure.suptitle(f"Grid: QD-score {grid['qd_score']:.3g}, coverage {grid['coverage']:.0%}")
    return _png(figure)


#: The operator figure's bars: (title, function of one operator's counts).
OPERATOR_BARS = ("proposed", "valid", "passing", "in front")


def operator_bars(rows: Mapping[str, Mapping[str, float]]) -> bytes:
    """Per operator, grouped bars (`operator_counts`): edits proposed, of them valid (they
    made a program new to the population), programs passing every training test, members on
    the final front."""
    names = list(rows)
    figure = _new_figure(max(6.4, 0.7 * len(names) + 2.0), 3.8)
    ax = figure.subplots()
    positions = np.arange(len(names))
    width = 0.8 / len(OPERATOR_BARS)
    for index, bar in enumerate(OPERATOR_BARS):
        heights = [operator_counts(rows[name])[bar] for name in names]
        ax.bar(positions + (index - 1.5) * width, heights, width, label=bar, color=COLOURS[index])
    ax.set_xticks(positions, [name.replace("_", "\n") for name in names], fontsize="small")
    ax.yaxis.set_major_locator(_whole_numbers())
    ax.set_ylabel("count")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small", frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside, not on, the bars
    figure.suptitle("What each operator proposed and what became of it")
    return _png(figure)


def operator_counts(row: Mapping[str, float]) -> dict[str, float]:
    """An operator's accounting as the report shows it: proposed, valid, passing, in front.

    Valid means the same for every operator: a proposed edit that changed the program and made
    one the population did not hold, i.e. proposed less the offspring that changed nothing and
    those that repeated a program (`gi.algorithms.variation.Batch` counts each offspring once). The
    model's replies that did not parse, were the wrong kind or changed nothing never became
    proposals, so they are not subtracted again."""
    proposed = float(row.get("proposals", 0))
    wasted = float(row.get("duplicates", 0)) + float(row.get("unchanged", 0))
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
