"""The front's scatter matrix: objectives that are the same for every member and the original
get no row or column (the report's caption under it names them: test_daily checks it), and
runtime ratios are on a logarithmic axis."""

from __future__ import annotations

from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg

from gi.reports.plots import constant_objectives, front_caption, front_figure, front_matrix


def member(**objectives: float) -> dict[str, Any]:
    return {"objectives": objectives, "overfits": False}


def panels(figure: Any) -> list[Any]:
    return [ax for ax in figure.axes if ax.get_visible()]


def test_a_constant_objective_gets_no_row_or_column_and_a_caption() -> None:
    names = ["failed_tests", "complexity", "size"]
    front = {"front": [member(failed_tests=0, complexity=10, size=2), member(failed_tests=0, complexity=11, size=1)]}
    original = {"failed_tests": 0, "complexity": 12, "size": 0}
    assert constant_objectives(names, front, original) == ["failed_tests"]
    figure = front_figure(names, front, original)
    (ax,) = panels(figure)  # complexity against size: one panel, not a 2 x 2 matrix
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("complexity", "size")
    assert front_caption(["failed_tests"], original) == (
        "Not drawn, the same for every member and the original: failed tests (0)."
    )

    varied = {"front": [*front["front"], member(failed_tests=1, complexity=9, size=1)]}
    assert constant_objectives(names, varied, original) == []
    assert len(panels(front_figure(names, varied, original))) == 3, "every pair when every objective varies"


def test_the_original_alone_still_draws_one_axis() -> None:
    names = ["failed_tests", "size"]
    original = {"failed_tests": 0, "size": 0}
    assert constant_objectives(names, {"front": []}, original) == ["size"]
    (ax,) = panels(front_figure(names, {"front": []}, original))
    assert ax.get_xlabel() == "failed tests"
    assert front_matrix(names, {"front": []}, original).startswith(b"\x89PNG")


def test_runtime_is_on_a_logarithmic_axis() -> None:
    names = ["failed_tests", "runtime", "size"]
    front = {"front": [member(failed_tests=0, runtime=0.008, size=1), member(failed_tests=0, runtime=0.5, size=2)]}
    original = {"failed_tests": 0, "runtime": 1.0, "size": 0}
    figure = front_figure(names, front, original)
    (ax,) = panels(figure)
    assert (ax.get_xlabel(), ax.get_xscale()) == ("runtime (log scale)", "log")
    assert (ax.get_ylabel(), ax.get_yscale()) == ("size", "linear")
    FigureCanvasAgg(figure).draw()
    labels = [label.get_text() for label in ax.get_xticklabels() if label.get_text()]
    assert "0.01" in labels and "1" in labels and all(set(label) <= set("0123456789.") for label in labels), labels
    # Each arm of an experiment in its colour, runtime on the y axis against failed tests.
    arms = {"a": [member(failed_tests=1, runtime=0.01, size=1)], "b": [member(failed_tests=0, runtime=2.0, size=1)]}
    figure = front_figure(names, arms, original)
    by_label = {(ax.get_xlabel(), ax.get_ylabel()): ax for ax in panels(figure)}
    assert by_label[("failed tests", "runtime (log scale)")].get_yscale() == "log"
    assert by_label[("failed tests", "size")].get_yscale() == "linear"
