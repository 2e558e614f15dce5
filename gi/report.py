"""The run folder's report: summary.json, one .diff per front member, the evaluation log; and
the tables `gi run` and `gi show` print from it.

`read_summary` and `read_diff` read a run folder back for `gi show`: a folder that is not a
run, a summary gi did not write, or a missing diff is a `StoreError` naming the file, never a
traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from rich.console import Group
from rich.table import Table
from rich.text import Text

from fitness.objectives import Objective
from fitness.tests import test_counts
from gi.describe import describe_patch
from gi.errors import StoreError
from gi.patch import Patch, apply
from gi.results import Evaluation

if TYPE_CHECKING:
    from gi.config import Config

SUMMARY_NAME = "summary.json"
LOG_NAME = "evaluations.jsonl"
PATCH_DIR = "patches"
STORE_NAME = "store.sqlite"  # the run store's file, as gi/experiment.py names it
#: The original program's one id and operator label in summary.json, the tables and the report,
#: on the front or not. The search knows it by an individual's id (`g0-i0`, the empty patch of
#: generation 0), which `baseline.individuals` keeps, so the commands take that id too.
ORIGINAL = "original"
ORIGINAL_OPERATOR = "none"


def source_hash(text: str) -> str:
    """What a run records of each editable file it read, so that `gi apply` can tell the file
    has not changed since: the SHA-256 of its text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file and rename, so a killed run never leaves half a file."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def write_report(
    folder: Path,
    *,
    config: Config,
    objectives: Sequence[Objective],
    baseline: Evaluation,
    baseline_objectives: Mapping[str, float],
    baseline_holdout: Mapping[str, str] | None,
    front: Sequence[Mapping[str, Any]],
    history: list[dict[str, Any]],
    evaluation_log: Iterable[tuple[int, str, int, dict[str, Any]]],
    evaluations: int,
    cache_hits: int,
    wall_seconds: float,
    sandbox: str,
    extra: Mapping[str, Any],
    original_ids: Collection[str] = (),
) -> dict[str, Any]:
    """Write summary.json, patches/*.diff and evaluations.jsonl; return the summary.

    `original_ids` are the ids of the search's individuals that made the original program:
    the summary calls each of them `original` (a front member, a parent), with one operator
    label, and keeps them in `baseline.individuals`."""
    patch_dir = folder / PATCH_DIR
    patch_dir.mkdir(exist_ok=True)
    for old in patch_dir.glob("*.diff"):
        old.unlink()
    aliases = set(original_ids) | {entry["member"].id for entry in front if not entry["variant"].changed_files}
    members = []
    for entry in front:
        member, variant = entry["member"], entry["variant"]
        is_original = member.id in aliases
        identifier = ORIGINAL if is_original else member.id
        diff = variant.diff()
        diff_name = None
        if diff:
            diff_name = f"{PATCH_DIR}/{identifier}.diff"
            _write_atomic(folder / diff_name, diff)
        record: dict[str, Any] = {
            "id": identifier,
            "generation": member.generation,
            "operator": ORIGINAL_OPERATOR if is_original else member.operator,
            "parents": [ORIGINAL if parent in aliases else parent for parent in member.parents],
            "edits": variant.patch.to_json(),
            "descriptions": describe_patch(variant.patch, variant.program),
            "objectives": entry["objectives"],
            "feasible": member.fitness.feasible,
            "diff": diff_name,
            "training": test_counts(entry["evaluation"].tests),
        }
        if "speedup" in entry:
            record["speedup"] = entry["speedup"]
        if "ablation" in entry:  # from `gi ablate`, kept in the run store
            record["ablation"] = entry["ablation"]
        if "minimal" in entry:  # from `gi minimize`, kept in the run store
            record["minimal"] = entry["minimal"]
            if entry["minimal_diff"]:
                _write_atomic(folder / PATCH_DIR / f"{identifier}.min.diff", entry["minimal_diff"])
        if "holdout" in entry:
            record["holdout"] = entry["holdout"]
            record["overfits"] = entry["overfits"]
        else:
            record["holdout"] = None
            record["overfits"] = None
        members.append(record)
    program = front[0]["variant"].program if front else None  # every member's is the run's program
    # The original never overfits and is on every front that minimises patch size: it is no
    # patch, so it is left out of the rate (as of every overfitting rate gi gives).
    original = apply(program, Patch()).tree_hash if program is not None else None
    judged = [
        record
        for record, entry in zip(members, front, strict=True)
        if record["overfits"] is not None and entry["variant"].tree_hash != original
    ]
    summary: dict[str, Any] = {
        "experiment": {
            "name": config.experiment.name,
            "seed": config.experiment.seed,
            "config": str(config.source),
        },
        "program": {
            "root": str(config.program_root),
            "files": list(config.program.files),
            "sources": {name: source_hash(text) for name, text in sorted(program.sources.items())} if program else {},
        },
        "objectives": [{"name": o.name, "direction": o.direction.value} for o in objectives],
        "constraint": config.objectives.constraint.value,
        "baseline": {
            "objectives": dict(baseline_objectives),
            "measures": baseline.measures,
            "training": test_counts(baseline.tests),
            "holdout": test_counts(baseline_holdout) if baseline_holdout is not None else None,
            "individuals": sorted(aliases),
        },
        "front": members,
        "evaluations": evaluations,
        "cache_hits": cache_hits,
        "wall_seconds": round(wall_seconds, 3),
        "overfitting_rate": (sum(bool(m["overfits"]) for m in judged) / len(judged)) if judged else None,
        "hypervolume": [round(float(stats["hypervolume"]), 6) for stats in history],
        "generations": history,
        **extra,
        "sandbox": sandbox,
    }
    lines = []
    for seq, individual, generation, evaluation in evaluation_log:
        lines.append(json.dumps({"seq": seq, "individual": individual, "generation": generation, **evaluation}))
    _write_atomic(folder / LOG_NAME, "\n".join(lines) + ("\n" if lines else ""))
    _write_atomic(folder / SUMMARY_NAME, json.dumps(summary, indent=2) + "\n")
    return summary


