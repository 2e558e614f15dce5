"""The workload's runs an evaluator makes: the behaviour check of a variant's output, its
screening timing against the original's (one timing at a time on the machine), the profile that
weights sites, and the rigorous interleaved timings of the front (gi.engine.evaluation)."""

from __future__ import annotations

import math
import os
import socket
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import filelock

from gi.engine.evaluation_settings import EvaluationSettings
from gi.engine.sandbox.files import user_folder
from gi.engine.sandbox.runner import Sandbox
from gi.engine.suite_runs import SuiteRuns
from gi.fitness.runtime import (
    CLOCK_COMMANDS,
    BehaviourCheck,
    ForgedTimingError,
    SpeedUp,
    Timing,
    TimingSettings,
    Workload,
    WorkloadError,
    answered_differently,
    behaviour_of,
    clock_loops,
    compare,
    interleaved,
    measure,
    output_of,
    profile,
    timed_answers,
    unseen_speed,
)
from gi.model.patch import Variant
from gi.model.program import Program


def timing_lock_name() -> str:
    """The name of the lock every timing on this machine holds: its host name, or GI_TIMING_HOST
    (set it alike for containers that share one machine's cores)."""
    return f"gi-timing-{os.environ.get('GI_TIMING_HOST') or socket.gethostname()}"


def machine_timing_lock() -> filelock.FileLock:
    """The lock a timing holds: a file lock, so that no two timings of this user's on this
    machine overlap, whether they come from threads of one run or from other gi processes (runs
    side by side, test processes). Two timings at once share the pinned core and each measures
    the other. It lies in the user's own folder (`user_folder`): another user's lock file, which
    this user cannot open, never stands in the way."""
    return filelock.FileLock(user_folder() / f"{timing_lock_name()}.lock")


