"""The runtime measure: the workload timed with pyperf, and the statistics to compare two programs.

A workload is either a no-argument callable (`package.module:function`, imported from the
variant's scratch copy) or a command. pyperf runs it in fresh worker processes with warm-ups
and loops calibrated to a minimum time per value. Screening measurements (few processes)
drive the search; the rigorous protocol (pyperf's values, warm-ups and 100 ms a value, in 30
processes a program, the original and the variant interleaved in the same session) confirms a
speed-up at the end, with a 95% bootstrap interval and a Mann-Whitney U test over per-process
means.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyperf

from gi.fitness.sandboxed import FOLDER as SANDBOXED
from gi.model.results import CommandRunner, ProcessOutcome

SCRIPT_NAME = "gi_workload.py"
TIMING_NAME = "timing.json"
#: The largest file of results a workload run may hand back (a pyperf JSON, a profile, a repr).
RESULT_BYTES = 64 * 1024 * 1024

#: Run from the variant's copy (fitness/sandboxed/workload.py); imports nothing of gi's.
WORKLOAD_SCRIPT = (SANDBOXED / "workload.py").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Workload:
    """What to time: a callable `call` ("package.module:function") or a `command`."""

    call: str | None = None
    command: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.call is None) == (not self.command):
            raise ValueError("a workload is either a call or a command, not both or neither")


@dataclass(frozen=True)
class TimingSettings:
    """How hard pyperf measures: worker processes, values per process, warm-ups, time per value."""

    processes: int
    values: int = 3
    warmups: int = 1
    min_time: float = 0.1


SCREENING = TimingSettings(processes=2, values=3, warmups=1, min_time=0.02)
#: 30 processes rather than pyperf's 20: the process is the unit of evidence (each has its own
#: hash seed and memory layout). On this project's shared 2-core machine process means varied
#: by ~8% from process to process against ~4% for values within one, so more processes, not
#: longer values, buy power; benchmarks/timing_noise.py measures what it gives.
RIGOROUS = TimingSettings(processes=30, values=3, warmups=1, min_time=0.1)


@dataclass(frozen=True)
class Timing:
    """One pyperf measurement: the mean time of one call in each worker process, in seconds;
    and, for each command that made it, its loop count and how long it took by gi's clock."""

    process_means: tuple[float, ...]
    loops: int
    commands: tuple[tuple[int, float], ...] = ()

    @property
    def mean(self) -> float:
        return float(np.mean(self.process_means))

    @property
    def median(self) -> float:
        return float(np.median(self.process_means))

    def merged(self, other: Timing) -> Timing:
        return Timing(self.process_means + other.process_means, self.loops, self.commands + other.commands)


def loops_for(timing: Timing, settings: TimingSettings) -> int:
    """The loop count that makes one value last at least `settings.min_time`, even in the
    fastest process of `timing`.

    Both programs of a comparison are timed with the same count, taken from a screening timing
    of the original, so neither pays a calibration of its own.
    """
    return max(1, math.ceil(settings.min_time / min(timing.process_means)))


class WorkloadError(Exception):
    """The workload failed on a variant (it raised, or pyperf could not measure it)."""


class ForgedTimingError(WorkloadError):
    """A timing's results are not what its timed processes measured, or claim calls cheaper
    than the parent's clock saw them take: the variant is scored as tampered with."""


def timing_cpu() -> int | None:
    """The CPU that timed workers are pinned to: the highest this process may use, if it has several.

    Unpinned, the scheduler moves a worker between cores mid-value, and work on the other core
    adds to some values but not others. On this project's 2-core machine a variant that timeit
    puts at 0.91 of the original's speed measured 0.935 unpinned and 0.913 pinned, with a
    smaller spread between processes.
    """
    try:
        cpus = os.sched_getaffinity(0)
    except AttributeError:  # not Linux: pyperf runs unpinned
        return None
    return max(cpus) if len(cpus) > 1 else None


