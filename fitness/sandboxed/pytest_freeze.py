"""gi's pytest plugin's freeze of pytest's and pluggy's machinery (pytest_plugin.py, installed
beside this file as gi_pytest_freeze.py; only the standard library and pytest): what runs a test
and reports it, recorded as the session starts and compared again, by identity, at every check.

- `machinery`: the functions that run a test and make its report, each with its code.
- `snapshot` / `registry` / `changes`: every hook's implementations (plugin, function, code), as
  one flat list cheap to compare, read back into a registry and compared where one differs,
  conftest.py files collected aside (`a_conftest`); `BEFORE_THE_TESTS`, the hooks pytest calls
  only while it configures and collects, which the checks as a test's phases end leave out.
- `call_path` / `path_functions` / `path_snapshot` / `bindings` / `path_changes`: the namespaces
  of the modules and classes between pytest's call of a test's phase and the test function (a
  test item's `runtest`, `CallInfo`'s constructor, a node's hook relay), and the code of the
  functions they hold; `settle_item_flag`, the one change pytest makes there once the session
  has started, made before the freeze.
- `project_code`: the project's modules imported since a point: whether its code ran;
  `registered_by_project`, what the variant's code did to the registry meanwhile.

The plugin binds these functions as it loads, before any project code: a variant that rebinds a
name of this module changes nothing.
"""

from __future__ import annotations

import operator
import os
import sys
import types
from collections.abc import Callable
from typing import Any, cast

import pytest


def _identity() -> Callable[[object, object], bool]:
    def same(before: object, after: object) -> bool:
        if type(before) is tuple and type(after) is tuple:
            return len(before) == len(after) and all(map(same, before, after))
        return before is after

    return same


#: Whether two parts of pytest's machinery as gi's plugin recorded them hold the very same
#: objects: by identity, never by `==`, since code under test may put there an object that says
#: it equals anything (the tuples are the plugin's own). A closure, calling itself by its cell.
same_objects = _identity()


def machinery() -> dict[str, object]:
    """The functions that run a test and turn it into its report and its count, as loaded, each
    with its code: code under test that replaces one (or its code) is caught."""
    import pluggy
    from _pytest import main, reports, runner

    functions = {
        "CallInfo.from_call": runner.CallInfo.from_call,
        "TestReport.from_item_and_call": reports.TestReport.from_item_and_call,
        "TestReport.__init__": reports.TestReport.__init__,
        "call_and_report": runner.call_and_report,
        "runtestprotocol": runner.runtestprotocol,
        "check_interactive_exception": runner.check_interactive_exception,
        "runner.pytest_runtest_makereport": runner.pytest_runtest_makereport,
        "Session.pytest_runtest_logreport": main.Session.pytest_runtest_logreport,
        "HookCaller.__call__": pluggy.HookCaller.__call__,
        "PluginManager._hookexec": pluggy.PluginManager._hookexec,
    }
    found: dict[str, object] = {}
    for name, loaded in functions.items():
        function = getattr(loaded, "__func__", loaded)  # a classmethod's bound method is new each time
        found[name] = (function, getattr(function, "__code__", None))
    for name in ("passed", "failed", "skipped"):
        found[f"BaseReport.{name}"] = vars(reports.BaseReport).get(name)
    return found


def call_path(config: pytest.Config) -> list[tuple[object, dict[str, object]]]:
    """The namespaces of the code between pytest's call of a test's phase and the test function,
    and of the report made of it, beyond the hooks: pytest's runner, python, nodes and reports
    modules and their classes on that path, pluggy's caller and hook executor. Replacing any
    name in them (a test item's `runtest`, `CallInfo.__init__`, a node's `ihook`) can turn a
    failure into a pass that every later check agrees with."""
    import pluggy
    from _pytest import main, nodes, python, reports, runner

    executor = getattr(config.pluginmanager, "_inner_hookexec", None)
    spaces: list[object] = [runner, python, nodes, reports, sys.modules.get(getattr(executor, "__module__", ""))]
    spaces += [runner.CallInfo, python.Function, python.PyobjMixin, nodes.Node, nodes.Item, reports.TestReport,
               reports.BaseReport, main.Session, pluggy.HookCaller, pluggy.HookImpl, pluggy.PluginManager]  # fmt: skip
    return [(space, vars(space)) for space in spaces if space is not None]


