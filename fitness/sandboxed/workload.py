"""The workload script: run by pyperf from a variant's scratch copy, timing a callable.

Installed in the workspace's tools folder and run from the variant's copy, whose folder
(the working directory, also that of pyperf's workers) heads sys.path, so `import
package.module` finds the variant's code. It imports nothing of gi's.

What times the loops and what hands the results to gi is taken before anything of the
project is imported, and called, never looked up, afterwards: the clock, and the system calls
that write each timed process's values and behaviour check into outputs/ (a rebound
`time.perf_counter`, `json.dump` or `open` reaches none of it). pyperf's manager process
only starts the workers and never imports the project; gi reads the values each worker
recorded itself and holds pyperf's results (which the worker's `json.dump` wrote) to them.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

_clock = time.perf_counter
_open, _write, _close = os.open, os.write, os.close
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC

import argparse  # noqa: E402 (after the clock and system calls are taken)
import importlib  # noqa: E402
import json  # noqa: E402

sys.path.insert(0, os.getcwd())


def record(path: str, text: str) -> None:
    """Write `text` to `path` with the system calls taken at the start."""
    descriptor = _open(path, _CREATE, 0o644)
    data = text.encode()
    while data:
        data = data[_write(descriptor, data) :]
    _close(descriptor)


def load(spec: str) -> Callable[[], Any]:
    """The callable `spec` names ("package.module:function")."""
    module_name, _, attribute = spec.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    function: Callable[[], Any] = target
    return function


def stable(value: object) -> str:
    """repr() without memory addresses, which differ from run to run."""
    import re

    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))


def exact(value: object) -> str:
    """A value as the behaviour check compares it: its exact type, and its repr."""
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}:{stable(value)}"


def boundary_returns(function: Callable[[], Any], files: set[str], inside: set[str]) -> tuple[str, str, int]:
    """Call `function`, recording every value the editable code (`files`) returns to code
    outside it (the workload, or the functions named in `inside`, which gi does not edit)."""
    import hashlib

    digest = hashlib.sha256()
    count = [0]

    def outside(frame: FrameType | None) -> bool:
        return frame is None or frame.f_code.co_filename not in files or frame.f_code.co_name in inside

    def watch(frame: FrameType, event: str, value: object) -> None:
        code = frame.f_code
        if event == "return" and code.co_filename in files and code.co_name not in inside and outside(frame.f_back):
            digest.update(f"{code.co_name}={stable(value)}\n".encode())
            count[0] += 1

    sys.setprofile(watch)
    try:
        result = function()
    finally:
        sys.setprofile(None)
    return stable(result), digest.hexdigest(), count[0]


def replay(cases: list[list[str]]) -> list[str]:
    """Each recorded call of an editable function again: what it returns (exactly) or raises."""
    import ast

    lines = []
    for module, name, arguments in cases:
        try:
            answer = "returns " + exact(getattr(importlib.import_module(module), name)(*ast.literal_eval(arguments)))
        except Exception as error:
            answer = "raises " + type(error).__name__
        lines.append(f"{module}:{name}{arguments} {answer}")
    return lines


def check(function: Callable[[], Any], args: argparse.Namespace) -> str:
    """The behaviour check: the workload's result, the editable code's returns to it, and the
    recorded calls replayed."""
    files = {os.path.abspath(file) for file in args.gi_files.split(",") if file}
    result, returns, count = boundary_returns(function, files, set(args.gi_inside.split(",")))
    cases = []
    if args.gi_cases:
        with open(args.gi_cases, encoding="utf-8") as stream:
            cases = json.load(stream)
    answers = "".join(line + "\n" for line in replay(cases))
    return f"{result}\nreturns to the workload: {count}, sha256 {returns}\nreplayed:\n{answers}"


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gi-call", required=True)
    parser.add_argument("--gi-files", default="")
    parser.add_argument("--gi-inside", default="")
    parser.add_argument("--gi-cases", default="")


if "--gi-output" in sys.argv or "--gi-profile" in sys.argv:
    parser = argparse.ArgumentParser()
    options(parser)
    parser.add_argument("--gi-output")
    parser.add_argument("--gi-profile")
    args = parser.parse_args()
    function = load(args.gi_call)
    if args.gi_output:
        record(args.gi_output, check(function, args))
    else:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.runcall(function)
        rows = [
            [filename, line, name, own, cumulative]
            for (filename, line, name), (_, _, own, cumulative, _) in pstats.Stats(profiler).stats.items()  # type: ignore[attr-defined]
        ]
        with open(args.gi_profile, "w", encoding="utf-8") as stream:
            json.dump(rows, stream)
else:
    import pyperf

    passed = ("--gi-call", "--gi-files", "--gi-inside", "--gi-cases", "--gi-audit", "--gi-values")

    def forward(command: list[str], args: argparse.Namespace) -> None:
        for option in passed:
            command.extend((option, getattr(args, option[2:].replace("-", "_"))))

    runner = pyperf.Runner(add_cmdline_args=forward)
    options(runner.argparser)
    runner.argparser.add_argument("--gi-audit", default="")
    runner.argparser.add_argument("--gi-values", default="")
    arguments = runner.parse_args()
    calibrating = arguments.calibrate_loops or arguments.recalibrate_loops
    pid = os.getpid()
    values_path = os.path.join(arguments.gi_values, f"gi-values-{pid}.txt") if arguments.gi_values else ""
    audit_path = os.path.join(arguments.gi_audit, f"gi-timed-{pid}.txt") if arguments.gi_audit else ""
    # The manager only starts the workers: the project is imported in the timed processes alone.
    timed_function = load(arguments.gi_call) if arguments.worker else None
    timed: set[str] = set()
    measured: list[str] = []

    def loops(count: int) -> float:
        call = timed_function
        assert call is not None, "only pyperf's workers time the workload"
        start = _clock()
        for _ in range(count):
            value = call()
        elapsed = _clock() - start
        measured.append(f"{count} {elapsed!r}\n")
        timed.add(stable(value))  # the last value of each timed loop, outside the clock
        return elapsed

    runner.bench_time_func("workload", loops)
    if arguments.worker and values_path and not calibrating:
        record(values_path, "".join(measured))
    if timed_function is not None and audit_path and not calibrating:
        # In the very process that was timed, after its timed loops: the behaviour check again.
        text = check(timed_function, arguments)
        record(audit_path, text + "".join(f"timed: {value}\n" for value in sorted(timed)))