def _pyperf_options(settings: TimingSettings, output: Path, loops: int | None) -> list[str]:
    options = ["-p", str(settings.processes), "-n", str(settings.values), "-w", str(settings.warmups),
               "-o", str(output), "--quiet"]  # fmt: skip
    cpu = timing_cpu()
    if cpu is not None:
        options += ["--affinity", str(cpu)]
    if loops:
        options += ["--loops", str(loops)]
    else:
        options += ["--min-time", str(settings.min_time)]
    return options


_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b.*")


def _failure(process: ProcessOutcome, what: str) -> WorkloadError:
    """The error for a failed workload run, naming the workload's own exception when it raised
    one (pyperf's closing "worker failed" lines alone say nothing)."""
    lines = (process.stderr or process.stdout).strip().splitlines()
    raised = [line.strip() for line in lines if _EXCEPTION.match(line.strip())]
    tail = [raised[-1]] if raised else lines[-3:]
    reason = "timed out" if process.timed_out else f"exit {process.returncode}"
    return WorkloadError(f"{what} failed ({reason}): {' | '.join(tail)}")


@dataclass(frozen=True)
class BehaviourCheck:
    """What the behaviour check looks at, besides the workload's result: the values the editable
    `files` return to code outside them (the workload, and the functions `inside` it, which gi
    does not edit), and the recorded calls of editable functions (`cases`: [module, function,
    repr(arguments)]) replayed, each answer by its exact type and repr."""

    files: tuple[str, ...] = ()
    inside: tuple[str, ...] = ()
    cases: tuple[tuple[str, str, str], ...] = ()

    def arguments(self, runner: CommandRunner) -> list[str]:
        """The workload script's options for this check in the runner's copy."""
        paths = ",".join(str(runner.workdir / file) for file in self.files)
        options = ["--gi-files", paths, "--gi-inside", ",".join(name.rpartition(".")[2] for name in self.inside)]
        if self.cases:
            table = runner.install_tool(CASES_NAME, json.dumps([list(case) for case in self.cases]))
            options += ["--gi-cases", str(table)]
        return options


#: The replayed calls, in the tools folder.
CASES_NAME = "gi_behaviour_cases.json"
#: What each timed worker process writes: the behaviour check after its timed loops.
TIMED_PREFIX = "gi-timed-"


def measure(
    workload: Workload,
    settings: TimingSettings,
    *,
    runner: CommandRunner,
    timeout: float,
    loops: int | None = None,
    check: BehaviourCheck | None = None,
) -> Timing:
    """Time the workload in the runner's copy with pyperf; `loops` fixes the loop count (no
    calibration). With `check`, each timed process of a callable workload then makes the
    behaviour check too, after its timed loops and with the last value of each: `timed_answers`
    reads them, and they must be what the untimed check (`output_of`) gives."""
    runner.clear_output(TIMING_NAME)
    for name in _timed_files(runner) + _timed_files(runner, VALUES_PREFIX):
        runner.clear_output(name)
    output = runner.outputs / TIMING_NAME
    if workload.call is not None:
        script = runner.install_tool(SCRIPT_NAME, WORKLOAD_SCRIPT)
        audit = [*check.arguments(runner), "--gi-audit", str(runner.outputs)] if check is not None else []
        argv = [sys.executable, str(script), "--gi-call", workload.call, *audit, "--gi-values", str(runner.outputs),
                *_pyperf_options(settings, output, loops)]  # fmt: skip
    else:
        argv = [sys.executable, "-m", "pyperf", "command", *_pyperf_options(settings, output, loops), "--",
                *workload.command]  # fmt: skip
    process = runner(argv, timeout=timeout, env={"PYTHONPATH": str(runner.workdir)})
    data = runner.read_output(TIMING_NAME, RESULT_BYTES)
    if process.returncode != 0 or data is None:
        raise _failure(process, "timing the workload")
    try:
        benchmark = pyperf.Benchmark.loads(data.decode("utf-8"))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as error:
        raise WorkloadError(f"pyperf's results are unreadable ({error})") from None
    runs = [tuple(float(value) for value in run.values) for run in benchmark.get_runs() if run.values]
    if not runs:
        raise WorkloadError("pyperf recorded no values")
    count = int(next(run for run in benchmark.get_runs() if run.values).get_loops())
    if workload.call is not None:
        runs = _held_to_records(runs, _recorded_values(runner, settings.values))
    return Timing(tuple(float(np.mean(run)) for run in runs), count, ((count, process.seconds),))


