"""The run folder: its file names, summary.json read back and rewritten by the studies.

`read_summary` and `read_diff` read a run folder back for `gi show`: a folder that is not a
run, a summary gi did not write, or a missing diff is a `StoreError` naming the file, never a
traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from gi.model.errors import StoreError

if TYPE_CHECKING:
    pass


SUMMARY_NAME = "summary.json"
LOG_NAME = "evaluations.jsonl"
PATCH_DIR = "patches"
STORE_NAME = "store.sqlite"  # the run store's file, as gi/run/experiment.py names it
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


def member_id(summary: Mapping[str, Any], typed: str) -> str:
    """The summary's id for an id a user typed: `original` for any id the search gave the
    original program (`g0-i0`, from `baseline.individuals`), else the id as typed."""
    return ORIGINAL if typed in (summary["baseline"].get("individuals") or ()) else typed


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
    #: p_value adjusted by Holm's method over the front members measured (their family).
    p_holm: float | None = None
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


class _SecondRun(_Shape):
    agrees: bool
    detail: str


class _Behaviour(_Shape):
    verdict: str
    why: str
    inputs_tried: int = 0
    counterexample: str | None = None
    confirmed: bool | None = None


class _Oracle(_Shape):
    same: int
    changed: int
    not_checked: int
    seconds: float
    budget_seconds: float
    recording_seconds: float | None = None


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
    second_run: _SecondRun | None = None
    minimal: _Minimal | None = None
    ablation: list[_Ablated] | None = None
    behaviour: _Behaviour | None = None


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
    behaviour: _Share | None = None
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
    oracle: _Oracle | None = None


#: Union members appear in pydantic's error locations by class name; a key path leaves them out.
_SHAPE_NAMES = {
    cls.__name__
    for cls in (
        _Tests,
        _SpeedUp,
        _Minimal,
        _Ablated,
        _Behaviour,
        _Oracle,
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
