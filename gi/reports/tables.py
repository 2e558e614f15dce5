"""The terminal's tables of a run folder (rich): the front, its edits, the operators, the
validation figures; read from summary.json, so `gi show` needs no store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    pass
from gi.engine.run_folder import ORIGINAL, gap_rate


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.4g}"


def _header(name: str) -> str:
    """A column title that wraps between words at 80 columns: `failed_tests` as `failed tests`."""
    return name.replace("_", " ")


def _tests(counts: Mapping[str, Any] | None) -> str:
    return f"{counts['passed']}/{counts['passed'] + counts['failed']}" if counts else "-"


def changed_members(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The front members that change the program: the empty patch is the original, shown once."""
    return [
        member
        for member in summary["front"]
        if member["id"] != ORIGINAL and (member["diff"] is not None or member["descriptions"])
    ]


def behaviour_cell(behaviour: Mapping[str, Any] | None) -> str:
    """A member's behaviour verdict in a table's cell: "same", "changed", "-" (not checked)."""
    if not behaviour or behaviour.get("verdict") not in ("same", "changed"):
        return "-"
    return str(behaviour["verdict"])


def describe_behaviour(behaviour: Mapping[str, Any] | None) -> str:
    """A member's behaviour verdict in a sentence: what the oracle found, on how many calls, or
    why it did not check."""
    if not behaviour:
        return "not checked"
    verdict = behaviour.get("verdict")
    if verdict == "changed":
        confirmed = behaviour.get("confirmed")
        said = "" if confirmed is None else "; pytest confirms it" if confirmed else "; pytest did not confirm it"
        return f"changed: {behaviour.get('why', '')}{said}"
    if verdict == "same":
        return f"same on every call tried: {behaviour.get('why', '')}"
    return f"not checked: {behaviour.get('why') or '-'}"


def oracle_line(summary: Mapping[str, Any]) -> str | None:
    """The oracle's figures in one line (None when it was off): the members it found to change
    behaviour, of those it checked, and the time it took of its budget."""
    oracle = summary.get("oracle")
    if not oracle:
        return None
    checked = oracle["same"] + oracle["changed"]
    recording = oracle.get("recording_seconds") or 0.0
    return (
        f"behaviour oracle: {oracle['changed']} of {checked} member{'s' if checked != 1 else ''} checked change"
        f" behaviour on inputs no test tries ({oracle['not_checked']} not checked); {oracle['seconds']:.1f} s"
        f" ({recording:.1f} s recording the training tests' calls, the checks within {oracle['budget_seconds']:g} s)"
    )


def front_table(summary: Mapping[str, Any]) -> Table:
    """The front as a table: one row per member that changes the program, the original first
    for comparison; `front_edits` spells out each member's edits and speed-up below it."""
    names = [objective["name"] for objective in summary["objectives"]]
    table = Table(title=f"Pareto front of {summary['experiment']['name']} (seed {summary['experiment']['seed']})")
    table.add_column("id", no_wrap=True)
    for name in names:
        table.add_column(_header(name), justify="right", overflow="fold")
    table.add_column("held-out", justify="right")
    # The oracle's column only where it ran (tests.oracle = "off", an older run: no column).
    judged = bool(summary.get("oracle")) or any(member.get("behaviour") for member in summary["front"])
    if judged:
        table.add_column("behaviour", justify="right")
    table.add_column("edits", justify="right")
    baseline = summary["baseline"]
    table.add_row(
        "original",
        *(_number(baseline["objectives"].get(name)) for name in names),
        _tests(baseline.get("holdout")),
        *(["-"] if judged else []),
        "0",
        style="dim",
    )
    members = changed_members(summary)
    for member in members:
        held = _tests(member.get("holdout")) + (" overfits" if member["overfits"] else "")
        held += " untested" if member.get("untested") else ""  # mutators.untested: no training test runs its edits
        table.add_row(
            member["id"],
            *(_number(member["objectives"].get(name)) for name in names),
            held,
            *([behaviour_cell(member.get("behaviour"))] if judged else []),
            str(len(member["descriptions"])),
        )
    if len(members) < len(summary["front"]):
        table.caption = "the original program is itself on the front"
    return table