#: What each timed worker process writes: the values it measured, "loops seconds" a line.
VALUES_PREFIX = "gi-values-"


def _recorded_values(runner: CommandRunner, values: int) -> list[tuple[float, ...]]:
    """The values each timed process recorded itself (its last `values` calls of the timed
    function: the warm-ups come first), seconds a call."""
    found = []
    for name in _timed_files(runner, VALUES_PREFIX):
        data = runner.read_output(name, RESULT_BYTES)
        try:
            lines = [line.split() for line in (data or b"").decode("ascii").splitlines()]
            found.append(tuple(float(seconds) / int(loops) for loops, seconds in lines[-values:]))
        except (ValueError, UnicodeDecodeError, ZeroDivisionError):
            raise ForgedTimingError(f"the values its timed process recorded in {name} are unreadable") from None
    return found


def _held_to_records(runs: list[tuple[float, ...]], recorded: list[tuple[float, ...]]) -> list[tuple[float, ...]]:
    """pyperf's values of each process, which must be those the processes recorded themselves
    (the same floats: pyperf's value is the timed function's seconds over its loops)."""
    if len(recorded) != len(runs):
        raise ForgedTimingError(f"{len(recorded)} of its {len(runs)} timed processes recorded the values pyperf has")
    for claimed, measured in zip(sorted(runs), sorted(recorded), strict=True):
        if len(claimed) != len(measured) or not all(
            math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0) for a, b in zip(claimed, measured, strict=True)
        ):
            raise ForgedTimingError(
                f"pyperf's values ({', '.join(f'{value:.3g}' for value in claimed)} s a call) are not what its"
                f" timed process measured ({', '.join(f'{value:.3g}' for value in measured)} s)"
            )
    return recorded


def _timed_files(runner: CommandRunner, prefix: str = "") -> list[str]:
    prefix = prefix or TIMED_PREFIX
    try:
        return sorted(name for name in os.listdir(runner.outputs) if name.startswith(prefix))
    except OSError:
        return []


def timed_answers(runner: CommandRunner) -> list[str]:
    """What the timed processes of the last `measure` with a check gave, one text each."""
    texts = []
    for name in _timed_files(runner):
        data = runner.read_output(name, RESULT_BYTES)
        texts.append(data.decode("utf-8", "replace") if data is not None else "(unreadable)")
    return texts


#: How many times the time pyperf's values say the extra calls of the clock's commands cost gi's
#: clock may see them take before a timing is taken for forged: honest values and the clock
#: agree but for noise.
CLOCK_MARGIN = 2.0
#: Standard deviations of the session's commands' times by which the clock must see the extra
#: calls take longer than the values say, and seconds at the least: below either, a command's
#: own noise could decide.
CLOCK_ERRORS = 3.0
CLOCK_FLOOR = 0.1
#: Seconds the extra calls of each clock command take by the values' own account: enough to
#: dwarf a command's start-up, whatever the load.
CLOCK_SECONDS = 2.0
#: Commands the clock's check runs, at `clock_loops`.
CLOCK_COMMANDS = 2
#: The most loops a clock command runs, as a multiple of the session's.
CLOCK_MOST = 1000


def clock_loops(timing: Timing, settings: TimingSettings) -> int:
    """The loop count of the clock's commands for a session `timing` made at `timing.loops`: as
    many more calls as pyperf's values say take CLOCK_SECONDS (a forgery that claims calls ten
    times cheaper than they are pays ten times that, real seconds)."""
    calls = settings.processes * (settings.values + settings.warmups)
    extra = math.ceil(CLOCK_SECONDS / (calls * max(timing.median, 1e-12)))
    return timing.loops + min(extra, CLOCK_MOST * timing.loops)


