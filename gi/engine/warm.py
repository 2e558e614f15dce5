"""Warm test workers: the fast path for the training tests.

A cold test run pays for a workspace copy, bubblewrap, a fresh interpreter and pytest's
start-up, for tests that may take milliseconds. A `WarmPool` keeps one warm worker per
evaluation slot (fitness/sandboxed/warm_worker.py): a long-lived process in the same sandbox, with the
same limits, that has pytest and the project's third-party dependencies imported and forks a
fresh child per variant. The child imports the variant's editable modules from their
sources and runs pytest with gi's plugin, so the report is signed and checked exactly as a
cold run's (`gi.fitness.tests.read_report`). The worker's copy of the program is read-only to
it and to the children; only the variant's edited files travel, as text.

A worker that dies (a variant may kill it: it runs in the same PID namespace) or stops
answering is replaced, and the variant that did it scores as crashed. The held-out tests get
warm workers of their own, in copies that hold them (`SuiteRuns.warm_holdout`), once a warm
run of the original agreed with the cold one (`HeldOut.check_warm`). The cold path stays: it is
the reference (the original's runs), it runs the rest (coverage, timings), and `warm_unsafe`
says which projects it is kept for.
"""

from __future__ import annotations

import ast
import base64
import contextlib
import itertools
import json
import os
import queue
import re
import secrets
import struct
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from gi.config.machine import usable_cores
from gi.engine.project import own_modules
from gi.engine.sandbox.limits import Limits
from gi.engine.sandbox.runner import LiveCommand, Sandbox, is_over_quota
from gi.engine.sandbox.workspace import Workspace, workspace
from gi.fitness.pytest_diagnosis import last_error_line
from gi.fitness.sandboxed import FOLDER as SANDBOXED
from gi.fitness.tests import (
    DEFAULT_SETUP,
    NO_CHECKS,
    Checks,
    PytestSetup,
    TestRun,
    install_plugin,
    plugin_files,
    pytest_arguments,
    read_report,
)
from gi.model.program import Program, parse_quietly
from gi.model.results import ProcessOutcome

WORKER_NAME = "gi_warm_worker.py"
#: What the worker imports, installed beside it (fitness/sandboxed/warm_imports.py).
IMPORTS_NAME = "gi_warm_imports.py"
#: How the worker cleans between children, installed beside it (fitness/sandboxed/warm_cleaning.py).
CLEANING_NAME = "gi_warm_cleaning.py"
#: How the worker forks its children ahead of their variants, installed beside it
#: (fitness/sandboxed/warm_spare.py).
SPARE_NAME = "gi_warm_spare.py"
#: Seconds a new worker may take to import pytest and the project's dependencies.
START_TIMEOUT = 120.0
#: Seconds gi waits past a request's own limit before it gives up on the worker.
ANSWER_MARGIN = 10.0
#: Seconds a worker may take to settle a run after answering it (the child's end, its processes
#: reaped, the folders it wrote emptied) before gi replaces it.
SETTLE_TIMEOUT = 120.0

#: Code in the tests or the editable files that reads a module's file from disk itself, or
#: starts a Python that ignores PYTHONPATH (-I, -E): a warm worker keeps the original on disk
#: and serves the variant through its import system (to the Python processes the tests start
#: too, see fitness/sandboxed/warm_worker.py), so such a project keeps the cold path.
_SPAWNS = re.compile(r"\b(runpy|spec_from_file_location|SourceFileLoader|run_path)\b|[\"']-[IE]S?[\"']")


def disagreement(cold: Mapping[str, str], warm: TestRun) -> str:
    """How the warm path's run of the original differs from the cold path's outcomes (`cold`),
    in a few words naming the first test that differs; "" when they agree."""
    if warm.forged:
        return f"its report could not be trusted: {warm.forged}"
    if warm.started_without_variant:
        return f"a test started a process the warm path cannot hand the variant to: {warm.started_without_variant}"
    if cold and not warm.outcomes:
        why = last_error_line(warm.failure_report() or warm.output_tail)
        return f"it collected no test of {len(cold)}: {why}"
    for test in [*cold, *(test for test in warm.outcomes if test not in cold)]:
        if cold.get(test) != warm.outcomes.get(test):
            said = last_error_line(warm.failures[test]) if test in warm.failures else ""
            return (f"{test}: {cold.get(test, 'not collected')} cold, {warm.outcomes.get(test, 'not collected')} warm"
                    + (f": {said}" if said else ""))  # fmt: skip
    return ""


class WarmError(Exception):
    """A warm worker could not start or stopped answering."""


