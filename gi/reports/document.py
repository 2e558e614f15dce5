"""`gi report`: report.html and report.md for a run folder or an experiment folder.

report.html is one self-contained file: its plots are PNGs inlined as data: URIs and its style
sheet is inline, so it opens with no network, as coverage.py's HTML report does. report.md
says the same in Markdown, with the plots as files in `report-images/` beside it. Everything
comes from the run folders (summary.json, the stored config), so a report can be written again
at any time; `gi run` writes one at the end of every run.
"""

from __future__ import annotations

import base64
import html
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gi.engine.run_folder import SUMMARY_NAME, gap_rate, read_diff, read_summary
from gi.reports import plots
from gi.reports.compare import compare, read_run, run_folders
from gi.reports.inert import markdown_block, markdown_code, markdown_text
from gi.reports.tables import (
    VALIDATION_COLUMNS,
    behaviour_cell,
    behaviour_split,
    changed_members,
    describe_behaviour,
    describe_speedup,
    model_rows,
    oracle_line,
    tests_line,
    validation_baseline,
    validation_rows,
)

HTML_NAME = "report.html"
MARKDOWN_NAME = "report.md"
IMAGE_DIR = "report-images"

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.5rem; text-align: right; }
th:first-child, td:first-child { text-align: left; }
pre { background: #f6f6f6; padding: 0.6rem; overflow-x: auto; font-size: 0.85rem; }
img { max-width: 100%; }
.note { color: #666; }
"""


@dataclass
class _Document:
    """One report built once into two forms: HTML (images inline) and Markdown (image files)."""

    title: str
    html: list[str] = field(default_factory=list)
    markdown: list[str] = field(default_factory=list)
    images: dict[str, bytes] = field(default_factory=dict)

    # Markdown is written from text a variant or a model may have made: every piece goes
    # through gi.reports.inert, so none of it becomes HTML, a link, an image or a terminal's
    # escape sequence.

    def heading(self, text: str, level: int = 2) -> None:
        self.html.append(f"<h{level}>{html.escape(text)}</h{level}>")
        self.markdown.append(f"{'#' * level} {markdown_text(text)}\n")

    def paragraph(self, text: str, *, note: bool = False) -> None:
        attributes = ' class="note"' if note else ""
        self.html.append(f"<p{attributes}>{html.escape(text)}</p>")
        self.markdown.append(f"{'*' + markdown_text(text) + '*' if note else markdown_text(text)}\n")

    def items(self, lines: Sequence[str]) -> None:
        if not lines:
            return
        self.html.append("<ul>" + "".join(f"<li><code>{html.escape(line)}</code></li>" for line in lines) + "</ul>")
        self.markdown.append("\n".join(f"- {markdown_code(line)}" for line in lines) + "\n")

    def table(self, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        head = "".join(f"<th>{html.escape(cell)}</th>" for cell in header)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows)
        self.html.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")

        def cells(row: Sequence[str]) -> str:
            return "| " + " | ".join(markdown_text(cell).replace("\n", " ") for cell in row) + " |"

        self.markdown.append("\n".join([cells(header), "| " + " | ".join("---" for _ in header) + " |",
                                        *(cells(row) for row in rows)]) + "\n")  # fmt: skip

    def image(self, name: str, png: bytes, alt: str) -> None:
        self.images[name] = png
        data = base64.b64encode(png).decode("ascii")
        self.html.append(f'<p><img src="data:image/png;base64,{data}" alt="{html.escape(alt)}"></p>')
        self.markdown.append(f"![{markdown_text(alt)}]({IMAGE_DIR}/{name})\n")

    def code(self, text: str, language: str = "diff") -> None:
        self.html.append(f"<pre><code>{html.escape(text)}</code></pre>")
        self.markdown.append(markdown_block(text, language) + "\n")

    def render_html(self) -> str:
        return (
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>{html.escape(self.title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(self.html)
            + "\n</body>\n</html>\n"
        )

    def render_markdown(self) -> str:
        return "\n".join(self.markdown)


@dataclass(frozen=True)
class ReportFiles:
    html: Path
    markdown: Path
    images: tuple[Path, ...]


def _number(value: Any) -> str:
    if value is None:
        return "-"
    number = float(value)
    return f"{number:.0f}" if number.is_integer() else f"{number:.4g}"


def _percent(rate: float | None) -> str:
    """A share as a percentage, "-" when nothing was counted."""
    return "-" if rate is None else f"{rate:.0%}"


def _tests(counts: Mapping[str, Any] | None) -> str:
    return f"{counts['passed']}/{counts['passed'] + counts['failed']}" if counts else "-"


def _verdict(member: Mapping[str, Any]) -> str:
    if member.get("holdout") is None:
        return "not checked (no held-out tests)"
    held = _tests(member["holdout"])
    if member["overfits"]:
        failing = ", ".join(member["holdout"].get("regressions") or member["holdout"].get("failing") or [])
        return f"overfits: {held} held-out tests pass" + (f"; fails {failing}" if failing else "")
    return f"generalises: {held} held-out tests pass"


def _objective_names(summary: Mapping[str, Any]) -> list[str]:
    return [objective["name"] for objective in summary["objectives"]]


def _front_section(
    doc: _Document, groups: Mapping[str, Sequence[Mapping[str, Any]]], summary: Mapping[str, Any]
) -> None:
    names = _objective_names(summary)
    doc.heading("Pareto front")
    original = summary["baseline"]["objectives"]
    doc.image("front.png", plots.front_matrix(names, groups, original), "the Pareto front")
    constant = plots.constant_objectives(names, groups, original)
    if constant:
        doc.paragraph(plots.front_caption(constant, original), note=True)
    timed = any(member.get("speedup") for members in groups.values() for member in members)
    header = ["member", *names, *(["speed-up (95% CI)"] if timed else []), "held-out", "behaviour", "edits"]
    rows = [["original", *(_number(summary["baseline"]["objectives"].get(n)) for n in names),
             *(["1"] if timed else []), _tests(summary["baseline"].get("holdout")), "-", "0"]]  # fmt: skip
    for label, members in groups.items():
        for member in members:
            rows.append(
                [
                    f"{label} {member['id']}" if len(groups) > 1 else member["id"],
                    *(_number(member["objectives"].get(n)) for n in names),
                    *([describe_speedup(member.get("speedup"), short=True)] if timed else []),
                    _tests(member.get("holdout")) + (" overfits" if member.get("overfits") else ""),
                    behaviour_cell(member.get("behaviour")),
                    str(len(member["descriptions"])),
                ]
            )
    doc.table(header, rows)


def _operator_section(doc: _Document, rows: Mapping[str, Mapping[str, float]], stopped: str | None) -> None:
    doc.heading("Operators")
    if not rows:
        doc.paragraph("No operator accounting was recorded.", note=True)
        return
    doc.image("operators.png", plots.operator_bars(rows), "per-operator statistics")
    header = ["operator", *plots.OPERATOR_BARS, "tokens", "cost (USD)", "seconds proposing"]
    table = []
    for name, row in rows.items():
        counts = plots.operator_counts(row)
        table.append([name, *(_number(counts[bar]) for bar in plots.OPERATOR_BARS), _number(row.get("tokens", 0)),
                      _number(row.get("cost", 0)), _number(row.get("seconds", 0))])  # fmt: skip
    doc.table(header, table)
    doc.paragraph(
        "Valid: the proposed edits that changed the program into one the population did not hold (proposed,"
        " less the edits that changed nothing and those that repeated a program), for every operator alike.",
        note=True,
    )
    model = {name: row for name, row in rows.items() if row.get("tokens") or name.split(".")[0] == "llm"}
    if model:
        sides = {"language model": model, "classic": {n: r for n, r in rows.items() if n not in model}}
        summed = []
        for side, chosen in sides.items():
            totals = {
                bar: sum(plots.operator_counts(row)[bar] for row in chosen.values()) for bar in plots.OPERATOR_BARS
            }
            tokens = sum(float(row.get("tokens", 0)) for row in chosen.values())
            cost = sum(float(row.get("cost", 0)) for row in chosen.values())
            summed.append(
                [side, *(_number(totals[bar]) for bar in plots.OPERATOR_BARS), _number(tokens), _number(cost)]
            )
        doc.paragraph("The language model's edits against the classic operators':")
        doc.table(["operators", *plots.OPERATOR_BARS, "tokens", "cost (USD)"], summed)
    if stopped:
        doc.paragraph(f"The language model stopped: {stopped}.", note=True)


def _plausible_section(doc: _Document, plausible: Sequence[Mapping[str, Any]]) -> None:
    """A repair's plausible patches in the order gi ranks them against overfitting."""
    if not plausible:
        return
    doc.heading("Plausible patches, least change first")
    rows = [
        [
            str(place),
            str(entry["id"]),
            "; ".join(entry["edits"]),
            ", ".join(entry["anti_patterns"]) or "-",
            str(entry["diff_lines"]),
            str(entry.get("tokens", "-")),
            f"{entry.get('suspiciousness', 0.0):.3g}",
            _tests(entry.get("holdout")) if entry.get("holdout") else "-",
            behaviour_cell(entry.get("behaviour")),
        ]
        for place, entry in enumerate(plausible, start=1)
    ]
    doc.table(
        ["rank", "id", "edits", "anti-patterns", "diff lines", "tokens", "suspiciousness", "held-out", "behaviour"],
        rows,
    )
    doc.paragraph(
        "Every program found that passes every training test, ranked by Tan et al.'s anti-patterns (deleted"
        " statements, exits, control or updates, emptied blocks, early exits, trivial conditions), then the smallest"
        " diff, the fewest edits, the fewest tokens changed, the most suspicious line edited (fault localisation) and"
        " the first found; the first is the repair gi presents.",
        note=True,
    )


def _shares_section(doc: _Document, history: Sequence[Mapping[str, Any]]) -> None:
    """Adaptive operator selection: each generation's likeliest operators."""
    rows = []
    for stats in history:
        shares = stats.get("operator_shares")
        if shares:
            top = sorted(shares.items(), key=lambda item: -item[1])[:4]
            rows.append([str(stats.get("generation")), ", ".join(f"{name} {share:.0%}" for name, share in top)])
    if not rows:
        return
    doc.heading("Operator shares")
    doc.table(["generation", "likeliest operators after it"], rows)
    doc.paragraph(
        "Adaptive operator selection: each operator's chance to make the next edit, from its recent successes"
        " (offspring that entered the archive or dominate a parent); summary.json holds every operator's.",
        note=True,
    )


def _gap_section(doc: _Document, series: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
    doc.heading("Generalisation gap")
    recorded = {label: entries for label, entries in series.items() if entries}
    if not recorded:
        doc.paragraph(
            "Not recorded: the summary holds no held-out checks made during the search (generalisation_gap).",
            note=True,
        )
        return
    doc.image("generalisation-gap.png", plots.generalisation_gap(recorded), "the generalisation gap per generation")
    rows = [
        [label, str(entry["generation"]), str(entry["checked"]), str(entry["overfit"]), _percent(gap_rate(entry))]
        for label, entries in recorded.items()
        for entry in entries
    ]
    doc.table(["run", "generation", "checked", "overfit", "rate"], rows)


def _validation_section(doc: _Document, figures: Mapping[str, Any]) -> None:
    """`gi validate`'s figures: the overfitting rate of the front, of every feasible program the
    search made, of the language model's edits against the classic ones, and per operator, with
    the overfits each introduced (no parent overfits) apart from those it inherited."""
    doc.heading("Revalidation")
    doc.paragraph(f"Overfitting under {', '.join(figures['tests'])} (gi validate): {validation_baseline(figures)}.")
    doc.table(["programs", *VALIDATION_COLUMNS], [[name.strip(), *cells] for name, cells in validation_rows(figures)])
    if (split := behaviour_split(figures)) is not None:
        doc.paragraph(split[0].upper() + split[1:] + ".")
    doc.paragraph(
        "overfit: the programs that keep every training test the original passes and fail a test of this suite"
        " it passes (the share of those checked); introduced: of those, the ones no parent of which overfits,"
        " out of the programs with no overfitting parent (the edit made the overfit; the language model and"
        " the classic operators are compared on this share); inherited: a parent overfits already. By"
        " counterexamples: the front members the behaviour oracle checked, and those it found a call of a changed"
        " function on which they do otherwise than the original.",
        note=True,
    )


def _members_section(doc: _Document, folder: Path, summary: Mapping[str, Any], label: str = "") -> None:
    names = _objective_names(summary)
    for member in changed_members(summary):
        doc.heading(f"{label}{member['id']} (generation {member['generation']}, by {member['operator']})", 3)
        doc.table(
            ["objective", "original", member["id"]],
            [
                [n, _number(summary["baseline"]["objectives"].get(n)), _number(member["objectives"].get(n))]
                for n in names
            ],
        )
        if member.get("speedup"):
            doc.paragraph(f"Speed-up, rigorous re-measurement (95% CI): {describe_speedup(member['speedup'])}.")
        doc.paragraph(f"Held-out tests: {_verdict(member)}.")
        if member.get("behaviour"):
            doc.paragraph(f"Behaviour on inputs no test tries (the oracle): {describe_behaviour(member['behaviour'])}.")
            if member["behaviour"].get("counterexample"):
                doc.code(member["behaviour"]["counterexample"])
        doc.items(member["descriptions"])
        diff = read_diff(folder, member)
        if diff:
            doc.code(diff)


def _hypervolume_section(doc: _Document, series: Mapping[str, Sequence[Sequence[float]]], several: bool) -> None:
    doc.heading("Hypervolume")
    if not any(run for runs in series.values() for run in runs):
        doc.paragraph("No generation was recorded.", note=True)
        return
    doc.image("hypervolume.png", plots.hypervolume(series), "hypervolume per generation")
    doc.paragraph(
        "Each run's hypervolume on its reference point (from the original's objectives)"
        + ("; the band is the interquartile range over seeds." if several else "."),
        note=True,
    )


def _diversity_section(
    doc: _Document, grid: Mapping[str, Any] | None, series: Mapping[str, Sequence[Sequence[float]]]
) -> None:
    """The MAP-Elites grid of a run (its heat map), and QD-score per generation."""
    if grid is None and not any(run for runs in series.values() for run in runs):
        return
    doc.heading("Quality diversity")
    if grid is not None:
        names = ", ".join(feature["name"] for feature in grid["features"])
        doc.paragraph(
            f"QD-score {_number(grid['qd_score'])}, coverage {grid['coverage']:.0%} ({grid['filled']} of"
            f" {grid['cells']} cells) over {names}."
        )
        if grid["elites"]:
            doc.image("grid.png", plots.grid_map(grid), "the grid's cells by quality")
    if any(len(run) > 1 for runs in series.values() for run in runs):
        doc.image("qd_score.png", plots.per_generation(series, "QD-score", "QD-score per generation"),
                  "QD-score per generation")  # fmt: skip
    doc.paragraph(
        "A cell's quality is the hypervolume its best program dominates on its own, in units of the original's;"
        " the QD-score adds them up over the filled cells, coverage is the share of cells filled.",
        note=True,
    )


def _run_document(folder: Path) -> _Document:
    summary = read_summary(folder)
    experiment = summary["experiment"]
    doc = _Document(f"gi report: {experiment['name']} seed {experiment['seed']}")
    doc.heading(doc.title, 1)
    rate = summary.get("overfitting_rate")
    doc.paragraph(
        f"{summary.get('evaluations', '-')} evaluations, {summary.get('cache_hits', '-')} cache hits, "
        f"{_number(summary.get('wall_seconds'))} s; overfitting rate {'-' if rate is None else f'{rate:.0%}'}; "
        f"sandbox: {summary.get('sandbox', '-')}."
    )
    if (tests := tests_line(summary)) is not None:
        doc.paragraph(tests[0].upper() + tests[1:] + ".")
    stopped = summary.get("stopped") or {}
    if stopped.get("reason"):
        doc.paragraph(
            f"The search stopped ({stopped['reason']}) after generation {stopped.get('generation')},"
            f" {stopped.get('evaluations')} programs evaluated."
        )
    for warning in summary.get("warnings") or []:
        doc.paragraph(f"Warning: {warning}", note=True)
    if (line := oracle_line(summary)) is not None:
        doc.paragraph(line[0].upper() + line[1:] + ".")
    _front_section(doc, {"front members": changed_members(summary)}, summary)
    for rider in summary.get("riders") or []:
        doc.paragraph(
            f"Left off the front: {rider['id']} ({'; '.join(rider['edits'])}) is not significantly faster than"
            f" {rider['no_better_than']}, whose patch is part of its own, timed side by side, nor better otherwise.",
            note=True,
        )
    _plausible_section(doc, summary.get("plausible") or [])
    _hypervolume_section(doc, {experiment["name"]: [summary.get("hypervolume") or []]}, several=False)
    scores = [float(stats["qd_score"]) for stats in summary.get("generations") or [] if "qd_score" in stats]
    _diversity_section(doc, summary.get("quality_diversity"), {experiment["name"]: [scores]})
    _operator_section(doc, summary.get("operators") or {}, (summary.get("llm") or {}).get("stopped"))
    header, rows, lines = model_rows(summary)
    if rows:
        doc.heading("Language model", level=3)
        doc.table(header, rows)
        for line in lines:
            doc.paragraph(line[0].upper() + line[1:] + ".")
        doc.paragraph(
            "Per mode, then per model: proposals, replies, the share of replies whose code could be read (parsed) and"
            " of those whose change fitted the code (applied), replies that were no news, offspring run and passing"
            " every training test, members on the front and the share of those that fail a held-out test (overfit),"
            " offspring that improved on the original (for a model: that entered the archive), tokens and money.",
            note=True,
        )
    _shares_section(doc, summary.get("generations") or [])
    _gap_section(doc, {experiment["name"]: summary.get("generalisation_gap") or []})
    if summary.get("validation"):
        _validation_section(doc, summary["validation"])
    doc.heading("Front members")
    if not changed_members(summary):
        doc.paragraph("The front holds only the original program.", note=True)
    _members_section(doc, folder, summary)
    return doc


def _experiment_document(folder: Path) -> _Document:
    runs = [read_run(path) for path in run_folders([folder])]
    first = runs[0].summary
    doc = _Document(f"gi report: experiment {folder.name}")
    doc.heading(doc.title, 1)
    doc.paragraph(f"{len(runs)} runs: " + ", ".join(f"{run.arm} seed {run.seed}" for run in runs) + ".")
    result = compare([folder])

    def spread(entry: Mapping[str, Any]) -> str:
        if entry["median"] is None:
            return "-"
        return f"{_number(entry['median'])} [{_number(entry['q1'])}-{_number(entry['q3'])}]"

    doc.table(
        ["measure", *(f"{arm} ({len(data['seeds'])} seeds)" for arm, data in result["arms"].items())],
        [
            [f"{m['name']} ({'higher' if m['larger_is_better'] else 'lower'} is better)"]
            + [spread(data[m["name"]]) for data in result["arms"].values()]
            for m in result["measures"]
        ],
    )
    doc.paragraph(
        "Per arm: median [first quartile-third quartile] over seeds; `gi compare` tests the pairs.", note=True
    )
    groups: dict[str, list[dict[str, Any]]] = {}
    hypervolumes: dict[str, list[list[float]]] = {}
    scores: dict[str, list[list[float]]] = {}
    operators: dict[str, dict[str, float]] = {}
    gaps: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault(run.arm, []).extend(
            {**member, "id": f"seed{run.seed} {member['id']}"} for member in changed_members(run.summary)
        )
        hypervolumes.setdefault(run.arm, []).append(list(run.summary.get("hypervolume") or []))
        history = run.summary.get("generations") or []
        scores.setdefault(run.arm, []).append([float(stats["qd_score"]) for stats in history if "qd_score" in stats])
        for name, row in (run.summary.get("operators") or {}).items():
            total = operators.setdefault(name, {})
            for key, value in row.items():
                total[key] = total.get(key, 0.0) + float(value or 0)
        gaps[f"{run.arm} seed {run.seed}"] = list(run.summary.get("generalisation_gap") or [])
    _front_section(doc, groups, first)
    _hypervolume_section(doc, hypervolumes, several=any(len(v) > 1 for v in hypervolumes.values()))
    _diversity_section(doc, None, scores)
    _operator_section(doc, operators, None)
    doc.paragraph("The operators' counts are summed over the runs.", note=True)
    _gap_section(doc, gaps)
    doc.heading("Front members")
    for run in runs:
        _members_section(doc, run.folder, run.summary, f"{run.arm} seed {run.seed}: ")
    return doc


def write_report_files(folder: Path) -> ReportFiles:
    """Write report.html, report.md and its images for a run folder or an experiment folder."""
    doc = _run_document(folder) if (folder / SUMMARY_NAME).is_file() else _experiment_document(folder)
    images = folder / IMAGE_DIR
    images.mkdir(exist_ok=True)
    for old in images.glob("*.png"):  # a plot an earlier report drew and this one has not
        if old.name not in doc.images:
            old.unlink()
    written = []
    for name, png in doc.images.items():
        _write(images / name, png)
        written.append(images / name)
    _write(folder / HTML_NAME, doc.render_html().encode("utf-8"))
    _write(folder / MARKDOWN_NAME, doc.render_markdown().encode("utf-8"))
    return ReportFiles(folder / HTML_NAME, folder / MARKDOWN_NAME, tuple(written))


def _write(path: Path, data: bytes) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def write_report_or_warn(folder: Path) -> str | None:
    """Write the report at the end of a run; a failure to draw is a warning line, never an error
    of the run (whose summary and diffs are already written)."""
    try:
        write_report_files(folder)
    except Exception as error:  # anything matplotlib or a damaged folder raises
        problem = f"{type(error).__name__}: {error}"
        return f"{folder / HTML_NAME}: the report could not be written ({problem}); `gi report {folder}` tries again"
    return None