def unseen_speed(timing: Timing, clock: Sequence[tuple[int, float]], settings: TimingSettings) -> str:
    """Why `timing` claims calls cheaper than gi's own clock saw them take, or "".

    `timing` comes of a session's commands at one loop count, `clock` of commands at more loops
    (`clock_loops`: (loops, seconds) each, a command that ran out of time as infinite seconds).
    What the quickest clock command took beyond the session's commands (their median), by the
    parent's clock, is what its extra calls cost, whatever a command spent starting, importing
    and checking. The timing is forged when that is more than CLOCK_MARGIN times what pyperf's
    values say those calls take, and more by CLOCK_ERRORS standard deviations of the session's
    commands' times (and CLOCK_FLOOR): a command's noise decides nothing. Without two session
    commands and a clock command there is nothing to hold the values to, and "" is returned."""
    short = [seconds for loops, seconds in timing.commands if loops == timing.loops]
    if len(short) < 2 or not clock:
        return ""
    loops, seconds = min(clock, key=lambda command: command[1])
    calls = settings.processes * (settings.values + settings.warmups) * (loops - timing.loops)
    claimed = timing.median * calls
    seen = seconds - float(np.median(short))
    noise = max(CLOCK_FLOOR, CLOCK_ERRORS * float(np.std(short, ddof=1)))
    if seen <= CLOCK_MARGIN * claimed or seen - claimed <= noise:
        return ""
    took = "more than its time limit" if math.isinf(seen) else f"{seen:.3g} s"
    return (f"its {calls} extra timed calls took gi's clock {took}, and its timed processes' values say"
            f" {claimed:.3g} s")  # fmt: skip


def answered_differently(untimed: str, timed: Sequence[str], processes: int) -> str:
    """Why the timed processes' behaviour checks betray a program that tells it is timed, or "":
    each must give what the untimed check gave (the workload's result, its returns, the replayed
    calls), and the last value of each of its timed loops must be the workload's result."""
    if len(timed) < processes:
        return f"only {len(timed)} of its {processes} timed processes made the behaviour check"
    result = untimed.partition("\n")[0]
    for text in timed:
        check, _, loops = text.partition("\ntimed: ")
        if check + "\n" != untimed and check != untimed:
            first = next((a for a, b in zip(check.splitlines(), untimed.splitlines(), strict=False) if a != b), "")
            return f"timed, it answered otherwise than untimed ({first[:200]!r})"
        values = {line.removeprefix("timed: ") for line in ("timed: " + loops).splitlines() if line}
        if values - {result}:
            return f"its timed loops returned {sorted(values - {result})[0][:200]!r}, untimed {result[:200]!r}"
    return ""


def output_of(
    workload: Workload,
    *,
    runner: CommandRunner,
    timeout: float,
    check: BehaviourCheck = BehaviourCheck(),
) -> str:
    """What the workload gives, for the behaviour check. For a call: repr() of its return value,
    a digest of every value the editable files return to code outside them (so a workload that
    returns nothing still checks the code it times), and the check's replayed calls. For a
    command: its stdout (a digest, when it printed more than gi keeps)."""
    if workload.call is None:
        process = runner(list(workload.command), timeout=timeout, env={"PYTHONPATH": str(runner.workdir)})
        if process.returncode != 0:
            raise _failure(process, "running the workload")
        return process.stdout_digest or process.stdout
    return _call_once(workload.call, "--gi-output", runner=runner, timeout=timeout, extra=check.arguments(runner))


def behaviour_of(output: str) -> str:
    """The part of `output_of` compared with the original's: the result and its returns (the
    replayed calls are compared only between a variant's untimed and timed checks)."""
    return output.partition("\nreplayed:\n")[0]


