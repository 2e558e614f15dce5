"""Hostile variants against gi: forgeries, escapes and a hostile model in a whole run."""

from __future__ import annotations

from pathlib import Path


def processes_with(marker: str) -> list[int]:
    """The processes whose command line holds `marker` (none may outlive a run)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