def update_summary(folder: Path, summary: Mapping[str, Any], diffs: Mapping[str, str]) -> None:
    """Rewrite summary.json after a study of the finished run (`gi minimize`), with new diffs
    (file name -> text) in patches/."""
    (folder / PATCH_DIR).mkdir(exist_ok=True)
    for name, text in diffs.items():
        _write_atomic(folder / PATCH_DIR / name, text)
    _write_atomic(folder / SUMMARY_NAME, json.dumps(summary, indent=2) + "\n")


def gap_rate(row: Mapping[str, Any]) -> float | None:
    """A generation's share of checked members that overfit (summary.json generalisation_gap),
    None when none was checked; older run folders wrote 0 for that, and read as None too."""
    if not row.get("checked") or row.get("rate") is None:
        return None
    return float(row["rate"])


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


def front_table(summary: Mapping[str, Any]) -> Table:
    """The front as a table: one row per member that changes the program, the original first
    for comparison; `front_edits` spells out each member's edits and speed-up below it."""
    names = [objective["name"] for objective in summary["objectives"]]
    table = Table(title=f"Pareto front of {summary['experiment']['name']} (seed {summary['experiment']['seed']})")
    table.add_column("id", no_wrap=True)
    for name in names:
        table.add_column(_header(name), justify="right", overflow="fold")
    table.add_column("held-out", justify="right")
    table.add_column("edits", justify="right")
    baseline = summary["baseline"]
    table.add_row(
        "original",
        *(_number(baseline["objectives"].get(name)) for name in names),
        _tests(baseline.get("holdout")),
        "0",
        style="dim",
    )
    members = changed_members(summary)
    for member in members:
        held = _tests(member.get("holdout")) + (" overfits" if member["overfits"] else "")
        table.add_row(
            member["id"],
            *(_number(member["objectives"].get(name)) for name in names),
            held,
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
    "wrong_kind": "replies of the wrong kind",
    "unchanged": "proposed edits that changed nothing",
    "no_ops": "edits that changed nothing",
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


def member_id(summary: Mapping[str, Any], typed: str) -> str:
    """The summary's id for an id a user typed: `original` for any id the search gave the
    original program (`g0-i0`, from `baseline.individuals`), else the id as typed."""
    return ORIGINAL if typed in (summary["baseline"].get("individuals") or ()) else typed


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
    rows = [("front", figures["front"]), ("every feasible program", figures["feasible"])]
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


#: What the introduced and inherited columns count, under a validation table.
VALIDATION_LEGEND = (
    "introduced: the overfits no parent had, of the programs with no overfitting parent; inherited: a parent"
    " overfits too"
)


def find_member(summary: Mapping[str, Any], typed: str) -> dict[str, Any] | None:
    """A front member by id (or by the search's id of the original); `original` is the original
    program, whether or not it is on the front."""
    wanted = member_id(summary, typed)
    for member in summary["front"]:
        if member["id"] == wanted:
            return dict(member)
    if wanted == ORIGINAL:
        baseline = summary["baseline"]
        return {
            "id": ORIGINAL,
            "generation": 0,
            "operator": ORIGINAL_OPERATOR,
            "parents": [],
            "edits": [],
            "descriptions": [],
            "objectives": dict(baseline["objectives"]),
            "diff": None,
            "training": baseline.get("training"),
            "holdout": baseline.get("holdout"),
            "overfits": False if baseline.get("holdout") else None,
        }
    return None


# --- reading a run folder back ----------------------------------------------------------------


class _Shape(BaseModel):
    """The parts of summary.json that `gi show` reads, checked before any is used. Strict (a
    number must be a JSON number), and other keys are allowed: the summary holds far more."""

    model_config = ConfigDict(strict=True, extra="allow")


class _Tests(_Shape):
    passed: int
    failed: int


class _SpeedUp(_Shape):
    """Either the figures, or why there are none."""

    value: float | None = None
    low: float | None = None
    high: float | None = None
    p_value: float | None = None
    significant: bool | None = None
    error: str | None = None

    @model_validator(mode="after")
    def _figures_or_error(self) -> _SpeedUp:
        figures = (self.value, self.low, self.high, self.p_value, self.significant)
        if self.error is None and any(figure is None for figure in figures):
            raise ValueError("a speed-up has value, low, high, p_value and significant, or an error")
        return self


class _Minimal(_Shape):
    edits: list[Any]
    descriptions: list[str]
    diff: str | None


class _Ablated(_Shape):
    edit: int
    description: str
    contribution: dict[str, float]
    feasible_without: bool
    holdout_causes: list[str] | None = None
    holdout_alone: list[str] | None = None


class _Member(_Shape):
    id: str
    generation: int
    operator: str
    objectives: dict[str, float | None]
    descriptions: list[str]
    diff: str | None
    training: _Tests
    holdout: _Tests | None
    overfits: bool | None
    speedup: _SpeedUp | None = None
    minimal: _Minimal | None = None
    ablation: list[_Ablated] | None = None


class _Experiment(_Shape):
    name: str
    seed: int


class _ObjectiveName(_Shape):
    name: str


class _Baseline(_Shape):
    objectives: dict[str, float | None]
    training: _Tests | None = None
    holdout: _Tests | None = None
    individuals: list[str] | None = None


class _LLM(_Shape):
    stopped: str | None = None


class _GapRow(_Shape):
    generation: int
    checked: int
    overfit: int
    rate: float | None


class _Share(_Shape):
    checked: int
    overfit: int
    rate: float | None
    introduced: int | None = None
    inherited: int | None = None
    clean_parents: int | None = None
    introduced_rate: float | None = None


class _Validation(_Shape):
    tests: list[str]
    baseline: _Tests | None = None
    front: _Share
    feasible: _Share
    groups: dict[str, _Share]
    operators: dict[str, _Share]


class _Summary(_Shape):
    experiment: _Experiment
    objectives: list[_ObjectiveName]
    baseline: _Baseline
    front: list[_Member]
    operators: dict[str, dict[str, float | None]] | None = None
    llm: _LLM | None = None
    generalisation_gap: list[_GapRow] | None = None
    validation: _Validation | None = None


#: Union members appear in pydantic's error locations by class name; a key path leaves them out.
_SHAPE_NAMES = {
    cls.__name__
    for cls in (
        _Tests,
        _SpeedUp,
        _Minimal,
        _Ablated,
        _Member,
        _Experiment,
        _ObjectiveName,
        _Baseline,
        _LLM,
        _GapRow,
        _Share,
        _Validation,
        _Summary,
    )
}


def _shape_problem(error: ValidationError) -> str:
    """What is wrong, by dotted key: every missing key when only keys are missing, else the
    first problem and how many more there are."""
    problems = error.errors()

    def key(problem: Any) -> str:
        return ".".join(str(part) for part in problem["loc"] if str(part) not in _SHAPE_NAMES)

    if all(problem["type"] == "missing" for problem in problems):
        keys = ", ".join(repr(key(problem)) for problem in problems)
        return f"missing key{'s' if len(problems) > 1 else ''} {keys}"
    first = problems[0]
    if first["type"] == "missing":
        text = f"missing key {key(first)!r}"
    elif not key(first):
        text = "it is not a JSON object"
    else:
        message = first["msg"].removeprefix("Value error, ")
        text = f"{key(first)}: {message[0].lower()}{message[1:]}"
    more = len(problems) - 1
    return text + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")


def _rewrite_hint(folder: Path, what: str) -> str:
    """How to get a lost or damaged report back: a finished run run again rewrites it."""
    if not (folder / STORE_NAME).is_file():
        return ""
    return f"; running `gi run` on its config again rewrites {what} from {STORE_NAME}"


def read_summary(folder: Path) -> dict[str, Any]:
    """Read a run folder's summary.json and check it has what `gi show` prints."""
    path = folder / SUMMARY_NAME
    if not folder.exists():
        raise StoreError(f"{folder}: no such run folder")
    if not folder.is_dir():
        hint = f"; give the folder that holds it: gi show {folder.parent}" if folder.name == SUMMARY_NAME else ""
        raise StoreError(f"{folder}: a file, not a run folder{hint}")
    rewrite = _rewrite_hint(folder, SUMMARY_NAME)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StoreError(f"{folder}: no summary.json here; is it a run folder (see `gi run`)?") from None
    except UnicodeDecodeError as error:
        raise StoreError(f"{path}: not UTF-8 text (byte {error.start}), so not a summary gi wrote{rewrite}") from None
    except OSError as error:
        raise StoreError(f"{path}: cannot read it ({error.strerror or error})") from None
    try:
        summary = json.loads(text)
    except json.JSONDecodeError as error:
        raise StoreError(f"{path}: corrupt summary ({error}){rewrite}") from None
    except RecursionError:
        raise StoreError(f"{path}: corrupt summary (nested too deeply){rewrite}") from None
    try:
        _Summary.model_validate(summary)
    except ValidationError as error:
        raise StoreError(f"{path}: not a summary gi wrote: {_shape_problem(error)}{rewrite}") from None
    checked: dict[str, Any] = summary
    return checked


def read_diff(folder: Path, member: Mapping[str, Any]) -> str | None:
    """A front member's diff from the run folder's patches/, or None for the original program."""
    if member["diff"] is None:
        return None
    name = Path(member["diff"])
    if name.is_absolute() or ".." in name.parts:  # show only files of the run folder
        raise StoreError(f"{folder / SUMMARY_NAME}: member {member['id']}: diff {str(name)!r} is not in {PATCH_DIR}/")
    path = folder / name
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        rewrite = _rewrite_hint(folder, f"{PATCH_DIR}/")
        raise StoreError(
            f"{path}: missing; member {member['id']}'s diff is gone from the run folder{rewrite}"
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise StoreError(f"{path}: cannot read member {member['id']}'s diff ({error})") from None