def functions_of(value: object) -> tuple[types.FunctionType, ...]:
    """The functions whose code `value` runs when called or looked up: itself, a class or static
    method's function, a property's getter, setter and deleter (by type: no lookup that a
    missing attribute makes costly)."""
    kind = type(value)
    if kind is types.FunctionType:
        return (cast(types.FunctionType, value),)
    if kind is classmethod or kind is staticmethod:
        inner = cast("classmethod[Any, Any, Any]", value).__func__
        return (inner,) if type(inner) is types.FunctionType else ()
    if kind is property:
        accessors = (cast(property, value).fget, cast(property, value).fset, cast(property, value).fdel)
        return tuple(f for f in accessors if type(f) is types.FunctionType)
    return ()


def path_functions(path: list[tuple[object, dict[str, object]]]) -> list[types.FunctionType]:
    """The functions `call_path`'s namespaces hold (`functions_of` each value), whose code a
    check compares."""
    return [function for _, names in path for value in names.values() for function in functions_of(value)]


def path_snapshot(
    path: list[tuple[object, dict[str, object]]],
    functions: list[types.FunctionType],
    code_of: Callable[[Any], object] = operator.attrgetter("__code__"),
) -> list[object]:
    """The values of `call_path`'s namespaces in order, flat, with their sizes, then the code of
    each of `functions` (`path_functions` of the path as frozen), to compare by identity: a name
    bound anew, added or removed changes a value at its place, or the size; a function whose
    code was swapped, its code. (`code_of` bound as this module loads.)"""
    flat: list[object] = []
    for _, names in path:
        flat.append(len(names))
        flat += names.values()
    flat += map(code_of, functions)
    return flat


def bindings(path: list[tuple[object, dict[str, object]]]) -> list[dict[str, tuple[object, ...]]]:
    """Each of `call_path`'s namespaces as a copy: each name with its value and the code of the
    functions it holds (`functions_of`), as `path_snapshot` compares them."""
    return [{name: (value, *(function.__code__ for function in functions_of(value))) for name, value in names.items()}
            for _, names in path]  # fmt: skip


#: What pytest itself sets on a test item's class when it makes the first item of it (a flag
#: that keeps a warning from repeating).
PYTEST_FLAG = "_pytest_diamond_inheritance_warning_shown"


def settle_item_flag() -> None:
    """Set the flag pytest sets on a test item's class as it makes the first item of it, on its
    test function's class, before the freeze rather than after: it would warn once there of an
    item class that is also a collector, which that class is not (else it is left to pytest)."""
    from _pytest import nodes, python

    item = python.Function
    if PYTEST_FLAG not in vars(item) and not any(issubclass(base, nodes.Collector) for base in item.__bases__):
        setattr(item, PYTEST_FLAG, True)


def path_changes(path: list[tuple[object, dict[str, object]]], before: list[dict[str, tuple[object, ...]]],
                 flag: str = PYTEST_FLAG, bindings_of: Callable[..., list[dict[str, tuple[object, ...]]]] = bindings,
                 same: Callable[[object, object], bool] = same_objects) -> list[str]:  # fmt: skip
    """The names in `call_path`'s namespaces bound otherwise than in `before` (`bindings` of
    them), or whose code changed, but for the flag pytest sets itself (what it calls bound as
    this module loads)."""
    changed = []
    for (space, _), now, was in zip(path, bindings_of(path), before, strict=True):
        label = getattr(space, "__qualname__", getattr(space, "__name__", "?"))
        for name in sorted(set(now) | set(was)):
            value = now.get(name)
            if value is not None and was.get(name) is not None and same(value, was[name]):
                continue
            if name == flag and name not in was and value is not None and value[0] is True:
                continue
            changed.append(f"{label}.{name}")
    return changed


#: pytest's hooks that it calls only before the tests run, as it configures and collects. The
#: checks made as a test's phases end leave them out (what code under test changes in them then
#: runs no sooner than the session's end, whose check compares them, as the collection's does).
BEFORE_THE_TESTS = frozenset({
    "pytest_addhooks", "pytest_addoption", "pytest_configure", "pytest_cmdline_parse", "pytest_cmdline_main",
    "pytest_load_initial_conftests", "pytest_sessionstart", "pytest_report_header", "pytest_collection",
    "pytest_collection_modifyitems", "pytest_collection_finish", "pytest_collectstart", "pytest_make_collect_report",
    "pytest_collectreport", "pytest_ignore_collect", "pytest_collect_directory", "pytest_collect_file",
    "pytest_pycollect_makemodule", "pytest_pycollect_makeitem", "pytest_generate_tests", "pytest_make_parametrize_id",
    "pytest_itemcollected", "pytest_deselected", "pytest_report_collectionfinish",
})  # fmt: skip


