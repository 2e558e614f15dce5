"""Results: what running a command or evaluating a variant gives back. Plain data, JSON in and out.

An `Evaluation` is a tagged result: its `status` says whether the variant could be measured
(ok) or why not (unparseable, timed out, crashed). Evaluating never raises into the loop.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class ProcessOutcome:
    """How a command run under limits ended."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    #: What the command wrote to its channel pipe (see `CommandRunner`), and whether it wrote
    #: more than was kept.
    channel: bytes = b""
    channel_overflow: bool = False
    #: "sha256:bytes" of the whole stdout when only its tail was kept, else "".
    stdout_digest: str = ""
    #: Why the command was stopped for using too much of a resource (its disk quota), or "".
    resource: str = ""
    #: A process a warm run started that it could not hand the variant to (it imported the
    #: original), or "": see `gi.fitness.tests.TestRun.started_without_variant`.
    started_without_variant: str = ""


class CommandRunner(Protocol):
    """Runs commands for one variant in its workspace, with limits, killing all they started.

    The engine's sandbox implements it; measures in fitness/ take one, so they never decide
    themselves how a variant's code is isolated. `workdir` is the variant's copy of the
    project; `tools` holds gi's own files, which the command can read but not change;
    `outputs` is where the command leaves files for gi, read back with `read_output` (regular
    files only, never through a link: the variant may have planted one).
    """

    @property
    def workdir(self) -> Path: ...

    @property
    def tools(self) -> Path: ...

    @property
    def outputs(self) -> Path: ...

    def install_tool(self, name: str, text: str) -> Path: ...

    def read_output(self, name: str, max_bytes: int = ...) -> bytes | None: ...

    def clear_output(self, name: str) -> None: ...

    def __call__(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        stdin: bytes = b"",
        channel: bool = False,
        on_channel: Callable[[bytes], None] | None = None,
    ) -> ProcessOutcome: ...


class Status(enum.StrEnum):
    """The tag of an evaluation."""

    OK = "ok"
    UNPARSEABLE = "unparseable"
    TIMED_OUT = "timed_out"
    CRASHED = "crashed"
    #: The variant reached for the test machinery (a new use of os._exit, sys.modules, pytest,
    #: ...) or its test report was forged; it scores as the worst of all.
    TAMPERED = "tampered"
    #: The variant used more of a resource than it may (its disk quota, without bubblewrap).
    RESOURCE = "resource"


@dataclass(frozen=True, slots=True)
class Evaluation:
    """The measurements of one variant (by tree hash), whatever became of it."""

    status: Status
    tree_hash: str
    #: Raw measurements by name (failed_tests, complexity, style, size, ...).
    measures: dict[str, float] = field(default_factory=dict)
    #: Per-test outcomes of the training tests: node id -> passed/failed/error/skipped/...
    tests: dict[str, str] = field(default_factory=dict)
    #: Why the variant is not ok, or the tail of the failing output.
    detail: str = ""
    seconds: float = 0.0
    #: Seconds each training test took (setup, call and teardown), by node id.
    durations: dict[str, float] = field(default_factory=dict)
    #: Only the training tests that can see the variant's edits ran (tests.select = "coverage");
    #: the others keep the original's outcomes in `tests` and the measures. Such an evaluation
    #: steers the search; nothing counts as passing on it until every test confirmed it.
    partial: bool = False

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "tree_hash": self.tree_hash,
            "measures": self.measures,
            "tests": self.tests,
            "detail": self.detail,
            "seconds": self.seconds,
            "durations": {test: round(seconds, 4) for test, seconds in self.durations.items()},
            **({"partial": True} if self.partial else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Evaluation:
        return cls(
            status=Status(data["status"]),
            tree_hash=str(data["tree_hash"]),
            measures={str(k): float(v) for k, v in data.get("measures", {}).items()},
            tests={str(k): str(v) for k, v in data.get("tests", {}).items()},
            detail=str(data.get("detail", "")),
            seconds=float(data.get("seconds", 0.0)),
            durations={str(k): float(v) for k, v in data.get("durations", {}).items()},
            partial=bool(data.get("partial", False)),
        )
