"""gi's warm test worker: one long-lived process that forks a fresh child per variant.

gi copies this file into a workspace's read-only tools folder and starts it in the sandbox
with the original program's copy as its working directory. It imports pytest, pytest's
plugins and the project's third-party dependencies once (never the project's own modules),
then serves requests on GI_REQUEST_FD and answers on GI_RESPONSE_FD, both framed as a 4-byte
length and JSON. Each request goes to a child: where a core is free for it, one forked ahead
while the last variant's tests ran, which meanwhile copied the pages of the worker's memory that
children write (a spare, warm_spare.py), else one forked as the request comes. The child:

- closes the worker's pipes, starts a session of its own (its own process group and scheduling
  autogroup), takes the report key on stdin and its own stdout/stderr pipes, exactly as a cold
  `python -m pytest` run would;
- imports the variant's editable modules from the sources in the request (a finder ahead of
  the file system serves them, under their real file names, so tracebacks show the variant),
  and so does every Python process its tests start (a subprocess, a multiprocessing spawn):
  the child leaves the sources and a `sitecustomize` that installs the same finder in its
  TMPDIR and puts that folder first on their PYTHONPATH, and notes each process started
  without it (`watch_spawns`), which the answer names;
- runs pytest with gi's plugin, and exits with pytest's status.

The project's test modules and conftest.py files are the same for every variant (tests are
never editable, and the copy is read-only), and so are gi's plugin and the modules beside it in
the tools folder: the worker rewrites their asserts once, as pytest's assertion rewriter would,
and children take the rewritten code from it when a file's source is unchanged
(`cache_rewrites`; on toolz's suite this was most of a child's time, since no bytecode cache is
written in the sandbox; gi's plugin alone was a third of a small suite's child). The worker
also imports gi's plugin itself, deferred: each child has it read its own key and plan and make
its hooks (`activate_report_plugin`) before pytest loads it. And it fills once what pytest reads
to show a failure, which each failing variant's child built anew (the standard library's map of
module files, the test modules' lines, `warm_source_lookups`; the trees of the test modules and
the original's files, `cache_statement_ranges`; the paths of the installed Python's frames, each
of which pytest checks exists, `cache_installed_paths`), and the patterns pytest's collection
matches files and folders against (`warm_collection_patterns`). It also watches each
child's per-test deadlines itself (`WorkerWatch`), so no child forks a watchdog.

pytest's start-up (its plugin manager, the command line and ini parsing, the assertion
rewriter, every plugin's configuration, the session's start with its fixtures parsed from
every plugin) is the same for every variant, and was most of a small suite's child. So where
nothing of the project runs during it (no conftest.py in the project), the worker starts
pytest's session itself, for one command line at a time, and serves from inside it: where
pytest would collect the tests, the worker registers gi's plugin's hooks and freezes pytest's
machinery with them (as the plugin does at a cold session's start), forks, and each child goes
on from there into pytest's own collection, test loop and session end (`Prepared`). The child
first reads its key and plan into the plugin's hooks (from stdin, as under `-p`), takes its own
stdout and stderr where the configuration copied the worker's, starts output capturing afresh
and runs the session start of what is its own: gi's plugin's (its time limits' watchdog) and
the terminal reporter's clock. If preparing imported any module of the project, started a
thread or failed, the worker drops it and children run `pytest.main` from the start.

The worker waits for the child within the request's limit (a child that ends closes its pipes
and says its exit status first, `finish_child`), kills its process group and answers with the
exit status, the tails of stdout and stderr and the signed report, exactly what gi reads from a
cold run. Then, while gi takes the answer in, it settles the run (`Finished`): it kills every
process of the variant and reaps them, the child's end with them (the worker is their
subreaper), but the spare, empties every folder a variant may write and removes the System V
objects of its IPC namespace (`clean_slate`: the next variant finds nothing of this one), lets
the spare go on or drops it (`Spares.settle`), and says it has settled; gi sends the next
variant only to a worker that has. It needs only the standard library and pytest. What it
imports and compiles once, and how a child imports its variant (`preload`, `CompiledOriginals`,
`cache_rewrites`, `import_deferred`, `warm_source_lookups`, `cache_statement_ranges`,
`cache_installed_paths`, `warm_collection_patterns`, `VariantFinder`, `serve_spawned`), is
warm_imports.py, which gi installs beside it as gi_warm_imports.py; how a spare is forked,
handed its request and learns the pages it writes ahead, warm_spare.py (gi_warm_spare.py); the
settling, warm_cleaning.py (gi_warm_cleaning.py).
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import gc
import importlib
import linecache
import os
import select
import signal
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

if __package__:  # imported from gi's package (by gi's own tests and type checks)
    from .pytest_limits import WorkerWatch
    from .warm_cleaning import (
        END_SECONDS,
        clear_keyrings,
        empty,
        ended,
        files_in,
        own_session_keyring,
        reap_everything,
        remove_ipc,
    )
    from .warm_imports import (
        REWRITTEN,
        VariantFinder,
        cache_installed_paths,
        cache_rewrites,
        cache_statement_ranges,
        import_deferred,
        preload,
        serve_compiled_originals,
        serve_spawned,
        started_without_variant,
        tool_files,
        warm_collection_patterns,
        warm_source_lookups,
    )
    from .warm_spare import PAGES_BYTES, ChildEnds, Spares, own_pages, receive, send, write_all
else:  # a workspace's tools folder, where gi copies it beside this file
    WorkerWatch = importlib.import_module("gi_pytest_limits").WorkerWatch  # type: ignore[misc]  # the same class
    _cleaning = importlib.import_module("gi_warm_cleaning")
    empty, reap_everything, remove_ipc = _cleaning.empty, _cleaning.reap_everything, _cleaning.remove_ipc
    clear_keyrings, own_session_keyring = _cleaning.clear_keyrings, _cleaning.own_session_keyring
    END_SECONDS, ended, files_in = _cleaning.END_SECONDS, _cleaning.ended, _cleaning.files_in
    _imports = importlib.import_module("gi_warm_imports")
    VariantFinder = _imports.VariantFinder  # type: ignore[misc]  # the same class, by another import
    cache_rewrites, preload, tool_files = _imports.cache_rewrites, _imports.preload, _imports.tool_files
    serve_compiled_originals, serve_spawned = _imports.serve_compiled_originals, _imports.serve_spawned
    started_without_variant = _imports.started_without_variant
    REWRITTEN, import_deferred = _imports.REWRITTEN, _imports.import_deferred
    warm_collection_patterns, warm_source_lookups = _imports.warm_collection_patterns, _imports.warm_source_lookups
    cache_installed_paths, cache_statement_ranges = _imports.cache_installed_paths, _imports.cache_statement_ranges
    _spare = importlib.import_module("gi_warm_spare")
    ChildEnds, Spares = _spare.ChildEnds, _spare.Spares  # type: ignore[misc]  # the same classes
    own_pages, receive, send, write_all = _spare.own_pages, _spare.receive, _spare.send, _spare.write_all
    PAGES_BYTES = _spare.PAGES_BYTES

OUTPUT_BYTES = 256 * 1024
#: In a child: the pipe on which `finish_child` tells the worker its exit status (-1: none), and
#: the one on which it lists the pages it wrote, before that (-1: the worker does not learn from it).
ENDING = -1
PAGES = -1
CHANNEL_BYTES = 8 * 1024 * 1024
PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4


#: gi's report plugin (gi.fitness.tests.PLUGIN_MODULE): imported in the worker, its hooks made
#: and registered in each child (`activate_report_plugin`).
REPORT_PLUGIN = "gi_pytest_report"
#: Set while the worker imports it (the plugin's DEFERRED): it reads no key and makes no hooks then.
REPORT_DEFERRED = "GI_REPORT_DEFERRED"


def without_report_plugin(argv: Sequence[str]) -> list[str]:
    """The command line without `-p gi_pytest_report`, which each child loads itself."""
    kept: list[str] = []
    for word in argv:
        if word == REPORT_PLUGIN and kept and kept[-1] == "-p":
            kept.pop()
        else:
            kept.append(word)
    return kept


def project_modules() -> list[str]:
    """The imported modules whose files lie in the project (the working directory)."""
    root = os.getcwd() + os.sep
    found = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and os.path.abspath(file).startswith(root):
            found.append(name)
    return found


def stdio_duplicates() -> dict[int, int]:
    """The descriptors, other than 0-2, that are copies of this process's stdout or stderr (as
    pytest's faulthandler plugin makes one of stderr as it is configured), each with the one it
    copies: a child gives them its own stdout and stderr, as a cold run's are."""
    found: dict[int, int] = {}
    try:
        standard = {(os.fstat(fd).st_dev, os.fstat(fd).st_ino): fd for fd in (1, 2)}
        descriptors = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return found
    for descriptor in descriptors:
        if descriptor > 2 and descriptor not in (REQUEST, RESPONSE):
            with contextlib.suppress(OSError):
                status = os.fstat(descriptor)
                if (status.st_dev, status.st_ino) in standard:
                    found[descriptor] = standard[(status.st_dev, status.st_ino)]
    return found