def _call_once(call: str, mode: str, *, runner: CommandRunner, timeout: float, extra: Sequence[str] = ()) -> str:
    """Run the workload script once in `mode` (--gi-output or --gi-profile); return what it wrote."""
    script = runner.install_tool(SCRIPT_NAME, WORKLOAD_SCRIPT)
    name = f"gi{mode.removeprefix('--gi')}.txt"
    runner.clear_output(name)
    process = runner([sys.executable, str(script), "--gi-call", call, mode, str(runner.outputs / name), *extra],
                     timeout=timeout, env={"PYTHONPATH": str(runner.workdir)})  # fmt: skip
    data = runner.read_output(name, RESULT_BYTES)
    if process.returncode != 0 or data is None:
        raise _failure(process, "running the workload" if mode == "--gi-output" else "profiling the workload")
    return data.decode("utf-8", "replace")


def profile(
    workload: Workload, files: Sequence[str], *, runner: CommandRunner, timeout: float
) -> dict[tuple[str, int], float]:
    """Cumulative time (cProfile cumtime) of each function of the editable files, by (file, first line).

    Cumulative rather than own time: a call in a loop is where a hot function can be avoided.
    """
    if workload.call is None:
        return {}
    text = _call_once(workload.call, "--gi-profile", runner=runner, timeout=timeout)
    try:
        rows: list[list[Any]] = json.loads(text)
    except json.JSONDecodeError as error:
        raise WorkloadError(f"the profile is unreadable ({error})") from None
    wanted = {str((runner.workdir / file).resolve()): file for file in files}
    spent: dict[tuple[str, int], float] = {}
    for row in rows:
        if not isinstance(row, list) or len(row) != 5:
            raise WorkloadError("the profile is unreadable (a row is not [file, line, name, own, cumulative])")
        filename, line, _name, _own, cumulative = row
        file = wanted.get(str(Path(filename).resolve())) if filename and not filename.startswith("<") else None
        if file is not None:
            spent[(file, int(line))] = max(spent.get((file, int(line)), 0.0), float(cumulative))
    return spent


@dataclass(frozen=True)
class SpeedUp:
    """Original time over variant time, with its 95% interval and whether it is significant."""

    value: float
    low: float
    high: float
    p_value: float
    significant: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "value": round(self.value, 4),
            "low": round(self.low, 4),
            "high": round(self.high, 4),
            "p_value": float(f"{self.p_value:.4g}"),
            "significant": self.significant,
        }


def compare(original: Timing, variant: Timing, *, seed: int = 0, resamples: int = 2000) -> SpeedUp:
    """Speed-up of `variant` over `original` from per-process means.

    The interval is a percentile bootstrap of mean(original) / mean(variant); the change is
    significant when a two-sided Mann-Whitney U test gives p < 0.05 and the interval excludes 1.
    """
    a = np.asarray(original.process_means)
    b = np.asarray(variant.process_means)
    value = float(a.mean() / b.mean())
    rng = np.random.default_rng(seed)
    ratios = a[rng.integers(len(a), size=(resamples, len(a)))].mean(axis=1) / b[
        rng.integers(len(b), size=(resamples, len(b)))
    ].mean(axis=1)
    low, high = (float(x) for x in np.percentile(ratios, [2.5, 97.5]))
    from scipy import stats  # here: it takes a second to import, and only the end of a run needs it

    p_value = float(stats.mannwhitneyu(a, b, alternative="two-sided").pvalue) if len(a) > 1 and len(b) > 1 else 1.0
    significant = p_value < 0.05 and (low > 1.0 or high < 1.0)
    if math.isnan(p_value):
        p_value, significant = 1.0, False
    return SpeedUp(value, low, high, p_value, significant)


def interleaved(
    measure_original: Callable[[], Timing],
    measure_variant: Callable[[], Timing],
    rounds: int,
) -> tuple[Timing, Timing]:
    """Measure two programs in alternating rounds (ABBA order), so drift hits both alike."""
    original: Timing | None = None
    variant: Timing | None = None
    for round_index in range(rounds):
        order = (measure_original, measure_variant) if round_index % 2 == 0 else (measure_variant, measure_original)
        for which in order:
            timing: Timing = which()
            if which is measure_original:
                original = timing if original is None else original.merged(timing)
            else:
                variant = timing if variant is None else variant.merged(timing)
    assert original is not None and variant is not None
    return original, variant
