"""What a name of the standard library reaches: which modules are pure, and what a dotted name
resolves to (`os.path.os` is the module os, reached through an alias path).

The tamper guard (gi.model.guard) judges a name of a module by what it is, not by how it is
spelt: standard-library modules are imported in gi's own process to follow a dotted name (never
the project's modules nor a third party's, and not the few whose import does something).
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import threading
import warnings
from types import ModuleType

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
#: The one alias path of the standard library that code writes every day.
CANONICAL_ALIASES = frozenset({("os", "path")})
#: Modules that reach the interpreter or the test run, as an attribute of anything.
RISKY_MODULE_NAMES = frozenset({
    "os", "sys", "builtins", "gc", "inspect", "importlib", "ctypes", "posix", "subprocess", "pytest", "_pytest",
    "pluggy",
})  # fmt: skip
#: Modules gi imports in its own process to resolve a name: importing them does nothing else.
_NOT_IMPORTED = frozenset({
    "antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "__hello__", "__phello__", "lib2to3",
    "ensurepip", "venv", "pydoc_data", "__main__", "readline",
})  # fmt: skip


_modules: dict[str, ModuleType | None] = {}
_modules_lock = threading.Lock()


def stdlib_module(name: str) -> ModuleType | None:
    """The standard-library module `name`, imported in gi's process to resolve names in it; None
    for anything else (the project's modules and third-party packages are never imported here)."""
    top = name.split(".", maxsplit=1)[0]
    if top not in sys.stdlib_module_names or top in _NOT_IMPORTED:
        return None
    with _modules_lock:
        if name not in _modules:
            try:
                with warnings.catch_warnings(), contextlib.redirect_stdout(None):
                    warnings.simplefilter("ignore")
                    _modules[name] = importlib.import_module(name)
            except Exception:  # a module of another platform, or one removed from this Python
                _modules[name] = None
        return _modules[name]


def resolve(dotted: str, attributes: list[str]) -> tuple[str, list[str], list[str]]:
    """Follow `dotted` ("os.path", "operator.attrgetter") and then `attributes` from the module
    they start at while they lead to modules: (the module reached, by its own name, or `dotted`
    when it is no standard-library module; the attributes left; the alias paths taken, as labels)."""
    parts = dotted.split(".")
    loaded = stdlib_module(parts[0])
    if loaded is None:
        return dotted, attributes, []
    module, attributes = loaded.__name__, [*parts[1:], *attributes]
    aliases = []
    while attributes:
        value = getattr(loaded, attributes[0], None)
        if value is None and isinstance(submodule := stdlib_module(f"{module}.{attributes[0]}"), ModuleType):
            value = submodule  # a submodule not imported by its package (xml.etree)
        if not isinstance(value, ModuleType):
            break
        if value.__name__ != f"{module}.{attributes[0]}" and (module, attributes[0]) not in CANONICAL_ALIASES:
            aliases.append(f"{module}.{attributes[0]} (the module {value.__name__})")
        module, attributes, loaded = value.__name__, attributes[1:], value
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
    loaded = stdlib_module(module)
    if full not in DENIED and (pure is None or (isinstance(pure, frozenset) and name in pure)):
        return None
    if loaded is not None and not hasattr(loaded, name):
        return None
    return full


def import_label(module: str) -> str | None:
    """The label for importing `module`: the pure modules of the standard library (even those
    only some names of which are plain: the names are judged where they are used) are free."""
    return None if purity(module) is not False else f"import {module}"


def value_label(module: str) -> str | None:
    """The label for holding `module` as a value (`m = os`): free only for wholly pure modules,
    since a name read from a module held in a variable is no longer resolved."""
    return (
        None
        if purity(module) is None and not any(name.startswith(module + ".") for name in DENIED)
        else (f"{module} as a value")
    )
