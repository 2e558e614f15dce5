"""What a name of the standard library reaches: which modules are pure, and what a dotted name
resolves to (`os.path.os` is the module os, reached through an alias path).

The tamper guard (gi.model.guard) judges a name of a module by what it is, not by how it is
spelt. What a standard-library module holds (its names, and which of them are modules) is
learned in a child process of gi's interpreter (`python -I -S`), never by importing it in
gi's own: a reply that names `unittest.__main__` must not end gi's run with the SystemExit its
import raises, nor a module's import do anything else in gi. The project's modules and a third
party's are never imported at all, and neither are the few whose import opens a window or a
browser.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

#: Standard-library modules whose public names new code may use freely: they compute on the
#: values they are given and reach nothing else.
_WHOLLY_PURE = (
    "__future__", "abc", "array", "ast", "base64", "binascii", "bisect", "calendar", "cmath", "collections",
    "collections.abc", "colorsys", "contextlib", "copy", "dataclasses", "datetime", "decimal", "difflib", "enum",
    "fractions", "functools", "graphlib", "hashlib", "heapq", "hmac", "itertools", "json", "keyword", "math",
    "numbers", "operator", "pprint", "random", "re", "reprlib", "stat", "statistics", "string", "struct",
    "textwrap", "typing", "unicodedata", "zlib",
)  # fmt: skip
#: Modules of which only some names are plain.
_PARTLY_PURE = {
    "io": ("StringIO", "BytesIO"),
    "os": ("sep", "linesep", "pathsep", "curdir", "pardir", "extsep", "altsep", "name", "fspath"),
    "posixpath": ("join", "split", "splitext", "basename", "dirname", "normpath", "normcase", "commonpath",
                  "commonprefix", "isabs", "relpath", "sep", "curdir", "pardir", "extsep"),
    "sys": ("maxsize", "float_info", "int_info", "hash_info", "version_info", "byteorder", "platform",
            "getrecursionlimit", "getsizeof", "intern", "maxunicode"),
}  # fmt: skip
#: The pure modules: None, every public name is plain; a set, only those names are.
PURE_MODULES: dict[str, frozenset[str] | None] = {
    **dict.fromkeys(_WHOLLY_PURE),
    **{module: frozenset(names) for module, names in _PARTLY_PURE.items()},
}
#: Names of pure modules that are no such thing: they evaluate text (a function registered with
#: singledispatch has its annotations evaluated, and an annotation may be any string made at run
#: time), build a computed attribute access or read attributes by a name in a string.
DENIED = frozenset({
    "operator.attrgetter", "operator.methodcaller", "string.Formatter", "typing.get_type_hints",
    "typing.ForwardRef", "typing._eval_type", "functools.singledispatch", "functools.singledispatchmethod",
})  # fmt: skip
#: Calls of these with literal names only read attributes, which are judged as attributes.
NAMED_ACCESS = frozenset({"operator.attrgetter", "operator.methodcaller"})
#: Functions of pure modules that write attributes of a value they are given (update_wrapper's
#: first argument, the argument of what wraps() returns): judged by that value (gi.model.guard).
ATTRIBUTE_WRITERS = frozenset({"functools.update_wrapper", "functools.wraps"})
#: The one alias path of the standard library that code writes every day.
CANONICAL_ALIASES = frozenset({("os", "path")})
#: Modules that reach the interpreter or the test run, as an attribute of anything.
RISKY_MODULE_NAMES = frozenset({
    "os", "sys", "builtins", "gc", "inspect", "importlib", "ctypes", "posix", "subprocess", "pytest", "_pytest",
    "pluggy",
})  # fmt: skip
#: Modules never imported, even in the child: their import opens a window or a browser, prints,
#: or starts a program.
_NOT_IMPORTED = frozenset({
    "antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "__hello__", "__phello__", "lib2to3",
    "ensurepip", "venv", "pydoc_data", "__main__", "readline",
})  # fmt: skip
#: Seconds the child that learns modules may take.
LEARN_TIMEOUT = 60.0


@dataclass(frozen=True)
class ModuleFacts:
    """What one standard-library module holds, as a child process found it."""

    #: The module's own name (`os.path` is posixpath).
    name: str
    #: Every name `dir()` gives.
    names: frozenset[str]
    #: The names that hold modules, and each module's own name.
    modules: Mapping[str, str]


#: Run as `python -I -S -c LEARN module...`: imports each module (its output and warnings
#: dropped, whatever it raises caught, SystemExit included) and writes, on the descriptor that
#: was stdout when it started, JSON facts of every module then loaded.
LEARN = """
import importlib, io, json, os, sys, types, warnings
out = os.dup(1)
quiet = os.open(os.devnull, os.O_RDWR)
os.dup2(quiet, 1)
os.dup2(quiet, 2)
sys.stdout = sys.stderr = io.StringIO()
warnings.simplefilter("ignore")
failed = []
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except BaseException:
        failed.append(name)
