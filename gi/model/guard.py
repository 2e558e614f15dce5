"""The tamper guard: code a variant adds that reaches for the test machinery.

A language model rewarded for passing tests learns to rewrite the tests' verdict instead of
the code: exit the process early with status 0, rebind pytest's or gi's reporting, patch
modules through `sys.modules`, dig the report's key out of memory with `gc`. All of that
needs names ordinary code under test has no use for. `new_risky_names` lists those the
variant uses that the original program does not; the engine scores such a variant as
tampered without running it, and the language-model operator drops such replies.

Classic operators only move code the original already has, so they never trip the guard;
it only ever judges new code. It is a denylist, so it is one layer among several (the
sandbox, the signed test report, pytest's own exit status and summary), not the only one.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Mapping

from gi.model.program import parse_quietly

#: Modules whose import alone reaches for the interpreter or the test run.
RISKY_MODULES = frozenset({
    "pytest", "_pytest", "pluggy", "gc", "inspect", "ctypes", "builtins", "importlib", "sys", "os", "posix",
    "subprocess", "signal", "atexit", "faulthandler", "threading", "_thread", "multiprocessing", "socket",
    "shutil", "pathlib", "io", "tempfile", "resource", "pty", "fcntl", "mmap", "marshal", "pickle", "code",
    "runpy", "site", "sysconfig", "types", "unittest", "coverage", "pyperf", "gi_pytest_report", "gi_workload",
    "codecs", "fileinput", "tarfile", "zipfile", "shelve", "dbm", "sqlite3", "linecache", "glob", "time",
    "timeit", "cProfile", "profile", "tracemalloc", "weakref", "copyreg",
})  # fmt: skip
#: Attributes of `sys` and `os` that are harmless for code under test; any other is risky.
SAFE_ATTRIBUTES = frozenset({
    "sys.maxsize", "sys.float_info", "sys.version_info", "sys.byteorder", "sys.getrecursionlimit",
    "sys.getsizeof", "sys.intern", "sys.platform", "sys.int_info", "sys.hash_info",
    "os.path", "os.sep", "os.linesep", "os.pathsep", "os.curdir", "os.pardir", "os.extsep", "os.cpu_count",
    "os.fspath", "os.name",
})  # fmt: skip
#: Built-in names that open the door to everything else.
RISKY_BUILTINS = frozenset({
    "exit", "quit", "__import__", "eval", "exec", "compile", "globals", "locals", "vars", "open", "breakpoint",
    "setattr", "delattr", "__builtins__", "__loader__", "__spec__",
})  # fmt: skip
#: Attributes that reach into frames, functions, classes and modules behind the code's back.
RISKY_DUNDERS = frozenset({
    "__globals__", "__code__", "__closure__", "__subclasses__", "__bases__", "__mro__", "__dict__",
    "__getattribute__", "__self__", "__func__", "__defaults__", "__kwdefaults__", "__builtins__", "__import__",
    "__loader__", "__spec__", "__reduce__", "__reduce_ex__", "__del__", "__traceback__", "__frame__",
    "f_back", "f_globals", "f_locals", "gi_frame", "tb_frame",
})  # fmt: skip
#: Modules that may be imported; only what the code then touches in them is judged.
IMPORTABLE = frozenset({"sys", "os"})
#: Text that names the test machinery, for getattr(), importlib and friends.
_RISKY_TEXT = re.compile(
    r"pytest|pluggy|gi_pytest|GI_CHANNEL|conftest|_exit|sys\.modules|builtins|"
    + "|".join(re.escape(name) for name in sorted(RISKY_DUNDERS) if name.startswith("__"))
)


def _dotted(node: ast.expr, aliases: Mapping[str, str]) -> str | None:
    """'os._exit' for `os._exit` (through import aliases), None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in aliases:
        return None  # only names bound by an import: a local called `code` is no module
    parts.append(aliases[node.id])
    return ".".join(reversed(parts))


@functools.lru_cache(maxsize=4096)
def risky_names(source: str) -> frozenset[str]:
    """The uses in `source` that reach for the interpreter or the test run, as short labels
    ("import gc", "os._exit", "eval", ".__globals__", "'pytest'"); empty if it does not parse."""
    try:
        tree = parse_quietly(source)
    except SyntaxError:
        return frozenset()
    aliases: dict[str, str] = {}
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    aliases[top] = top
                if top in RISKY_MODULES and top not in IMPORTABLE:
                    found.add(f"import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            top = node.module.split(".")[0]
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                if top in RISKY_MODULES and f"{node.module}.{alias.name}" not in SAFE_ATTRIBUTES:
                    found.add(f"from {node.module} import {alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if node.attr in RISKY_DUNDERS:
                found.add(f".{node.attr}")
            dotted = _dotted(node, aliases)
            if dotted is not None:
                head = ".".join(dotted.split(".")[:2])
                if dotted.split(".")[0] in RISKY_MODULES and "." in head and head not in SAFE_ATTRIBUTES:
                    found.add(head)
        elif isinstance(node, ast.Name) and node.id in RISKY_BUILTINS:
            found.add(node.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _REFLECTION:
            found |= _reflection(node, aliases)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            found |= _rebinding(node, aliases)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _RISKY_TEXT.search(node.value):
            found.add(repr(_RISKY_TEXT.search(node.value).group(0)))  # type: ignore[union-attr]
    return frozenset(found)


_REFLECTION = frozenset({"getattr", "hasattr"})


def _reflection(call: ast.Call, aliases: Mapping[str, str]) -> set[str]:
    """getattr(x, name) on a module, or with a name computed at run time or a dunder: a way
    around every attribute the guard knows (`getattr(sys, "mod" + "ules")`)."""
    assert isinstance(call.func, ast.Name)
    if not call.args:
        return set()
    name = call.args[1] if len(call.args) > 1 else None
    literal = isinstance(name, ast.Constant) and isinstance(name.value, str) and not name.value.startswith("__")
    if not literal:
        return {f"{call.func.id}(<computed name>)"}
    target = call.args[0]
    return {f"{call.func.id}(a module)"} if isinstance(target, ast.Name) and target.id in aliases else set()


def _rebinding(node: ast.stmt, aliases: Mapping[str, str]) -> set[str]:
    """Assigning to (or deleting) an attribute of an imported module, or of something reached
    through a subscript (`sys.modules[...].x = ...`): rebinding another module's code."""
    if isinstance(node, (ast.Assign, ast.Delete)):
        targets = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    else:
        return set()
    found = set()
    for target in targets:
        for inner in ast.walk(target):
            if not isinstance(inner, ast.Attribute):
                continue
            base = inner.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if (isinstance(base, ast.Name) and base.id in aliases) or isinstance(base, (ast.Subscript, ast.Call)):
                dotted = _dotted(inner, aliases) or f"...{inner.attr}"
                found.add(f"assigns {dotted}")
    return found


def new_risky_names(original: Mapping[str, str], variant: Mapping[str, str]) -> list[str]:
    """What the variant's files use that reaches for the test machinery and no file of the
    original uses: "file: label" lines, sorted; empty when the variant adds nothing risky."""
    allowed: set[str] = set()
    for source in original.values():
        allowed |= risky_names(source)
    flagged = []
    for file, source in sorted(variant.items()):
        if source == original.get(file):
            continue
        flagged += [f"{file}: {label}" for label in sorted(risky_names(source) - allowed)]
    return flagged
