"""The per-test time limits of gi's pytest plugin (fitness/sandboxed/pytest_plugin.py), copied
beside it into a test run's tools folder as `gi_pytest_limits`; only the standard library and
pytest.

A test runs under its own limit so that one that hangs fails alone as `timed_out` and the rest
of the run still counts. Two mechanisms, the second a backstop for the first:

- **The alarm** (`Timer`: a thread of its own signalling the main one, so that neither a
  test's own alarm nor pytest-timeout's SIGALRM cancels it), in the test's own process, raises
  `TestTimeout` in the test's code (`in_tests_code`): only while one of its phases runs (setup,
  call, teardown), and never in pytest's machinery around it nor in the plugin's own code,
  where an exception would leave a report that contradicts pytest's. Run out there, it comes
  back `ALARM_RETRY_SECONDS` later.
- **The watchdog**, a process forked from the test's at the start of the session (or the warm
  worker that forked the test's process, `WorkerWatch`), stops a test the alarm cannot: C code
  that never returns to Python, a loop in pytest's own code. At the test's hard deadline
  (`hard_grace` past its limit) it stops the test's process, writes the report's records (the
  test timed out, the run was stopped) and kills it.
"""

from __future__ import annotations

import _thread
import contextlib
import hashlib
import hmac
import itertools
import json
import os
import select
import signal
import sysconfig
import time
import types
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest

#: Writes one signed record to gi's channel; `at` puts it at that place in the report's sequence.
Writer = Callable[..., None]


class TestTimeout(BaseException):
    """Raised in a test that runs past its own time limit (a BaseException, so that a test's
    `except Exception` does not swallow it)."""


#: When a test's time limit runs out while pytest's machinery runs (reading the captured
#: output, reporting, gi's plugin writing a record) or between the test's phases, the alarm
#: comes back this much later; after it raised in the test, too, while the test runs on (a
#: bare `except:` swallowed it).
ALARM_RETRY_SECONDS = 0.02
#: The hard deadline of a test: its limit and this much more (seconds, at least, or this share
#: of its limit). A test the alarm cannot stop (C code that never returns to Python, a loop in
#: pytest's own code) is stopped there by the watchdog, from another process.
HARD_GRACE_SECONDS = 5.0
HARD_GRACE_SHARE = 0.25


#: The signal a test's time limit arrives by: not SIGALRM, which a test (or pytest-timeout in
#: signal mode) may take for itself and cancel.
TIMER_SIGNAL: int = getattr(signal, "SIGRTMAX", signal.SIGUSR2)


class Timer:
    """A per-test timer of its own: a thread (started with `_thread`, so `threading.enumerate()`
    does not list it) waits for the deadline and then signals the main thread with TIMER_SIGNAL,
    whose handler stays gi's plugin's for the whole session. A test that sets and cancels an
    alarm, or pytest-timeout timing the test with SIGALRM, leaves it alone; the signal interrupts
    a sleeping or blocked test as an alarm would.

    Its state is one tuple swapped whole, and a pipe wakes the thread, so neither side ever
    waits on a lock the other may hold when the signal lands. The pipe is written only when the
    thread would otherwise wake too late (it waits for no deadline, or a later one): a test that
    ends leaves it waiting for its deadline, which the next test's normally follows, so a run of
    tests wakes it about once, not twice a test, each time taking the interpreter from them."""

    def __init__(self) -> None:
        self._pid = -1
        self._main = 0
        self._wake = (-1, -1)
        #: (test number, deadline on the monotonic clock, what to call when it passes), or None.
        self._armed: tuple[int, float, Callable[[types.FrameType | None], None]] | None = None
        self._tests = 0
        #: The test number whose deadline the thread signalled last.
        self._fired = -1
        #: The deadline the thread waits for (None: none, until woken).
        self._waiting_for: float | None = None

    def start(self, seconds: float, expire: Callable[[types.FrameType | None], None]) -> None:
        """Time a test: `expire(frame)` runs in the main thread `seconds` from now."""
        if self._pid != os.getpid():  # the first test, or a process forked since: a thread of its own
            self._pid, self._main = os.getpid(), _thread.get_ident()
            self._wake = os.pipe()
            self._waiting_for = None
            signal.signal(TIMER_SIGNAL, self._signalled)
            _thread.start_new_thread(self._watch, ())
        self._tests += 1
        self._arm((self._tests, time.monotonic() + seconds, expire))

    def again(self, seconds: float) -> None:
        """Signal the same test once more, `seconds` from now (called from `expire`)."""
        armed = self._armed
        if armed is not None:
            self._arm((armed[0], time.monotonic() + seconds, armed[2]))

    def stop(self) -> None:
        """The test ended: the thread finds no test armed at the deadline it waits for."""
        self._armed = None

    def _arm(self, armed: tuple[int, float, Callable[[types.FrameType | None], None]]) -> None:
        self._armed = armed
        waiting_for = self._waiting_for
        if waiting_for is None or armed[1] < waiting_for:
            os.write(self._wake[1], b".")

    def _signalled(self, signum: int, frame: types.FrameType | None) -> None:
        armed = self._armed
        if armed is not None and armed[0] == self._fired:  # (a late signal for a test that ended: nothing)
            armed[2](frame)

    def _watch(self) -> None:
        signalled = None
        while True:
            armed = self._armed
            deadline = self._waiting_for = None if armed is None or armed is signalled else armed[1]
            if self._armed is not armed:  # armed meanwhile, seeing the deadline waited for before
                continue
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if select.select([self._wake[0]], [], [], wait)[0]:
                os.read(self._wake[0], 4096)
                continue
            if armed is not None and armed is self._armed and armed[1] <= time.monotonic():
                signalled, self._fired = armed, armed[0]
                signal.pthread_kill(self._main, TIMER_SIGNAL)