found = {}
for key, module in list(sys.modules.items()):
    try:
        names = [name for name in dir(module) if isinstance(name, str)]
        held = {}
        for name in names:
            value = getattr(module, name, None)
            if isinstance(value, types.ModuleType):
                held[name] = value.__name__
        found[key] = {"name": module.__name__, "names": names, "modules": held}
    except BaseException:
        continue
data = json.dumps({"modules": found, "failed": failed}).encode()
while data:
    data = data[os.write(out, data):]
"""

_facts: dict[str, ModuleFacts | None] = {}
_lock = threading.Lock()


def _importable(name: str) -> bool:
    top = name.split(".", maxsplit=1)[0]
    return bool(name) and top in sys.stdlib_module_names and top not in _NOT_IMPORTED


def learn(names: Iterable[str]) -> None:
    """Learn the standard-library modules among `names` (and whatever they load) in one child
    process, unless known already; a module that cannot be imported there is no module."""
    with _lock:
        wanted = sorted({name for name in names if _importable(name) and name not in _facts})
        if not wanted:
            return
        found: dict[str, dict[str, object]] = {}
        try:
            child = subprocess.run(
                [sys.executable, "-I", "-S", "-c", LEARN, *wanted],
                capture_output=True, stdin=subprocess.DEVNULL, timeout=LEARN_TIMEOUT, check=False,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            )  # fmt: skip
            found = json.loads(child.stdout)["modules"]
        except (OSError, subprocess.SubprocessError, ValueError, KeyError, TypeError):
            found = {}
        for key, entry in found.items():
            if key not in _facts and isinstance(entry, dict):
                _facts[key] = ModuleFacts(
                    str(entry["name"]), frozenset(map(str, entry["names"])),  # type: ignore[call-overload]
                    {str(k): str(v) for k, v in entry["modules"].items()},  # type: ignore[attr-defined]
                )  # fmt: skip
        for name in wanted:
            _facts.setdefault(name, None)


def module_facts(name: str) -> ModuleFacts | None:
    """What the standard-library module `name` holds (learned in a child process, once); None
    for anything else (the project's modules and third-party packages are never imported)."""
    if not _importable(name):
        return None
    if name not in _facts:
        learn([name])
    return _facts.get(name)


def resolve(dotted: str, attributes: list[str]) -> tuple[str, list[str], list[str]]:
    """Follow `dotted` ("os.path", "operator.attrgetter") and then `attributes` from the module
    they start at while they lead to modules: (the module reached, by its own name, or `dotted`
    when it is no standard-library module; the attributes left; the alias paths taken, as labels)."""
    parts = dotted.split(".")
    loaded = module_facts(parts[0])
    if loaded is None:
        return dotted, attributes, []
    module, attributes = loaded.name, [*parts[1:], *attributes]
    aliases = []
    while attributes:
        held = loaded.modules.get(attributes[0])
        value = module_facts(held) if held is not None else None
        if held is None and attributes[0] not in loaded.names:
            value = module_facts(f"{module}.{attributes[0]}")  # a submodule not imported by its package (xml.etree)
        if value is None:
            break
        if value.name != f"{module}.{attributes[0]}" and (module, attributes[0]) not in CANONICAL_ALIASES:
            aliases.append(f"{module}.{attributes[0]} (the module {value.name})")
        module, attributes, loaded = value.name, attributes[1:], value
    return module, attributes, aliases


def purity(module: str) -> frozenset[str] | bool | None:
    """None when every public name of `module` is plain, the plain names when only some are,
    False when it is not pure at all."""
    return PURE_MODULES.get(module, False)


def judge_module_name(module: str, name: str) -> str | None:
    """The label for using `module.name` (a standard-library module by its own name), or None
    when it is plain, or when no such name exists (reading it raises AttributeError)."""
    full = f"{module}.{name}"
    pure = purity(module)
    loaded = module_facts(module)
    if full not in DENIED and (pure is None or (isinstance(pure, frozenset) and name in pure)):
        return None
    if loaded is not None and name not in loaded.names:
        return None
    return full


def import_label(module: str) -> str | None:
    """The label for importing `module`: the pure modules of the standard library (even those
    only some names of which are plain: the names are judged where they are used) are free."""
    return None if purity(module) is not False else f"import {module}"


def value_label(module: str) -> str:
    """The label for holding `module` as a value (passing it on, keeping it in a container):
    code that holds a module can write to it out of the guard's sight, so none is free (`m =
    module`, an alias the guard follows, is judged where m is read)."""
    return f"{module} as a value"