class Session:
    """A pytest session prepared in the worker, up to the tests' collection: the children of one
    command line continue it (`join`)."""

    def __init__(self, config: Any, session: Any, duplicates: dict[int, int]) -> None:
        self.config = config
        self.session = session
        self.duplicates = duplicates

    def join(self) -> None:
        """In a child: take its own stdout and stderr where the configuration copied the worker's,
        start output capturing afresh and run the session start of what is the child's alone: gi's
        plugin (the worker registered its hooks and froze pytest's machinery with them; the child
        has read its key, as under `-p`) and the terminal reporter (the session's clock and
        header)."""
        for descriptor, standard in self.duplicates.items():
            os.dup2(standard, descriptor)
        manager = self.config.pluginmanager
        if manager.get_plugin(REPORT_PLUGIN) is None and not manager.is_blocked(REPORT_PLUGIN):
            manager.import_plugin(REPORT_PLUGIN)  # the worker could not prepare it: the child loads it
        capture = manager.getplugin("capturemanager")
        capture.start_global_capturing()
        capture.suspend_global_capture()  # as pytest leaves it after its start-up
        own = [manager.get_plugin(REPORT_PLUGIN), manager.get_plugin("terminalreporter")]
        others = [plugin for plugin in manager.get_plugins() if plugin not in own]
        manager.subset_hook_caller("pytest_sessionstart", others)(session=self.session)