def warm_unsafe(program: Program, test_texts: Sequence[str]) -> str | None:
    """Why the warm path would be wrong for this project, or None: its tests or code read the
    editable files from disk by themselves, or start a Python that ignores PYTHONPATH."""
    for name, text in [*program.sources.items(), *(("tests", text) for text in test_texts)]:
        found = _SPAWNS.search(text)
        if found:
            return f"{name} uses {found.group(0)}: it would read the original from disk, not the variant"
    return None


def third_party_imports(program: Program, test_texts: Sequence[str], import_roots: Sequence[str] = ()) -> list[str]:
    """Top-level modules the project imports that are not its own: preloaded by the workers
    (the project's own modules never are: a child would find the original's already imported,
    and run it in place of its variant). Its own: what lies in the root and in each import
    root (`src` of a src layout)."""
    own = own_modules(program.root, program.files, import_roots)
    found: set[str] = set()
    for text in [*program.sources.values(), *test_texts]:
        try:
            tree = parse_quietly(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return sorted(name for name in found - own if name.isidentifier() and name not in sys.builtin_module_names)


class WarmWorker:
    """One warm worker process in its own workspace of the original program."""

    def __init__(
        self,
        limits: Limits,
        space: Workspace,
        preload: Sequence[str],
        setup: PytestSetup = DEFAULT_SETUP,
        editable: Sequence[str] = (),
        populate: bool = True,
    ) -> None:
        """Start a worker in `space` (the original's copy); it imports `preload` and compiles the
        `editable` files (relative paths) once. With `populate`, each spare child copies ahead
        the pages children write (fitness/sandboxed/warm_spare.py), on a core the running tests
        leave free: where every core runs a worker's tests, that work only competes with them."""
        self.sandbox = Sandbox(limits, space)
        install_plugin(self.sandbox.install_tool)
        self.sandbox.install_tool(IMPORTS_NAME, (SANDBOXED / "warm_imports.py").read_text(encoding="utf-8"))
        self.sandbox.install_tool(CLEANING_NAME, (SANDBOXED / "warm_cleaning.py").read_text(encoding="utf-8"))
        self.sandbox.install_tool(SPARE_NAME, (SANDBOXED / "warm_spare.py").read_text(encoding="utf-8"))
        script = self.sandbox.install_tool(WORKER_NAME, (SANDBOXED / "warm_worker.py")
                                           .read_text(encoding="utf-8"))  # fmt: skip
        # What the worker empties between variants: what a variant may write, and in the sandbox
        # its own /tmp, /dev/shm and message queues, and its own IPC namespace's objects.
        writable = [space.temporary, space.outputs]
        if self.sandbox.isolated:
            writable += [Path("/tmp"), Path("/dev/shm"), Path("/dev/mqueue")]
        env = {"PYTHONPATH": setup.pythonpath(self.sandbox.tools, self.sandbox.workdir),
               "GI_WRITABLE": ":".join(map(str, writable)),
               "GI_OWN_IPC": "1" if self.sandbox.isolated else "",
               "GI_OWN_PIDS": "1" if self.sandbox.isolated else "",
               "GI_DISK_FILES": str(limits.disk_files),
               "GI_BLOCKED_PLUGINS": ",".join(blocked_plugins(setup.options)),
               "GI_EDITABLE": os.pathsep.join(editable),
               "GI_POPULATE": "1" if populate else ""}  # fmt: skip
        self.live: LiveCommand = self.sandbox.start([setup.python, str(script), *preload], env=env)
        self.broken = False
        #: Why gi stopped waiting for the worker's last answer ("" for no reason of its own: it
        #: answered, or died).
        self.stopped = ""
        ready = self._answer(START_TIMEOUT)
        if ready != {"ready": True}:
            self.close()
            raise WarmError(f"the warm worker did not start: {self.live.stderr.text()[-500:]}")
        #: The runs whose child started from the worker's prepared pytest configuration.
        self.prepared_runs = 0
        #: The runs whose child was a spare forked to populate pages (fitness/sandboxed/warm_spare.py).
        self.populated_runs = 0
        #: Whether the worker has answered a run and not yet said it has settled it.
        self.unsettled = False

    def _answer(self, timeout: float, refused: int = 0) -> dict[str, Any] | None:
        """The worker's next answer; None if it died, ran past `timeout`, or its processes
        turned into a fork bomb (more refused forks than `refused`, what the cap had refused) or,
        without bubblewrap, filled its folders past their quota."""
        deadline = time.monotonic() + timeout
        header, self.stopped = self.live.read(4, deadline, refused)
        if header is None:
            return None
        body, self.stopped = self.live.read(struct.unpack(">I", header)[0], deadline, refused)
        return None if body is None else dict(json.loads(body))

    def run(self, request: dict[str, Any], timeout: float) -> ProcessOutcome | None:
        """Send one request; its outcome, or None when the worker died or stopped answering (or
        never settled its last run)."""
        if not self.settled():
            return None
        data = json.dumps(request).encode()
        refused = self.live.cgroups.refused_forks()
        try:
            _write_all(self.live.requests, struct.pack(">I", len(data)) + data)
        except OSError:
            return None
        answer = self._answer(timeout + ANSWER_MARGIN, refused)
        if answer is None or "returncode" not in answer:
            return None
        self.unsettled = True
        self.prepared_runs += bool(answer.get("prepared"))
        self.populated_runs += bool(answer.get("spare_pages"))
        return ProcessOutcome(
            returncode=int(answer["returncode"]),
            stdout=str(answer["stdout"]),
            stderr=str(answer["stderr"]),
            seconds=float(answer["seconds"]),
            timed_out=bool(answer["timed_out"]),
            channel=base64.b64decode(answer["channel"]),
            channel_overflow=bool(answer["channel_overflow"]),
            resource=str(answer.get("resource", "")),
            started_without_variant=str(answer.get("started_without_variant", "")),
        )

    def settled(self) -> bool:
        """Whether the worker is ready for the next variant: it answers a run before it settles
        it (the child's end, the processes it left, the folders it wrote), and says when it has.
        False when it died or did not settle within SETTLE_TIMEOUT."""
        if self.unsettled:
            self.unsettled, self.broken = False, True  # (until it says so)
            self.broken = self._answer(SETTLE_TIMEOUT, self.live.cgroups.refused_forks()) != {"settled": True}
        return not self.broken

    def close(self) -> None:
        self.live.stop()


def blocked_plugins(options: Sequence[str]) -> list[str]:
    """The plugins pytest's `options` block (`-p no:NAME`): the worker need not import them."""
    return [option[3:] for flag, option in itertools.pairwise(options) if flag == "-p" and option.startswith("no:")]


def _write_all(descriptor: int, data: bytes) -> None:
    while data:
        data = data[os.write(descriptor, data) :]


class WarmPool:
    """Warm workers for one program, one per evaluation slot, each in its own workspace."""

    def __init__(self, program: Program, limits: Limits, size: int, *, preload: Sequence[str] = (),
                 exclude: Sequence[Path] = (), scratch: Path | None = None,
                 setup: PytestSetup = DEFAULT_SETUP, files: Mapping[str, str] | None = None,
                 spare_pages: bool | None = None) -> None:  # fmt: skip
        """`files`: written into every worker's copy over the project's (test files without the
        held-out tests split off within them); `spare_pages`: the workers' `populate` (None:
        where the pool's workers leave a core free)."""
        self.spare_pages = size < usable_cores() if spare_pages is None else spare_pages
        self.files = dict(files or {})
        self.program = program
        self.limits = limits
        self.preload = list(preload)
        self.exclude = tuple(exclude)
        self.scratch = scratch
        self.setup = setup
        self._idle: queue.Queue[tuple[WarmWorker, ExitStack]] = queue.Queue()
        self._all: list[tuple[WarmWorker, ExitStack]] = []
        self._lock = threading.Lock()
        self.size = size
        self._starting = 0
        self._closed = False
        self.started = 0
        self.replaced = 0
        #: Runs whose child started from a prepared pytest configuration (fitness/sandboxed/warm_worker.py).
        self.prepared_runs = 0
        #: Runs whose child was a spare forked to populate pages (fitness/sandboxed/warm_spare.py).
        self.populated_runs = 0
        self._spawns: queue.Queue[queue.Queue[tuple[WarmWorker, ExitStack] | BaseException] | None] = queue.Queue()
        threading.Thread(target=self._spawner, name="gi-warm-spawner", daemon=True).start()

    def _new(self) -> tuple[WarmWorker, ExitStack]:
        """A new worker, started from the pool's own long-lived thread: bubblewrap dies with the
        thread that started it (--die-with-parent), and the evaluator's threads come and go."""
        done: queue.Queue[tuple[WarmWorker, ExitStack] | BaseException] = queue.Queue()
        with self._lock:  # (ahead of close's end of the spawner, or not at all)
            if self._closed:
                raise WarmError("the warm pool is closed")
            self._spawns.put(done)
        made = done.get()
        if isinstance(made, BaseException):
            raise made
        return made

    def _spawner(self) -> None:
        while (done := self._spawns.get()) is not None:
            try:
                done.put(self._start())
            except BaseException as error:  # handed to the thread that asked
                done.put(error)

    def _start(self) -> tuple[WarmWorker, ExitStack]:
        stack = ExitStack()
        space = stack.enter_context(workspace(self.program.root, self.files, parent=self.scratch, exclude=self.exclude))
        try:
            worker = WarmWorker(self.limits, space, self.preload, self.setup, self.program.files,
                                populate=self.spare_pages)  # fmt: skip
        except BaseException:
            stack.close()
            raise
        stack.callback(worker.close)
        with self._lock:
            closed = self._closed
            if not closed:
                self._all.append((worker, stack))
                self.started += 1
        if closed:  # started as the pool closed: nothing would ever stop it
            stack.close()
            raise WarmError("the warm pool is closed")
        return worker, stack

    def _take(self) -> tuple[WarmWorker, ExitStack]:
        """An idle worker, or a new one while fewer than `size` live: past that, a thread waits
        for one (an early confirmation beside the generation's evaluations, say), so a run never
        holds more workers than `evaluation.workers` asks for."""
        idle: tuple[WarmWorker, ExitStack] | None = None
        while True:
            with self._lock:
                if self._closed:  # a thread still waiting as the run ends: its workers are gone
                    raise WarmError("the warm pool is closed")
                if idle is not None:
                    return idle
                with contextlib.suppress(queue.Empty):
                    return self._idle.get_nowait()
                may_start = len(self._all) + self._starting < self.size
                if may_start:
                    self._starting += 1
            if may_start:
                try:
                    return self._new()
                finally:
                    with self._lock:
                        self._starting -= 1
            with contextlib.suppress(queue.Empty):  # (and a worker retired meanwhile lets one start)
                idle = self._idle.get(timeout=0.05)

    @contextmanager
    def _worker(self) -> Iterator[WarmWorker]:
        entry = self._take()
        while not entry[0].settled():  # what its last variant left could not be undone: a new one
            self._retire(entry)
            entry = self._take()
        healthy = True
        try:
            yield entry[0]
            healthy = entry[0].live.alive() and not entry[0].broken
        except BaseException:
            healthy = False
            raise
        finally:
            if healthy:
                self._idle.put(entry)
            else:
                self._retire(entry)

    def _retire(self, entry: tuple[WarmWorker, ExitStack]) -> None:
        with self._lock:
            if entry in self._all:
                self._all.remove(entry)
            self.replaced += 1
        entry[1].close()

    def run_tests(
        self,
        sources: Mapping[str, str],
        paths: Sequence[str],
        *,
        timeout: float,
        limits: Mapping[str, float],
        default_limit: float,
        order: Sequence[str] = (),
        first_failure: bool = False,
        checks: Checks = NO_CHECKS,
        selected: Sequence[str] | None = None,
    ) -> TestRun:
        """Run the tests on the variant whose edited files are `sources` (relative path -> text):
        what `gi.fitness.tests.run_tests` gives on a cold copy (`order`, `first_failure`, `checks`
        and `selected` as there)."""
        changed = {file: text for file, text in sources.items() if text != self.program.sources.get(file)}
        key = secrets.token_hex(32)
        with self._worker() as worker:
            modules = self.setup.module_files(worker.sandbox.workdir)
            env = plugin_files(worker.sandbox.install_tool, limits, default_limit, order, modules, selected)
            argv = pytest_arguments(paths, first_failure=first_failure, options=self.setup.options)
            request: dict[str, Any] = {"sources": changed, "argv": argv, "env": env,
                                       "key": key + checks.plan().decode(), "timeout": timeout}  # fmt: skip
            if selected is not None:
                # Only the selected tests are collected: the worker's prepared configuration (the
                # training paths' rootdir and settings) takes them as its arguments.
                request["args"] = list(selected)
                request["selected_argv"] = pytest_arguments(selected, first_failure=first_failure,
                                                            options=self.setup.options)  # fmt: skip
            before, populated = worker.prepared_runs, worker.populated_runs
            outcome = worker.run(request, timeout)
            with self._lock:
                self.prepared_runs += worker.prepared_runs - before
                self.populated_runs += worker.populated_runs - populated
            if outcome is None:
                worker.broken = True  # it died, stopped answering or was stopped: the pool replaces it
                why = worker.stopped or "the warm worker died or stopped answering (the variant may have killed it)"
                resource = why if is_over_quota(why) else ""
                outcome = ProcessOutcome(returncode=-9, stdout="", stderr=why, seconds=0.0, resource=resource)
        return read_report(outcome, key.encode(), checks)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            entries, self._all = self._all, []
            self._spawns.put(None)
        for _, stack in entries:
            stack.close()