def hard_grace(limit: float) -> float:
    """Seconds past a test's limit before the watchdog stops it."""
    return max(HARD_GRACE_SECONDS, HARD_GRACE_SHARE * limit)


def deadline_records(test: str, limit: float, canary: bool) -> list[dict[str, Any]]:
    """What the watchdog writes into the report when it stops `test` at its hard deadline: the
    test timed out (a canary's clone: it failed), and the run was stopped."""
    stopped = (f"{test} ran past its time limit of {limit:.3g} s in code the limit could not interrupt (C code,"
               " or pytest's own): it was stopped, and the rest of the test run with it")  # fmt: skip
    if canary:
        return [{"canary": test, "outcome": "error"}, {"stopped": stopped}]
    ended = {"finish": test, "outcome": "timed_out", "duration": limit + hard_grace(limit), "failure": stopped}
    return [ended, {"stopped": stopped}]


def start_watchdog(descriptor: int, write: Writer) -> Callable[[dict[str, Any]], None]:
    """Start the watchdog, a process of its own forked from this one that writes to gi's
    channel (`descriptor`) with `write`, and return how to tell it of each test: {"at": its
    hard deadline (time.monotonic()), "sequence": the place of the report's next record,
    "test": its node id, "limit": its limit, "canary": whether it is a canary's clone}, or {}
    when the test ended. At a deadline it stops this process (SIGSTOP: no record of ours can be
    on its way then, since we tell it first), writes the `deadline_records` and kills it. A
    test's code cannot hold it back: it needs no interpreter lock of ours, and C code never
    returning to Python does not reach it. What it writes, it makes itself: code that finds its
    pipe can move its deadline, never have it sign a record of its choosing."""
    parent = os.getpid()
    commands, tell = os.pipe()
    pid = os.fork()
    if pid == 0:  # the watchdog
        try:
            os.close(tell)
            _only(descriptor, commands)
            _watch(commands, parent, write)
        finally:
            os._exit(0)
    os.close(commands)
    return teller(tell)


def teller(descriptor: int) -> Callable[[dict[str, Any]], None]:
    """How to tell a watchdog of each test (see `start_watchdog`): JSON lines on `descriptor`, to
    the watchdog process, or to the warm worker that watches its child (`WorkerWatch`). An end
    told while nothing is armed (a test's protocol ends just after its last report) is not sent:
    the watchdog knows."""
    armed = [False]

    def send(message: dict[str, Any]) -> None:
        if not message and not armed[0]:
            return
        armed[0] = bool(message)
        data = (json.dumps(message) + "\n").encode()
        while data:
            data = data[os.write(descriptor, data) :]

    return send


def _only(*kept: int) -> None:
    """In the watchdog: no descriptor open but `kept` (stdout and stderr go to /dev/null), so
    nobody waits on a pipe only the watchdog holds."""
    nothing = os.open(os.devnull, os.O_RDWR)
    for standard in (0, 1, 2):
        os.dup2(nothing, standard)
    bounds = [2, *sorted(kept), max(os.sysconf("SC_OPEN_MAX"), max(kept) + 1)]
    for low, high in itertools.pairwise(bounds):
        os.closerange(low + 1, high)


def _deadline(line: bytes) -> tuple[float, int, list[dict[str, Any]]] | None:
    """A deadline the watchdog was told, as (when, the report's place, the records to write),
    or None (the test ended, or a line it cannot read)."""
    try:
        told = json.loads(line)
        at, sequence, test = float(told["at"]), int(told["sequence"]), str(told["test"])
        return at, sequence, deadline_records(test, float(told["limit"]), bool(told["canary"]))
    except (ValueError, TypeError, KeyError):
        return None


def _watch(commands: int, parent: int, write: Writer) -> None:
    """The watchdog's loop: read deadlines; at one, stop the test's process, write the records
    and kill it; return when the test's process is gone (its end of the pipe closed)."""
    armed: tuple[float, int, list[dict[str, Any]]] | None = None
    pending = b""
    while True:
        wait = max(0.0, armed[0] - time.monotonic()) if armed else None
        if select.select([commands], [], [], wait)[0]:
            chunk = os.read(commands, 65536)
            if not chunk:
                return
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                armed = _deadline(line)
            continue
        if armed is None or os.getppid() != parent:  # the test's process is gone; its children hold the pipe
            return
        os.kill(parent, signal.SIGSTOP)
        if select.select([commands], [], [], 0)[0]:  # the test ended as the deadline struck
            os.kill(parent, signal.SIGCONT)
            continue
        _, sequence, records = armed
        for place, record in enumerate(records):
            write(record, at=sequence + place)
        os.kill(parent, signal.SIGKILL)
        return


