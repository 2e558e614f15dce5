"""The calls the training tests make, recorded on the original: the inputs the oracle starts from,
and the differential checks' cases (`gi.fitness.differential`).

`record_calls` runs fitness/sandboxed/oracle_recorder.py (beside the oracle worker, whose
encoding it uses) in a runner's copy of the original: the training tests under a hook that
notes, per top-level function of the editable files, its parameters and (bounded) the distinct
arguments it was called with, in the neutral encoding; which functions the failing tests reach;
and the results of the literal calls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gi.fitness.oracle.inputs import FunctionProfile
from gi.fitness.sandboxed import FOLDER as SANDBOXED
from gi.fitness.tests import DEFAULT_SETUP, PytestSetup
from gi.model.results import CommandRunner

WORKER_NAME = "gi_oracle_worker.py"
RECORDER_NAME = "gi_oracle_recorder.py"
LIMITS_NAME = "gi_pytest_limits.py"
OUTPUT_NAME = "gi_oracle_calls.json"
#: Distinct argument lists kept per function (the first ones the tests give).
PER_FUNCTION = 40
#: Literal argument lists kept per function for the differential checks, and in all.
LITERAL_PER_FUNCTION = 20
LITERAL_TOTAL = 500
#: Seconds each of those literal calls may take when the recorder makes it again (as long as one
#: call of the oracle's): past it, the call gives no case.
LITERAL_CALL_SECONDS = 1.0


def worker_source() -> str:
    """The sandboxed worker's source, copied into each workspace's tools folder."""
    return (SANDBOXED / "oracle_worker.py").read_text(encoding="utf-8")


def limits_source() -> str:
    """The per-test time limits of gi's pytest plugin, which the recorder uses too."""
    return (SANDBOXED / "pytest_limits.py").read_text(encoding="utf-8")


def recorder_source() -> str:
    """The sandboxed recorder's source, copied beside the worker."""
    return (SANDBOXED / "oracle_recorder.py").read_text(encoding="utf-8")


class RecordingError(Exception):
    """The original's calls could not be recorded."""


@dataclass(frozen=True)
class Recording:
    """What the recorder saw of the training tests on the original."""

    functions: Mapping[str, FunctionProfile]
    #: The functions ("module:name") a failing training test called.
    failing_reach: frozenset[str]
    #: The differential checks' cases: [module, function, repr(arguments), result].
    cases: tuple[tuple[str, str, str, str], ...]
    #: Training tests that passed and failed in the recording run.
    passed: int = 0
    failed: int = 0

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Recording:
        return cls(
            {key: FunctionProfile.from_json(key, value) for key, value in data["functions"].items()},
            frozenset(data["failing_reach"]),
            tuple((str(a), str(b), str(c), str(d)) for a, b, c, d in data["cases"]),
            int(data["tests"]["passed"]),
            int(data["tests"]["failed"]),
        )


def record_calls(
    train: Sequence[str],
    files: Sequence[str],
    *,
    runner: CommandRunner,
    timeout: float,
    test_limit: float = 0.0,
    setup: PytestSetup = DEFAULT_SETUP,
    listed: Mapping[str, Sequence[Sequence[object]]] | None = None,
    only: Sequence[str] | None = None,
    watch: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The recorder's JSON (see `Recording`), from the training tests `train` on the runner's
    copy of the original (`only` those of these node ids, when given); `files` are the editable
    files, `listed` more literal inputs for the differential checks ("module:function" ->
    argument lists). With `watch` ("module:function" keys), the hook is switched off once each of
    these functions has the calls it keeps, so the tests run on at full speed: the other
    functions' calls and the failing tests' reach are then those seen until then. Each test runs
    under `test_limit` seconds (0: only `timeout` bounds the whole run), so a failing test that
    hangs on a buggy original fails alone. Raises RecordingError."""
    runner.install_tool(WORKER_NAME, worker_source())
    runner.install_tool(LIMITS_NAME, limits_source())
    script = runner.install_tool(RECORDER_NAME, recorder_source())
    runner.clear_output(OUTPUT_NAME)
    plan = {
        "files": [str(runner.workdir / file) for file in files],
        "modules": [module for module, _ in setup.modules],
        "paths": list(train),
        "options": list(setup.options),
        "listed": {key: [list(arguments) for arguments in calls] for key, calls in (listed or {}).items()},
        "per_function": PER_FUNCTION,
        "literal_per_function": LITERAL_PER_FUNCTION,
        "literal_total": LITERAL_TOTAL,
        "only": None if only is None else sorted(only),
        "watch": None if watch is None else sorted(watch),
        "test_limit": test_limit,
        "call_limit": LITERAL_CALL_SECONDS if test_limit > 0 else 0.0,
    }
    command = [setup.python, str(script), str(runner.outputs / OUTPUT_NAME), json.dumps(plan)]
    process = runner(command, timeout=timeout, env={"PYTHONPATH": setup.pythonpath(runner.tools, runner.workdir)})
    data = runner.read_output(OUTPUT_NAME)
    if data is None:
        tail = (process.stderr or process.stdout).strip().splitlines()[-1:] or ["no output"]
        reason = "timed out" if process.timed_out else tail[0]
        raise RecordingError(f"recording the training tests' calls failed: {reason}")
    found: dict[str, Any] = json.loads(data)
    return found