class Prepared:
    """pytest's start-up prepared in the worker, for one command line at a time (see the module's
    docstring); unusable when the project has a conftest.py, or when preparing imported the
    project's code, started a thread or failed."""

    def __init__(self, spares: Spares) -> None:
        self.usable = not any("conftest.py" in files for _, _, files in os.walk(os.getcwd()))
        self.spares = spares

    def serve(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """Serve `request` and those after it with the same command line; return the first one
        left (another command line), or None when gi closed the pipe."""
        if self.usable and REPORT_PLUGIN in request["argv"]:
            left = self._in_session(request)
            if left is not request:
                return left
        finished = serve(request, None, self.spares)  # (a child without a prepared session never returns)
        assert finished is not None
        finished.answer_and_settle()
        return receive(REQUEST)

    def _in_session(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """Run `pytest.main` on the request's command line (without gi's plugin: each child loads
        its own) and serve from inside its session: pytest calls `serving` where it would collect
        and run the tests, and each child returns from it into pytest's own collection, test
        loop, session end and exit status. The worker's session ends at the first request of
        another command line. Returns the first request not served."""
        import pytest
        from _pytest import main as pytest_main

        argv = request["argv"]
        before, threads = set(project_modules()), threading.active_count()
        state: dict[str, Any] = {"left": request, "child": False}
        real = pytest_main._main

        def serving(config: Any, session: Any) -> Any:
            pytest_main._main = real
            if [name for name in project_modules() if name not in before] or threading.active_count() != threads:
                self.usable = False  # a child would run the original's code, or miss a thread
                return 0
            # Hypothesis's plugin, where this session has it, imports all of Hypothesis at every
            # session's end (its terminal summary), rewritten, since pytest rewrites the asserts of
            # a plugin's whole distribution: each child would parse and rewrite it again, most of a
            # small project's test run. Imported here once, as a child would import it.
            if config.pluginmanager.has_plugin("hypothesispytest"):
                with contextlib.suppress(Exception):
                    importlib.import_module("hypothesis")
            warm_collection_patterns(config)
            # gi's plugin, loaded as `import_plugin` would (marked for assertion rewriting, which
            # in each child went through the name of every module imported), its hooks registered
            # and pytest's machinery frozen with them (`prepare`): once for every child of the
            # session, each of which reads its own key and plan into them as it starts.
            config.pluginmanager.rewrite_hook.mark_rewrite(REPORT_PLUGIN)
            manager, plugin = config.pluginmanager, sys.modules.get(REPORT_PLUGIN)
            if plugin is not None and not manager.is_blocked(REPORT_PLUGIN):
                plugin.prepare(session, REPORT_PLUGIN)
            # Capturing is started afresh in each child: its files must be the child's own.
            config.pluginmanager.getplugin("capturemanager").stop_global_capturing()
            prepared = Session(config, session, stdio_duplicates())
            gc.collect()
            gc.freeze()
            current: dict[str, Any] | None = request
            while current is not None and current["argv"] == argv:
                finished = serve(current, prepared, self.spares)
                if finished is None:  # the child, joined: its session goes on into pytest's own
                    state["child"] = True
                    return real(config, session)
                finished.answer_and_settle()
                current = receive(REQUEST)
            self.spares.discard()  # (forked in this session, whose memory the next one's is not)
            self.spares.written.forget()
            state["left"] = current
            return 0

        status: Any = 3
        pytest_main._main = serving
        try:
            status = pytest.main(without_report_plugin(argv))
        except BaseException:  # pytest's own failure, as `python -m pytest` would show it
            if state["child"]:
                traceback.print_exc()
                status = 3
        finally:
            pytest_main._main = real
            if (plugin := sys.modules.get(REPORT_PLUGIN)) is not None and not state["child"]:
                plugin.release()
        if state["child"]:
            finish_child(int(status))
        if state["left"] is request:  # nothing served: preparing failed, or may not be used
            self.usable = False
            for name in project_modules():
                if name not in before:
                    del sys.modules[name]
        left: dict[str, Any] | None = state["left"]
        return left


def finish_child(status: int) -> NoReturn:
    """End a child with pytest's exit status, its output flushed; never returns.

    It closes every descriptor it holds but the one on which it then tells the worker its status
    (`ENDING`): the worker sees its pipes end and answers now, not after the kernel has torn
    down the child's copy of the worker's memory, which the worker waits for after its answer,
    while gi takes the answer in. A child the worker learns from lists the pages it wrote first,
    on `PAGES` (warm_spare.py): the worker kills what is left of a child once it has its status."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    if ENDING >= 0:
        with contextlib.suppress(OSError):
            for name in os.listdir("/proc/self/fd"):  # (the few it holds: the limit may be a billion)
                if int(name) not in (ENDING, PAGES):
                    with contextlib.suppress(OSError):
                        os.close(int(name))
            if PAGES >= 0:  # before its status: the worker kills what is left of the child then
                write_all(PAGES, own_pages())
                os.close(PAGES)
            os.write(ENDING, f"{status}\n".encode())
    os._exit(status)


def child(request: dict[str, Any], ends: ChildEnds, prepared: Session | None) -> None:
    """In a child handed its request (a spare, or one forked with it): become a fresh pytest run
    of the variant. Without a prepared session it runs `pytest.main` and never returns; with one,
    it joins it and returns (to go on with the session's collection, in `Prepared._in_session`)."""
    global ENDING, PAGES
    ENDING, PAGES = ends.ending, ends.pages
    os.setsid()  # (a session of its own: its scheduling autogroup too, which it may renice)
    if OWN_IPC:
        own_session_keyring()
    os.dup2(ends.key, 0)
    os.dup2(ends.out, 1)
    os.dup2(ends.err, 2)
    os.environ.update(request["env"])
    os.environ["GI_CHANNEL_FD"] = str(ends.channel)
    os.environ["GI_WATCHDOG_FD"] = str(ends.watch)
    activate_report_plugin()
    sources = {os.path.abspath(name): text for name, text in request["sources"].items()}
    for filename, text in sources.items():
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    sys.meta_path.insert(0, VariantFinder(sources))
    serve_spawned(sources)  # the original's too: its run tells whether the tests' processes get it
    if prepared is not None:
        if request.get("args"):  # the selected tests, in place of the training paths
            prepared.config.args = list(request["args"])
        try:
            prepared.join()
        except BaseException:  # pytest's own failure, as `python -m pytest` would show it
            traceback.print_exc()
            finish_child(3)
        return
    import pytest

    try:
        status = int(pytest.main(list(request.get("selected_argv") or request["argv"])))
    except BaseException:  # pytest's own failure, as `python -m pytest` would show it
        traceback.print_exc()
        status = 3
    finish_child(status)


def activate_report_plugin() -> None:
    """In a child, before pytest loads gi's plugin and before any of the project's code runs: have
    the plugin the worker imported read the child's key and plan and make its hooks, as its
    import does in a cold run."""
    plugin = sys.modules.get(REPORT_PLUGIN)
    if plugin is not None:
        plugin.activate()


def clean_slate() -> bool:
    """Between variants: empty every folder a variant may write (GI_WRITABLE: TMPDIR and HOME,
    outputs/, and in the sandbox /tmp, /dev/shm and /dev/mqueue) and, in the sandbox's own IPC
    and user namespaces (GI_OWN_IPC), remove System V objects and the keys of its keyrings (each
    child has a session keyring of its own): the next variant finds nothing of this one. False
    when a keyring could not be cleared."""
    for folder in WRITABLE:
        empty(folder)
    if OWN_IPC:
        remove_ipc()
        return clear_keyrings()
    return True


def serve(request: dict[str, Any], prepared: Session | None, spares: Spares) -> Finished | None:
    """Run one request in its child (the spare forked for it, or one forked now: warm_spare.py),
    forking the next spare meanwhile where spares populate; return what gi reads from a run and
    what is left to settle after it (None in a child, which goes on with the `prepared` session)."""

    def become(request: dict[str, Any], ends: ChildEnds) -> None:
        child(request, ends, prepared)

    spare = spares.take(prepared, become, request)
    started = time.perf_counter()
    if spare is None or not spares.fork_next(prepared, spare.descriptors(), become):
        return None
    pid = spare.pid
    ends = spare.reading
    watch_read, ending_read = ends.watch, ends.ending
    watch = WorkerWatch(watch_read)
    watching = True
    kept = {reading: bytearray() for reading in (ends.out, ends.err, ends.channel)}
    limits = {ends.out: OUTPUT_BYTES, ends.err: OUTPUT_BYTES, ends.channel: CHANNEL_BYTES}
    overflow = False
    deadline = started + float(request["timeout"])
    pages_read = ends.pages
    open_pipes = {*kept, ending_read, *([pages_read] if pages_read >= 0 else [])}
    listed = bytearray()  # the pages a learning child wrote
    ending = bytearray()
    status: int | None = None  # from waitpid: the child was reaped
    timed_out = False
    over = ""
    held = {folder: files_in(folder) for folder in COUNTED}
    while open_pipes:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            timed_out = True
            break
        full = [folder for folder in COUNTED if files_in(folder) - held[folder] > DISK_FILES]
        if full:
            over = f"over its disk quota: {full[0]} held more than {DISK_FILES} files and folders more"
            break
        wait = min(remaining, 0.2)
        if watching and status is None and (left := watch.seconds_left()) is not None:
            wait = min(wait, left)
        ready, _, _ = select.select([*open_pipes, *([watch_read] if watching else [])], [], [], wait)
        if watch_read in ready:
            watching = watch.read()
            ready.remove(watch_read)
        if watching and status is None and watch.seconds_left() == 0:
            struck = watch.stop(pid, ends.channel, request["key"][:KEY_CHARACTERS].encode())
            if struck is not None:
                overflow |= add_to_report(kept[ends.channel], struck)
                watching = False
        for reading in ready:
            chunk = os.read(reading, 65536)
            if reading == ending_read:
                ending += chunk[: STATUS_BYTES - len(ending)]
                if not chunk or b"\n" in ending or len(ending) >= STATUS_BYTES:  # said, or never will be
                    open_pipes.discard(reading)
                continue
            if reading == pages_read:
                listed += chunk[: PAGES_BYTES - len(listed)]
            if not chunk:
                open_pipes.discard(reading)
                continue
            if reading == pages_read:
                continue
            buffer = kept[reading]
            if reading == ends.channel:
                overflow |= add_to_report(buffer, chunk)
            else:
                buffer += chunk
                if len(buffer) > 2 * limits[reading]:
                    del buffer[: len(buffer) - limits[reading]]
        if status is None:
            done, code = os.waitpid(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(code)
                open_pipes.discard(ending_read)  # (its status is known)
                if open_pipes:  # what it left running (daemons holding its pipes) goes with it
                    reap_everything(OWN_PIDS, END_SECONDS, spares.pid)
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
    said = ending.split(b"\n")[0]
    if status is None and (timed_out or over or not (said.isdigit() and int(said) < 256)):
        status = ended(pid, END_SECONDS)
        if status is None:  # something holds its end (a tracer among its processes): all go
            reap_everything(OWN_PIDS, END_SECONDS, spares.pid)
            status = -9
    # Else the child said its status as it ended (or was reaped): what is left of its end is
    # waited for after the answer (`Finished.answer_and_settle`).
    returned = int(said) if status is None else status
    answer = {
        "returncode": -9 if timed_out or over else (128 - returned if returned < 0 else returned),
        "stdout": bytes(kept[ends.out][-OUTPUT_BYTES:]).decode("utf-8", "replace"),
        "stderr": bytes(kept[ends.err][-OUTPUT_BYTES:]).decode("utf-8", "replace") + (f"\n{over}\n" if over else ""),
        "resource": over,
        "channel": base64.b64encode(bytes(kept[ends.channel])).decode(),
        "channel_overflow": overflow,
        "timed_out": timed_out,
        "seconds": time.perf_counter() - started,
        "prepared": prepared is not None,
        "spare_pages": spare.pages,
        "started_without_variant": started_without_variant(),
    }
    return Finished(answer, spare.descriptors(), spares, bytes(listed) if pages_read >= 0 else None)


class Finished:
    """A child's answer, and what is left of its run: the end of the child (when it said its
    status as it ended), every process it left, what it wrote, and the list of the pages it
    wrote when the worker learns from it (`pages`)."""

    def __init__(self, answer: dict[str, Any], descriptors: list[int], spares: Spares, pages: bytes | None) -> None:
        self.answer = answer
        self.descriptors = descriptors
        self.spares = spares
        self.pages = pages

    def answer_and_settle(self) -> None:
        """Answer gi, then settle, then tell gi the worker is ready for the next variant: the
        child's end (the kernel freeing its memory), its processes killed and reaped, the
        writable folders emptied, gi's next steps meanwhile."""
        send(RESPONSE, self.answer)
        if self.pages is not None:
            self.spares.written.learn(self.pages)
        # Every process of the variant's first, then the child (its end is reaped with them): a
        # process it left can hold the child's end (a tracer), and nothing of it may run on.
        if not reap_everything(OWN_PIDS, spare=self.spares.pid):
            os._exit(1)  # what the variant left cannot be undone here: gi starts another worker
        if self.spares.settle() and not reap_everything(OWN_PIDS):  # (the spare dropped)
            os._exit(1)
        for descriptor in self.descriptors:
            os.close(descriptor)
        if not clean_slate() or not self.spares.unchanged():
            os._exit(1)  # (or it lowered what the worker runs with)
        send(RESPONSE, SETTLED)


#: What the worker sends once it has settled a run (`Finished.answer_and_settle`).
SETTLED = {"settled": True}
#: The most of a child's status the worker reads ("0\n" to "255\n").
STATUS_BYTES = 16


def add_to_report(report: bytearray, chunk: bytes) -> bool:
    """Add `chunk` to the signed report, within CHANNEL_BYTES; whether it overflowed."""
    overflowed = len(report) + len(chunk) > CHANNEL_BYTES
    report += chunk[: max(0, CHANNEL_BYTES - len(report))]
    return overflowed


#: The report key's characters at the start of a request's "key" (the plan follows them; the
#: plugin's inputs' KEY_BYTES).
KEY_CHARACTERS = 64
WRITABLE = [folder for folder in os.environ.pop("GI_WRITABLE", os.environ.get("TMPDIR", "")).split(":") if folder]
#: The files and folders a variant may add to each of its folders that is a file system of its
#: own (RAM in the sandbox: an inode costs memory the byte cap does not count); gi counts the
#: others from outside.
DISK_FILES = int(os.environ.pop("GI_DISK_FILES", "100000"))


COUNTED = [folder for folder in WRITABLE if os.path.ismount(folder) and files_in(folder) > 0]
OWN_IPC = os.environ.pop("GI_OWN_IPC", "") == "1"
OWN_PIDS = os.environ.pop("GI_OWN_PIDS", "") == "1"
REQUEST = int(os.environ.pop("GI_REQUEST_FD", "-1"))
RESPONSE = int(os.environ.pop("GI_RESPONSE_FD", "-1"))


def main() -> None:
    libc = ctypes.CDLL(None)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # a child cannot reach the worker's pipes via /proc
    sys.path.insert(0, os.getcwd())
    preload(sys.argv[1:], blocked=os.environ.pop("GI_BLOCKED_PLUGINS", "").split(","))
    cache_rewrites()
    editable = [file for file in os.environ.pop("GI_EDITABLE", "").split(os.pathsep) if file]
    serve_compiled_originals([*editable, *tool_files()])
    import_deferred(REPORT_PLUGIN, REPORT_DEFERRED)
    tools = set(tool_files())
    tests = [path for path in REWRITTEN if path not in tools]
    warm_source_lookups(tests)
    # What pytest's report of a failure reads besides the lines (the tests' trees, the installed
    # frames' paths), which each failing variant's child would otherwise find anew.
    cache_statement_ranges([*tests, *map(os.path.abspath, editable)])
    cache_installed_paths()
    # What is loaded now is shared by every child: keep the collector away from it (pytest
    # collects at the end of each session; over the worker's heap that took 0.1 s each time).
    gc.collect()
    gc.freeze()
    spares = Spares([REQUEST, RESPONSE], populating=os.environ.pop("GI_POPULATE", "1") == "1")
    prepared = Prepared(spares)
    send(RESPONSE, {"ready": True})
    request = receive(REQUEST)
    while request is not None:
        request = prepared.serve(request)
    spares.discard()


if __name__ == "__main__":
    main()
