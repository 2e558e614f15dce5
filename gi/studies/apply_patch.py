"""`gi apply RUN ID`: write a front member's changes into the project, only when asked.

A run records a hash of every editable file as it read it (summary.json, `program.sources`).
`apply_member` refuses when any file the member changes is not that file any more, rebuilds
the member's program from its edits (the same program its diff shows), keeps a copy of each
file it replaces in the run folder (`applied/<id>-<time>/`), and writes each file by write-and-rename.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gi.engine.run_folder import ORIGINAL, find_member, read_summary, source_hash
from gi.model.errors import EditError, StoreError, UsageError
from gi.model.patch import Patch, apply
from gi.model.program import Program, decode_source, outside

BACKUP_DIR = "applied"


@dataclass(frozen=True)
class Applied:
    """What `gi apply` did: the files it changed, and where their former text is kept."""

    member: str
    project: Path
    changed: tuple[str, ...]
    backups: Path | None


def _read(path: Path) -> tuple[str, str]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path}: gone since the run; gi apply changes only the files the run read") from None
    except OSError as error:
        raise UsageError(f"{path}: cannot read it ({error.strerror or error})") from None
    return decode_source(data, path)


def apply_member(run: Path, member_id: str, project: Path | None = None) -> Applied:
    """Apply a front member's patch to the project it was made from (or to `project`, a copy of
    it); refuse, changing nothing, when a file differs from what the run read."""
    summary = read_summary(run)
    member = find_member(summary, member_id)
    if member is None:
        ids = ", ".join(m["id"] for m in summary["front"]) or "no member"
        raise UsageError(f"{run}: no front member {member_id!r}; the front holds {ids}")
    recorded: dict[str, Any] | None = summary.get("program", {}).get("sources")
    if not isinstance(recorded, dict) or not recorded:
        raise StoreError(
            f"{run / 'summary.json'}: no record of the files the run read (program.sources); running `gi run`"
            " on its config again rewrites the summary with it"
        )
    root = (project or Path(summary["program"]["root"])).resolve()
    if not root.is_dir():
        where = "--project" if project is not None else f"the run's program.root (in {run / 'summary.json'})"
        raise UsageError(f"{root}: no such project folder ({where}); give --project the folder to apply the patch to")
    if member_id == ORIGINAL or not member.get("edits"):
        return Applied(member["id"], root, (), None)
    try:
        patch = Patch.from_json(member["edits"])
    except EditError as error:
        raise StoreError(f"{run / 'summary.json'}: member {member['id']}: {error}") from None
    touched = sorted(
        {
            location.file
            for edit in patch.edits
            for location in (edit.target, *edit.anchors(), *edit.positions(), *edit.ingredients())
        }
    )
    sources: dict[str, str] = {}
    encodings: dict[str, str] = {}
    for name in touched:
        path = root / name
        if outside(root, name):
            raise StoreError(
                f"{run / 'summary.json'}: member {member['id']} edits {name}, outside {root}:"
                " gi apply writes only there"
            )
        if name not in recorded:
            raise StoreError(f"{run / 'summary.json'}: member {member['id']} edits {name}, which the run did not read")
        if path.is_symlink():
            raise UsageError(f"{path}: a symbolic link; gi apply writes only regular files")
        sources[name], encodings[name] = _read(path)
        if source_hash(sources[name]) != recorded[name]:
            raise UsageError(
                f"{path}: changed since the run; gi apply applies a patch only to the files it was made from"
            )
    try:
        variant = apply(Program(root, sources, encodings), patch)
    except (EditError, KeyError) as error:
        raise StoreError(f"{run / 'summary.json'}: member {member['id']}: {error}") from None
    program = variant.program
    changed = tuple(variant.changed_files)
    backups = run.resolve() / BACKUP_DIR / f"{member['id']}-{time.strftime('%Y%m%dT%H%M%S')}"
    for name in changed:
        (backups / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, backups / name)
    for name in changed:
        _replace(root / name, variant.sources[name].encode(program.encodings[name]))
    return Applied(member["id"], root, changed, backups if changed else None)


def _replace(path: Path, data: bytes) -> None:
    """Write a file by write-and-rename, keeping its permissions."""
    temporary = path.with_name(f".{path.name}.gi-apply")
    temporary.write_bytes(data)
    shutil.copymode(path, temporary)
    os.replace(temporary, path)
