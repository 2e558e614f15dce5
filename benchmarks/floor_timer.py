"""A pytest plugin that timestamps one test run's phases, for benchmarks/evaluation_floor.py.

The benchmark installs this file beside gi's plugin (as `gi_floor_timer`) and puts `-p
gi_floor_timer` first on pytest's command line. In a warm worker it is imported once, when the
worker prepares pytest's configuration; its hooks run in each forked child. At the end of the
run (pytest_unconfigure, the last hook, when pytest no longer captures output) it writes one
line to stderr, `GI-FLOOR-TIMES {json}`, which the benchmark takes out of the run's stderr
before gi reads it:

- fork0, fork1: the warm worker's fork of this child (before, in the worker; after, in the child);
  a spare child is forked ahead of its variant, and then also has
- populate: the seconds it spent populating the pages children write, and
- handed: when it was handed its request (gi_warm_spare.py);
- plugin0, plugin1: the import of gi's plugin, to pytest registering it (in a warm worker's
  child, from its activation, the worker having imported it; in a child of a session the worker
  prepared, where the worker registered its hooks, its activation alone);
- configure0, session0, collect0, collect1, loop0, loop1, finish0, end: pytest's configuration,
  session start, collection, test loop and session end;
- calls: the seconds of the tests' own code (the call phase of each test);
- gi: the seconds spent in gi's plugin's hooks (its records, signatures and checks), by phase;
- faults: the minor page faults of the process so far, at its end (in a warm child: since its
  fork, mostly its first writes to memory it shares with the worker, copied then).

After that line, as the child's pytest run hands over to gi's worker code to end the child (the
warm worker's `finish_child`), it writes `GI-FLOOR-ENDED {time}`: what pytest does after its last
hook is pytest's, what follows gi's.

All times are time.perf_counter() (the monotonic clock, the same in every process of the
machine). Needs the standard library and pytest only; nothing of gi's.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import sys
import time
from collections.abc import Callable, Generator
from typing import Any

import pytest

#: What gi names its plugin (gi.fitness.tests.PLUGIN_MODULE).
GI_PLUGIN = "gi_pytest_report"
MARKER = "GI-FLOOR-TIMES "

_times: dict[str, Any] = {"gi": {}, "calls": 0.0}
_phase = ["start"]
_worker = os.getpid()


def _note(name: str) -> None:
    _times[name] = time.perf_counter()


def _before_fork() -> None:
    if os.getpid() == _worker:  # the worker forking a child (not a child forking a helper)
        _times.clear()
        _times.update(gi={}, calls=0.0, fork0=time.perf_counter())


def _after_fork() -> None:
    if "fork0" in _times and "fork1" not in _times:
        _note("fork1")


os.register_at_fork(before=_before_fork, after_in_child=_after_fork)


def _time_spares() -> None:
    """Note when a spare child is handed its request, and the seconds it populated pages."""
    spares = sys.modules.get("gi_warm_spare")
    if spares is None or hasattr(spares.receive, "timed"):
        return
    receive, populate = spares.receive, spares.populate

    def received(stream: int) -> Any:
        found = receive(stream)
        if os.getpid() != _worker:
            _note("handed")
        return found

    def populated(*args: Any) -> Any:
        started = time.perf_counter()
        try:
            return populate(*args)
        finally:
            _times["populate"] = time.perf_counter() - started

    received.timed = populated.timed = True  # type: ignore[attr-defined]
    spares.receive, spares.populate = received, populated


_time_spares()


def _spend(seconds: float) -> None:
    spent = _times["gi"]
    spent[_phase[0]] = spent.get(_phase[0], 0.0) + seconds


def _timed(function: Callable[..., Any], wrapper: bool) -> Callable[..., Any]:
    """`function` (a hook of gi's plugin), adding its seconds to `gi` under the current phase."""
    if not wrapper:

        def call(*args: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args)
            finally:
                _spend(time.perf_counter() - started)

        return call

    def wrapped(*args: Any) -> Generator[Any, Any, None]:  # an old-style hookwrapper: one yield
        started = time.perf_counter()
        inner = function(*args)
        try:
            first = next(inner)
        finally:
            _spend(time.perf_counter() - started)
        result = yield first
        started = time.perf_counter()
        try:
            inner.send(result)
        except StopIteration:
            pass
        finally:
            _spend(time.perf_counter() - started)

    return wrapped


def _time_gi_hooks(manager: Any) -> None:
    """Wrap each hook of gi's plugin (before it freezes pytest's machinery at the session's
    start, so its checks see the wrappers from the start)."""
    plugin = manager.get_plugin(GI_PLUGIN)
    if plugin is None:
        return
    for caller in vars(manager.hook).values():
        for impl in getattr(caller, "get_hookimpls", list)():
            if impl.plugin is plugin and not getattr(impl, "wrapper", False) and not hasattr(impl.function, "timed"):
                impl.function = _timed(impl.function, impl.hookwrapper)
                impl.function.timed = True


def _time_activation() -> None:
    """Where a warm worker imported gi's plugin, a child activates it (reads its key, makes its
    hooks) before pytest loads it: that is the start of its import."""
    plugin = sys.modules.get(GI_PLUGIN)
    activate = getattr(plugin, "activate", None)
    if plugin is None or activate is None or hasattr(activate, "timed"):
        return

    def timed_activate() -> None:
        _note("plugin0")
        registered = hasattr(plugin, "pytest_sessionstart")  # by the worker, for the session it prepared
        activate()
        if registered:
            _note("plugin1")

    timed_activate.timed = True  # type: ignore[attr-defined]
    plugin.activate = timed_activate  # type: ignore[attr-defined]


_time_activation()


def _time_the_end() -> None:
    """In a warm worker (the script run as `__main__`), note when a child's pytest run is over
    and the worker's code ends the child (`finish_child`)."""
    worker = sys.modules.get("__main__")
    finish = getattr(worker, "finish_child", None)
    if worker is None or finish is None or hasattr(finish, "timed"):
        return

    def finish_child(status: int) -> Any:
        line = f"GI-FLOOR-ENDED {time.perf_counter()}\n".encode()
        with contextlib.suppress(OSError):
            os.write(2, line)
        return finish(status)

    finish_child.timed = True  # type: ignore[attr-defined]
    worker.finish_child = finish_child  # type: ignore[attr-defined]


_time_the_end()


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Note the start of gi's plugin's import, where a child imports it itself (a cold run)."""
    importing = pluginmanager.import_plugin

    def import_plugin(name: str, consider_entry_points: bool = False) -> None:
        if name == GI_PLUGIN and "plugin0" not in _times:  # (not activated first, in a warm child)
            _note("plugin0")
        return importing(name, consider_entry_points)

    pluginmanager.import_plugin = import_plugin  # type: ignore[method-assign]


def pytest_plugin_registered(plugin: object, plugin_name: str, manager: pytest.PytestPluginManager) -> None:
    """The end of gi's plugin's import: pytest registered it (a warm child registers the plugin
    its worker imported); then its hooks are timed."""
    if plugin_name == GI_PLUGIN:
        _note("plugin1")
        _time_gi_hooks(manager)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    _note("configure0")
    _phase[0] = "configure"
    _time_gi_hooks(config.pluginmanager)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _note("session0")
    _phase[0] = "session"


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_collection(session: pytest.Session) -> Generator[None, Any, None]:
    _note("collect0")
    _phase[0] = "collection"
    yield
    _note("collect1")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, Any, None]:
    _note("loop0")
    _phase[0] = "tests"
    yield
    _note("loop1")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, None]:
    started = time.perf_counter()
    yield
    _times["calls"] += time.perf_counter() - started


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    _note("finish0")
    _phase[0] = "finish"


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    _note("end")
    _times["faults"] = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    line = (MARKER + json.dumps(_times) + "\n").encode()
    while line:
        line = line[os.write(2, line) :]