def front_edits(summary: Mapping[str, Any]) -> Table:
    """Every front member's speed-up and edits, one per line beside its id, in full: long lines
    wrap, none is cut."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column()
    for member in changed_members(summary):
        lines = list(member["descriptions"])
        if member.get("speedup"):
            lines.insert(0, f"speed-up {describe_speedup(member['speedup'], short=True)}")
        if (member.get("behaviour") or {}).get("verdict") == "changed":
            lines.append(f"behaviour {describe_behaviour(member['behaviour'])}")
        for index, line in enumerate(lines):
            grid.add_row(member["id"] if index == 0 else "", Text(line))
    return grid


def front_view(summary: Mapping[str, Any]) -> Group:
    """What `gi run` and `gi show` print for a front: the table, then each member's edits."""
    return Group(front_table(summary), front_edits(summary))


def describe_speedup(speedup: Mapping[str, Any] | None, *, short: bool = False) -> str:
    """'3.1x (2.9-3.3), significant', or why there is no figure; an implausible one says so."""
    if not speedup:
        return "-"
    if speedup.get("tampered"):
        return "forged" if short else f"forged: {speedup['error']}"
    if "error" in speedup:
        return "not measured" if short else f"not measured: {speedup['error']}"
    figure = f"{speedup['value']:.3g}x ({speedup['low']:.3g}-{speedup['high']:.3g})"
    doubt = speedup.get("implausible", False)
    if short:
        return figure + ("" if speedup["significant"] else " n.s.") + (" implausible?" if doubt else "")
    verdict = "significant" if speedup["significant"] else "not significant"
    warning = "; IMPLAUSIBLE: check that the workload still does its work" if doubt else ""
    return f"{figure}, {verdict} (Mann-Whitney U p = {speedup['p_value']:.2g}){warning}"


#: The per-operator counts (summary.json keys) and their short titles, so that the table stays
#: readable at 80 columns: _TABLE_COLUMNS in the table, the others in words under it.
_OPERATOR_COLUMNS = {
    "proposals": "proposed",
    "duplicates": "repeats",
    "evaluated": "run",
    "passing": "passing",
    "front": "front",
    "seconds": "secs",
    "no_site": "tries without a site",
    "unparseable": "unparseable replies",
    "not_applied": "diffs that did not apply",
    "wrong_kind": "replies of the wrong kind",
    "tampering": "replies refused by the tamper guard",
    "unchanged": "proposed edits that changed nothing",
    "no_ops": "edits that changed nothing",
    "not_novel": "replies that were no news",
    "reviewer": "replies the reviewer refused",
    "failed_tests": "offspring whose failing tests went back to the model",
    "tokens": "tokens",
    "cost": "USD",
}
_TABLE_COLUMNS = ("proposals", "duplicates", "evaluated", "passing", "front", "seconds")


def operator_table(summary: Mapping[str, Any]) -> Group:
    """Per-operator accounting: proposals and what became of them (repeats: programs already
    seen; run: evaluated; passing: every training test; seconds spent proposing); under the
    table, what only some operators have (the model's tokens, cost and replies it could not use)."""
    table = Table(title="Operators")
    rows = summary["operators"]
    table.add_column("operator", no_wrap=True)
    for column in _TABLE_COLUMNS:
        table.add_column(_OPERATOR_COLUMNS[column], justify="right")
    notes = Text()
    for name, row in rows.items():
        table.add_row(name, *(_number(row.get(column, 0)) for column in _TABLE_COLUMNS))
        extra = [f"{_number(row[key])} {title}" for key, title in _OPERATOR_COLUMNS.items()
                 if key not in _TABLE_COLUMNS and row.get(key)]  # fmt: skip
        if extra:
            notes.append(f"{name}: {', '.join(extra)}\n")
    llm = summary.get("llm")
    if llm and llm.get("stopped"):
        notes.append(f"the language model stopped: {llm['stopped']}\n")
    notes.rstrip()
    return Group(table, notes)


#: The columns of a validation table: how many programs were checked, how many overfit (and
#: their share), how many of those the operator's edit introduced (of how many programs with no
#: overfitting parent, and that share), how many inherited their overfit from a parent.
VALIDATION_COLUMNS = ("checked", "overfit", "introduced", "inherited")


