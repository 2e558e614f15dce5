"""Hostile variants against gi: forgeries, escapes and a hostile model in a whole run."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.llm_server import Action, ScriptedModel

#: The engine a run takes by default (evaluation.engine = "auto": warm where warm and cold agree).
DEFAULT_ENGINE = "warm"


def engines(*names: str) -> list[Any]:
    """`engine` parameters for a whole hostile run: the default engine's runs with every test
    run, the others marked `exhaustive` (left out unless asked for: `-m exhaustive`), so the
    suite keeps to CI's budget and every attack still runs where users run it."""
    return [name if name == DEFAULT_ENGINE else pytest.param(name, marks=pytest.mark.exhaustive) for name in names]


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