def snapshot(config: pytest.Config, leave_out: frozenset[str] = frozenset()) -> list[object]:
    """pytest's hook registry as one flat list: the relay and the hook executor, the tracer and
    the profiler, then each hook's name, caller and number of implementations, followed by each
    implementation's plugin, function and code, in order, but for the hooks in `leave_out`.
    Comparing two item by item, by identity, is what each check of an unchanged registry costs;
    `registry` reads one."""
    manager = config.pluginmanager
    flat: list[object] = [config.hook, manager.hook, getattr(manager, "_inner_hookexec", None), sys.gettrace(),
                          sys.getprofile()]  # fmt: skip
    for name, caller in vars(manager.hook).items():
        if name in leave_out:
            continue
        implementations = getattr(caller, "get_hookimpls", None)
        if implementations is not None:
            impls = implementations()
            flat += (name, caller, len(impls))
            for impl in impls:
                function = impl.function
                flat += (impl.plugin, function, getattr(function, "__code__", None))
    return flat


def registry(snapshot: list[object]) -> dict[str, object]:
    """The registry a snapshot lists, by hook name (" relay", " tracing" for the rest), each hook
    as its caller and its implementations' (plugin, function, code)."""
    found: dict[str, object] = {" relay": tuple(snapshot[:3]), " tracing": tuple(snapshot[3:5])}
    position = 5
    while position < len(snapshot):
        name, caller, count = snapshot[position : position + 3]
        end = position + 3 + 3 * cast(int, count)
        listed = snapshot[position + 3 : end]
        found[str(name)] = (caller, tuple(zip(listed[0::3], listed[1::3], listed[2::3], strict=True)))
        position = end
    return found


def a_conftest(plugin: object, root: str) -> bool:
    """Whether `plugin` is a conftest.py of the project that pytest collected (registered while
    the session runs, by right)."""
    if not isinstance(plugin, types.ModuleType):
        return False
    file = getattr(plugin, "__file__", None)
    return (
        isinstance(file, str)
        and os.path.basename(file) == "conftest.py"
        and os.path.realpath(file).startswith(root + os.sep)
        and os.path.isfile(file)
        and sys.modules.get(plugin.__name__) is plugin
    )


def project_code(before: set[str], root: str) -> list[str]:
    """The modules imported since `before` (names) from files of the project under `root`, but
    its conftest.py files: code of the project that ran."""
    found = []
    for name in set(sys.modules) - before:
        file = getattr(sys.modules.get(name), "__file__", None)
        in_project = isinstance(file, str) and os.path.realpath(file).startswith(root + os.sep)
        if in_project and os.path.basename(cast(str, file)) != "conftest.py":
            found.append(name)
    return sorted(found)


def registered_by_project(before: dict[str, object], after: dict[str, object], editable: set[str]) -> list[str]:
    """The hooks of `after` (a registry) holding an implementation that `before` held with other
    code (pytest never swaps a function's code), or a new one whose code lies in one of the
    `editable` files (real paths): what the variant's code did to the registry in a window where
    pytest, and the project's own conftest.py files and plugins, register theirs."""
    found = []
    for name, hook in after.items():
        if name[0] == " " or not isinstance(hook, tuple):
            continue
        old = before.get(name)
        kept = old[1] if isinstance(old, tuple) else ()
        for _, function, code in hook[1]:
            was = [was_code for _, was_function, was_code in kept if was_function is function]
            file = getattr(code, "co_filename", "")
            variants = isinstance(file, str) and os.path.realpath(file) in editable
            if (was and not any(was_code is code for was_code in was)) or (not was and variants):
                found.append(name)
                break
    return found


def changes(before: dict[str, object], after: dict[str, object], root: str,
             same: Callable[[object, object], bool] = same_objects,
             a_conftest: Callable[[object, str], bool] = a_conftest) -> list[str]:  # fmt: skip
    """What differs between two registries, but for implementations conftest.py files added
    (`same` and `a_conftest` bound when the plugin loads, as the hooks bind what they call)."""
    changed = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if same(old, new):
            continue
        if isinstance(new, tuple) and name[0] != " " and (old is None or (isinstance(old, tuple) and old[0] is new[0])):
            kept: tuple[object, ...] = () if old is None else old[1]
            still = [impl for impl in new[1] if any(same(impl, was) for was in kept)]
            added = [impl for impl in new[1] if not any(same(impl, was) for was in kept)]
            if all(a_conftest(impl[0], root) for impl in added) and same(tuple(still), tuple(kept)):
                continue  # a conftest.py collected, with a hook of its own or no new one
        changed.append(name.strip())
    return changed