def _percent(rate: float | None) -> str:
    """A share as a percentage, \"-\" when nothing was counted."""
    return "-" if rate is None else f"{rate:.0%}"


def validation_rows(figures: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """The rows of a validation, as `gi show` and the report print them: front, every feasible
    program, the language model's edits against the classic ones, then each operator; the cells
    are VALIDATION_COLUMNS'. A validation stored by an older gi has no introduced or inherited counts ("-")."""
    rows = [("front", figures["front"])]
    if figures.get("behaviour"):
        rows.append(("front, by counterexamples", figures["behaviour"]))
    rows.append(("every feasible program", figures["feasible"]))
    rows += [(f"{name} edits", share) for name, share in figures["groups"].items() if share["checked"]]
    rows += [(f"  by {name}", share) for name, share in figures["operators"].items()]
    shown = []
    for name, share in rows:
        introduced = "-"
        if share.get("introduced") is not None:
            introduced = f"{share['introduced']} of {share['clean_parents']} ({_percent(share['introduced_rate'])})"
        inherited = "-" if share.get("inherited") is None else str(share["inherited"])
        overfit = f"{share['overfit']} ({_percent(share['rate'])})"
        shown.append((name, [str(share["checked"]), overfit, introduced, inherited]))
    return shown


def validation_baseline(figures: Mapping[str, Any]) -> str:
    """What the suite gives the original program: the baseline the figures are judged against."""
    counts = figures.get("baseline") or {}
    if not counts:
        return "the original under this suite: not recorded"
    return (
        f"the original under this suite: {counts['passed']} passed, {counts['failed']} failed,"
        f" {counts.get('skipped', 0)} skipped (it is in no rate)"
    )


def behaviour_split(figures: Mapping[str, Any]) -> str | None:
    """The front's overfitting by the suite and by the oracle's counterexamples, apart (None
    without the oracle)."""
    behaviour = figures.get("behaviour")
    if not behaviour:
        return None
    return (
        f"of the front members both judged: {behaviour['suite_only']} overfit by the suite only,"
        f" {behaviour['oracle_only']} by counterexamples only (behaviour no test checks), {behaviour['both']} by both"
    )


#: What the introduced and inherited columns count, under a validation table.
VALIDATION_LEGEND = (
    "introduced: the overfits no parent had, of the programs with no overfitting parent; inherited: a parent"
    " overfits too"
)


def gap_table(gap: Sequence[Mapping[str, Any]]) -> Table:
    """The generalisation gap as `gi show` prints it: one row per generation."""
    table = Table(title="Generalisation gap: the front's new members on the held-out tests")
    for column in ("generation", "checked", "overfit", "rate"):
        table.add_column(column, justify="right")
    for row in gap:
        table.add_row(
            str(row["generation"]),
            str(row["checked"]),
            str(row["overfit"]),
            "-" if (rate := gap_rate(row)) is None else f"{rate:.0%}",
        )
    return table


#: The language model's figures per mode and per model: (summary key, column title).
MODEL_COLUMNS = (
    ("proposals", "proposed"), ("replies", "replies"), ("parse_rate", "parsed"), ("apply_rate", "applied"),
    ("not_novel", "no news"), ("evaluated", "run"), ("pass_rate", "passing"), ("front", "front"),
    ("overfit", "overfit"), ("improvements", "improved"), ("tokens", "tokens"), ("cost", "USD"),
)  # fmt: skip


def _cell(key: str, value: Any) -> str:
    if key.endswith("_rate") or key == "overfit":
        return _percent(value)
    return _number(value)


def model_rows(summary: Mapping[str, Any]) -> tuple[list[str], list[list[str]], list[str]]:
    """The language model's accounting as a table (a row per mode, then per model) and lines
    under it: what improving cost, the first improvement, the overseer's notes. Overfit: the
    share of the mode's members on the front that pass the training tests and fail a held-out
    one. Empty when the run had no model."""
    llm = summary.get("llm")
    if not llm or not llm.get("modes"):
        return [], [], []
    judged: dict[str, list[bool]] = {}
    for member in summary.get("front", []):
        label = member["operator"].rpartition("+")[2].removeprefix("replace:")
        if label.startswith("llm.") and member.get("overfits") is not None:
            judged.setdefault(label.removeprefix("llm."), []).append(bool(member["overfits"]))
    header = ["mode or model", *(title for _, title in MODEL_COLUMNS)]
    rows = []
    for mode, counts in llm["modes"].items():
        shares = judged.get(mode)
        figures = {
            **counts,
            "tokens": counts.get("prompt_tokens", 0) + counts.get("completion_tokens", 0),
            "overfit": sum(shares) / len(shares) if shares else None,
        }
        rows.append([mode, *(_cell(key, figures.get(key)) for key, _ in MODEL_COLUMNS)])
    for model, counts in (llm.get("models") or {}).items():
        figures = {**counts, "tokens": counts.get("prompt_tokens", 0) + counts.get("completion_tokens", 0),
                   "improvements": counts.get("successes")}  # fmt: skip
        rows.append([f"model {model}", *(_cell(key, figures.get(key)) for key, _ in MODEL_COLUMNS)])
    lines = []
    if llm.get("improvements"):
        lines.append(
            f"{llm['improvements']} improvement(s) on the original: {_number(llm['tokens_per_improvement'])} tokens"
            f" and ${_number(llm['cost_per_improvement'])} each"
        )
    first = llm.get("first_improvement")
    if first:
        lines.append(
            f"the first ({first['mode']}, {first['model']}) after {first['evaluations']} evaluations,"
            f" {first['requests']} requests, {first['tokens']} tokens, ${_number(first['cost'])}"
        )
    lines += list(llm.get("notes") or [])
    return header, rows, lines


def model_table(summary: Mapping[str, Any]) -> Group | None:
    """The language model's accounting per mode and per model, for `gi show` (None without a model)."""
    _, rows, lines = model_rows(summary)
    if not rows:
        return None
    shown = [index + 1 for index, (key, _) in enumerate(MODEL_COLUMNS) if key in _TERMINAL_MODEL_COLUMNS]
    table = Table(title="Language model: per mode, then per model", box=box.SIMPLE_HEAD, show_edge=False,
                  pad_edge=False, collapse_padding=True)  # fmt: skip
    table.add_column("", no_wrap=True)
    for index in shown:
        table.add_column(_TERMINAL_MODEL_COLUMNS[MODEL_COLUMNS[index - 1][0]], justify="right")
    for row in rows:
        table.add_row(row[0], *(row[index] for index in shown))
    lines.append("asked: proposals; read: replies whose code could be read; fit: of those, the ones whose change"
                 " fitted the code; pass: of those run; better: offspring that improved on the original (for a"
                 " model: that entered the archive); more in summary.json and the report")  # fmt: skip
    return Group(table, Text("\n".join(lines)))


#: The model's columns `gi show` has room for at 80 columns.
_TERMINAL_MODEL_COLUMNS = {"proposals": "asked", "parse_rate": "read", "apply_rate": "fit", "evaluated": "run",
                           "pass_rate": "pass", "front": "front", "improvements": "better", "tokens": "tokens",
                           "cost": "USD"}  # fmt: skip


def tests_line(summary: Mapping[str, Any]) -> str | None:
    """How many training tests an evaluation ran, and what selection by coverage saved and
    confirmed (summary.json `tests`); None for a summary without it (an older gi's)."""
    tests = summary.get("tests")
    if not isinstance(tests, Mapping) or tests.get("run_per_evaluation") is None:
        return None
    ran, training = float(tests["run_per_evaluation"]), int(tests["training"])
    said = f"tests: an evaluation ran {ran:.3g} of the {training} training tests on average"
    if tests.get("select") != "coverage":
        return said + " (tests.select = 'all': every test judged every variant)"
    saved = 1 - ran / training if training else 0.0
    confirmed, overturned = int(tests.get("confirmed", 0)), int(tests.get("overturned", 0))
    return (
        f"{said}, {saved:.0%} fewer than every test (tests.select = 'coverage': those that execute a line its edits"
        f" change); {confirmed} program{'s' if confirmed != 1 else ''} ran every test before counting as passing,"
        f" {overturned} of them failing it"
    )