#: The most of an unfinished line a worker keeps of what its child tells (`WorkerWatch.read`).
TOLD_BYTES = 4096


class WorkerWatch:
    """The watchdog's part, done by a warm worker for the child it forked (so that no child forks
    a watchdog of its own): the deadlines the child tells on a pipe (GI_WATCHDOG_FD in the
    child, `descriptor` here), as `_watch` reads them. At one, the worker stops the child, writes
    the `deadline_records` the deadline names (signed with the child's key, at its place in the
    report: `stop`) and kills it."""

    def __init__(self, descriptor: int) -> None:
        self.descriptor = descriptor
        self.armed: tuple[float, int, list[dict[str, Any]]] | None = None
        self._pending = b""

    def read(self) -> bool:
        """Take what the child told (the pipe is readable); False once it closed the pipe."""
        chunk = os.read(self.descriptor, 65536)
        if not chunk:
            self.armed = None
            return False
        *lines, self._pending = (self._pending + chunk).split(b"\n")
        self._pending = self._pending[-TOLD_BYTES:]  # (a line longer than any deadline is dropped)
        for line in lines:
            self.armed = _deadline(line)
        return True

    def seconds_left(self) -> float | None:
        """Seconds to the armed deadline (0 when it passed), or None when nothing is armed."""
        return None if self.armed is None else max(0.0, self.armed[0] - time.monotonic())

    def stop(self, pid: int, channel: int, key: bytes) -> bytes | None:
        """At the armed deadline, as the forked watchdog would (`_watch`): stop the child `pid`, and
        unless it told of its test's end meanwhile (None: go on), kill it and return what is left to
        read of its report on `channel`, then the deadline's records, signed with `key` at their
        places in the report's sequence."""
        assert self.armed is not None
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGSTOP)
        if select.select([self.descriptor], [], [], 0)[0]:  # the test ended as the deadline struck
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGCONT)
            return None
        left = b""
        while select.select([channel], [], [], 0)[0] and (chunk := os.read(channel, 65536)):
            left += chunk
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        _, sequence, records = self.armed
        self.armed = None
        for place, record in enumerate(records):
            text = json.dumps(record, separators=(",", ":"))
            mac = hmac.new(key, f"{sequence + place}:{text}".encode(), hashlib.sha256).hexdigest()
            left += f"{mac} {text}\n".encode()
        return left


class Places(NamedTuple):
    """Where the code lives that the per-test alarm tells apart from the test's."""

    #: pytest's, pluggy's and gi's plugin's folders and files.
    machinery: tuple[str, ...]
    #: gi's plugin's files: where the alarm never raises.
    ours: tuple[str, ...]
    #: What runs on behalf of whichever called it: the standard library, frozen modules, code
    #: compiled from text (a dataclass's __init__).
    on_behalf: tuple[str, ...]
    #: The code of the function that runs each phase of a test and makes what it raised the
    #: test's failure: the frames it calls are the phase's.
    runner: types.CodeType


#: The standard library's folder, found once (a warm worker's children each asked again).
_STANDARD_LIBRARY = sysconfig.get_paths()["stdlib"] + os.sep


def machinery_places(*plugin_files: str) -> Places:
    """Where pytest's, pluggy's and gi's plugin's code lives (`plugin_files`: the plugin's), and
    the rest of `Places`."""
    import _pytest
    import pluggy
    from _pytest.runner import CallInfo

    folders = (os.path.dirname(module.__file__) + os.sep for module in (pytest, _pytest, pluggy) if module.__file__)
    ours = (__file__, *plugin_files)
    runner = getattr(CallInfo.from_call, "__func__", CallInfo.from_call).__code__
    return Places((*folders, *ours), ours, ("<", _STANDARD_LIBRARY), runner)


#: Code compiled from text that is the test's own, not run on behalf of its caller: a doctest's
#: examples (run by the standard library's doctest, for pytest).
_TESTS_TEXT = "<doctest "


def in_tests_code(frame: types.FrameType | None, places: Places) -> bool:
    """Whether the interrupted code (`frame`, and its callers up to the phase's runner) is the
    test's, where its time limit may raise: its own code runs, or pytest's or the standard
    library's that its own code called (`pytest.approx`, a doctest's examples). Not so in this
    plugin's code (a record cut in half), nor in pytest's machinery around the test (reading the
    captured output, making the report), nor outside a phase: a test timed out there would
    leave a report that contradicts pytest's, scored as tampered with."""
    innermost = True
    while frame is not None and frame.f_code is not places.runner:
        file = frame.f_code.co_filename
        if innermost and file in places.ours:
            return False
        if not file.startswith(places.machinery) and (
            not file.startswith(places.on_behalf) or file.startswith(_TESTS_TEXT)
        ):
            return True
        innermost = innermost and file.startswith(places.on_behalf)
        frame = frame.f_back
    return False
