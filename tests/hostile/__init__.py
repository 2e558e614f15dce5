"""Hostile variants against gi: forgeries, escapes and a hostile model in a whole run."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.llm_server import Action, ScriptedModel


@dataclass
class OneFunction(ScriptedModel):
    """Serves the script to prompts about `function`; asked about another one, it declines."""

    function: str = "add"

    def next(self, body: dict[str, Any], headers: dict[str, str]) -> Action:
        if f"`{self.function}`" in json.dumps(body):
            return super().next(body, headers)
        with self.lock:
            self.requests.append(body)
        return Action(reply="I would rather not.")


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