class WorkloadRuns(SuiteRuns):
    """Runs the workload on variants of one program; remembers the original's output and timing."""

    def __init__(self, program: Program, settings: EvaluationSettings, scratch: Path | None = None) -> None:
        super().__init__(program, settings, scratch)
        #: Functions gi never edits (the workload's own, in an editable file): the behaviour
        #: check records what the editable code returns to them.
        self.protected: frozenset[str] = frozenset()
        self.baseline_output: str | None = None
        #: The training tests' calls of editable functions, replayed by every behaviour check,
        #: untimed and in the timed processes (set with the original's output).
        self.behaviour_cases: tuple[tuple[str, str, str], ...] = ()
        #: Whether the original's timed processes answered as its untimed check did: only then
        #: is a variant whose timed answers differ scored as tampered.
        self.timed_check = False
        #: The original's latest screening timing; variants are timed with its loop count.
        self.baseline_timing: Timing | None = None
        self._timing_lock: AbstractContextManager[Any] = machine_timing_lock()

    def _workload_measures(self, sandbox: Sandbox, measures: dict[str, float]) -> tuple[str, str]:
        """Check the workload's output and time it; adds to `measures`, returns what went wrong
        and why the timing was tampered with ("" when it was not: see `answered_differently`)."""
        workload = self.settings.workload
        assert workload is not None
        try:
            untimed = None
            if self.settings.check_output and self.baseline_output is not None:
                untimed = self._output(sandbox)
                measures["output_differs"] = float(behaviour_of(untimed) != behaviour_of(self.baseline_output))
            if self.baseline_timing is not None:
                audited = untimed is not None and self.timed_check
                with self._timing_lock:
                    timing = measure(
                        workload, self.settings.screening, runner=sandbox, timeout=self.settings.workload_timeout,
                        loops=self.baseline_timing.loops, check=self._behaviour_check() if audited else None,
                    )  # fmt: skip
                measures["runtime_seconds"] = timing.median
                measures["runtime"] = timing.median / self.baseline_timing.median
                if audited and untimed is not None:
                    timed = timed_answers(sandbox)
                    why = answered_differently(untimed, timed, self.settings.screening.processes)
                    if why:
                        return "", f"it answers differently when it is timed: {why}"
        except ForgedTimingError as error:
            return "", f"its timings are forged: {error}"
        except WorkloadError as error:
            if "timed out" not in str(error):
                measures["workload_failed"] = 1.0
            return f"\n{error}", ""
        return "", ""

    def _behaviour_check(self) -> BehaviourCheck:
        """What the behaviour check looks at: the editable files' returns to the workload and the
        training tests' recorded calls (`behaviour_cases`), replayed."""
        return BehaviourCheck(tuple(self.program.files), tuple(sorted(self.protected)), self.behaviour_cases)

    def _workload(self) -> Workload:
        if self.settings.workload is None:
            raise ValueError("no workload is configured")
        return self.settings.workload

    def timing(self, variant: Variant, *, loops: int | None = None) -> Timing:
        """A screening timing of one variant (the original, to set the baseline); raises WorkloadError."""
        with self._sandbox(variant, tests=False) as sandbox, self._timing_lock:
            return measure(self._workload(), self.settings.screening, runner=sandbox,
                           timeout=self.settings.workload_timeout, loops=loops)  # fmt: skip

    def audited_timing(self, variant: Variant, untimed: str, *, loops: int | None = None) -> tuple[Timing, str]:
        """A screening timing whose timed processes make the behaviour check: the timing, and why
        they answered otherwise than `untimed` ("" when they did not); raises WorkloadError."""
        with self._sandbox(variant, tests=False) as sandbox, self._timing_lock:
            timing = measure(self._workload(), self.settings.screening, runner=sandbox, loops=loops,
                             timeout=self.settings.workload_timeout, check=self._behaviour_check())  # fmt: skip
            why = answered_differently(untimed, timed_answers(sandbox), self.settings.screening.processes)
            return timing, why

    def output(self, variant: Variant) -> str:
        """What the workload gives on a variant, for the behaviour check (see `output_of`)."""
        with self._sandbox(variant, tests=False) as sandbox:
            return self._output(sandbox)

    def _output(self, sandbox: Sandbox) -> str:
        return output_of(self._workload(), runner=sandbox, timeout=self.settings.workload_timeout,
                         check=self._behaviour_check())  # fmt: skip

    def profile(self, variant: Variant) -> dict[tuple[str, int], float]:
        """Cumulative time of each function of the editable files in the workload, by (file, line)."""
        with self._sandbox(variant, tests=False) as sandbox:
            return profile(self._workload(), self.program.files, runner=sandbox,
                           timeout=self.settings.workload_timeout)  # fmt: skip

    def rigorous(self, original: Variant, member: Variant, *, loops: int, seed: int = 0) -> SpeedUp:
        """The speed-up of `member` over `original` from a rigorous, interleaved session."""
        return compare(*self.rigorous_timings(original, member, loops=loops), seed=seed)

    def _clock(self, sandbox: Sandbox, session: Timing, pair: TimingSettings) -> list[tuple[int, float]]:
        """The member's clock commands (`clock_loops`): (loops, seconds by gi's clock) each, a
        command that ran out of time at infinite seconds."""
        count = clock_loops(session, pair)
        found: list[tuple[int, float]] = []
        for _ in range(CLOCK_COMMANDS):
            try:
                timing = measure(self._workload(), pair, runner=sandbox, timeout=self.settings.workload_timeout,
                                 loops=count)  # fmt: skip
            except ForgedTimingError:
                raise
            except WorkloadError as error:
                if "timed out" not in str(error):
                    raise
                found.append((count, math.inf))
                continue
            found += timing.commands
        return found

    def rigorous_timings(self, original: Variant, member: Variant, *, loops: int) -> tuple[Timing, Timing]:
        """The rigorous protocol on both programs (pinned workers), interleaved two processes at a
        time. The member's timed processes make the behaviour check, as in the search: the
        rigorous protocol calls the workload more often in a process than screening does, so a
        member that answers otherwise after that many calls raises ForgedTimingError here.

        Then the member runs CLOCK_COMMANDS commands of `clock_loops` (their extra calls take
        CLOCK_SECONDS by its values), and gi's clock on them must see the calls cost what its
        values say (`unseen_speed`): a speed-up the clock does not see raises ForgedTimingError."""
        settings = self.settings.rigorous
        rounds = max(1, settings.processes // 2)
        pair = TimingSettings(processes=2, values=settings.values, warmups=settings.warmups,
                              min_time=settings.min_time)  # fmt: skip
        audited = self.settings.check_output and self.baseline_output is not None and self.timed_check
        with (
            self._sandbox(original, tests=False) as first,
            self._sandbox(member, tests=False) as second,
            self._timing_lock,
        ):
            untimed = self._output(second) if audited else None

            def timer(sandbox: Sandbox, check: BehaviourCheck | None = None) -> Callable[[], Timing]:
                return lambda: measure(self._workload(), pair, runner=sandbox, check=check,
                                       timeout=self.settings.workload_timeout, loops=loops)  # fmt: skip

            check = self._behaviour_check() if untimed is not None else None
            timings = interleaved(timer(first), timer(second, check), rounds)
            if untimed is not None:  # the last round's timed processes (each round clears the last's)
                why = answered_differently(untimed, timed_answers(second), pair.processes)
                if why:
                    raise ForgedTimingError(f"it answers differently when it is timed: {why}")
            if unseen := unseen_speed(timings[1], self._clock(second, timings[1], pair), pair):
                raise ForgedTimingError(f"a speed-up gi's clock does not see: {unseen}")
            return timings
