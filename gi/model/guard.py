"""The tamper guard: new code may only use what the original uses, and plain Python.

A language model rewarded for passing tests learns to rewrite the verdict instead of the code:
walk up the stack to pytest's item and register a report hook, return a value equal to
everything, dig gi's report writer out of a closure, answer differently when it is timed. All
of that needs a way *out* of the code's own values: frames, modules reached through other
modules (`os.path.sys`), `sys.modules`, the builtins' `exec`, attributes named at run time
(`getattr(x, "f_" + "back")`, `operator.attrgetter`, `functools.reduce(getattr, ...)`,
`"{0.gi_frame}".format(g)`), dunder attributes (`type(0).__base__`), classes that redefine
what `==` means.

So the guard is an allow-list, and it resolves what a name *is* rather than how it is spelt
(`exec` read in a scope that does not bind it is the builtin, whatever else of that name the
file binds: a method, a parameter of another function; Python's own scoping, by `symtable`).
`uses(source)` lists every use in a file that is not plain Python: an import of a module that is
not pure (or of any module that is not the standard library's), a name or an attribute of such a
module (by what it resolves to: `os.path.os.system` is `os.system`, reached through an alias
path), a builtin that is not plain (`exec`, `open`, `globals`, `setattr`, ...), an attribute
named at run time, a dunder, frame or plugin-machinery attribute, a comparison dunder defined
on a class, `type()` making a class, text naming gi's or pytest's machinery. `new_risky_names`
refuses the uses of a variant that no file of the original has: the engine scores such a
variant as tampered without running it.

Classic operators only move and recombine code the original already has; now and then that
makes a use of the kind (a module put where a value was), so the engine judges only what a
model wrote, against the original and the classic edits' own result (gi.engine.verdict). Plain
Python, the pure standard-library modules and the public attributes of values the code holds
are always allowed: every way *to* a foreign value (a frame, a module, a closure, the
collector) goes through a use listed here. The guard is one layer: the test run's
canaries and registry check, the signed report and the second run of the front catch what
reaches the test machinery by a way the guard does not know (see docs/guides/sandbox.md).
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Mapping
from dataclasses import dataclass

from gi.model.guard_scope import (
    FRAME_ATTRIBUTES,
    MACHINERY_ATTRIBUTES,
    Scope,
    global_reads,
    targets,
    text_labels,
)
from gi.model.program import parse_quietly
from gi.model.stdlib import (
    ATTRIBUTE_WRITERS,
    NAMED_ACCESS,
    RISKY_MODULE_NAMES,
    import_label,
    judge_module_name,
    module_facts,
    purity,
    resolve,
    value_label,
)
from gi.model.textcache import TextCache

#: Built-in names that are plain computation.
PLAIN_BUILTINS = frozenset(
    name
    for name, value in vars(__import__("builtins")).items()
    if isinstance(value, type) and issubclass(value, BaseException)
) | frozenset({
    "abs", "aiter", "all", "anext", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr",
    "classmethod", "complex", "dict", "dir", "divmod", "enumerate", "filter", "float", "format", "frozenset",
    "hash", "hex", "id", "int", "isinstance", "issubclass", "iter", "len", "list", "map", "max", "memoryview",
    "min", "next", "object", "oct", "ord", "pow", "print", "property", "range", "repr", "reversed", "round",
    "set", "slice", "sorted", "staticmethod", "str", "sum", "super", "tuple", "type", "zip", "True", "False",
    "None", "NotImplemented", "Ellipsis", "__name__", "__doc__", "__file__", "__debug__", "__qualname__",
    "__module__", "__class__", "getattr", "hasattr",
})  # fmt: skip
#: Builtins that read an attribute by a name given as a value.
REFLECTION = frozenset({"getattr", "hasattr"})
#: Dunder attributes ordinary code reads.
PLAIN_DUNDERS = frozenset({
    "__name__", "__qualname__", "__doc__", "__init__", "__module__", "__post_init__", "__class__",
})  # fmt: skip
#: Dunders a class of new code may define: none of them changes what a test's check sees.
PLAIN_CLASS_DUNDERS = frozenset({
    "__init__", "__new__", "__repr__", "__str__", "__post_init__", "__slots__", "__doc__", "__module__",
    "__qualname__", "__annotations__", "__match_args__", "__dataclass_fields__", "__hash__",
})  # fmt: skip
#: A replacement field of a format string that reads an attribute: "{0.attribute}".
_FORMAT_ATTRIBUTE = re.compile(r"\{[^{}!:]*\.([A-Za-z_]\w*)")


@dataclass(frozen=True)
class Uses:
    """What one file uses beyond plain Python.

    `labels` are judged as they are (an original with the same label allows them). `free_names`
    (names read but bound nowhere in the file and not plain builtins: `exec`, `open`, or a name
    another file binds) are allowed when a file of the original binds or reads them, and
    `private_attributes` (single-underscore attributes of anything but self and cls) when the
    original reads or writes an attribute of that name anywhere: a classic operator may move a
    statement from one file or function to another."""

    labels: frozenset[str]
    free_names: frozenset[str]
    private_attributes: frozenset[str]
    bound_names: frozenset[str]
    defined_attributes: frozenset[str]
    attribute_names: frozenset[str]
    #: The text labels of strings that never run (docstrings): allowed in variants, where a
    #: classic operator may have moved such text into an expression.
    quoted: frozenset[str]


# --- the walk --------------------------------------------------------------------------------------


class _Walker(Scope):
    """Collects one file's `Uses`. ast.walk visits a node before its children, so a call or an
    attribute chain judges its parts and marks them (`judged`) before they are visited alone."""

    def run(self) -> Uses:
        self.bindings()
        for node in self.nodes:
            if id(node) not in self.judged:
                self._visit(node)
        return Uses(frozenset(self.labels), frozenset(self.free), frozenset(self.private),
                    frozenset(self.bound), frozenset(self.defined), frozenset(self.attributes),
                    frozenset(self.quoted))  # fmt: skip

    def _visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if label := self._import(alias.name):
                    self.labels.add(label)
        elif isinstance(node, ast.ImportFrom):
            self._import_from(node)
        elif isinstance(node, ast.Call):
            self._call(node)
        elif isinstance(node, ast.Attribute):
            self._chain(node)
        elif isinstance(node, ast.Name):
            self._name(node)
        elif isinstance(node, ast.ClassDef):
            self._class(node)
        elif isinstance(node, ast.MatchClass):
            for attribute in node.kwd_attrs:  # `case C(attribute=x)` reads C's attribute
                self._attribute(attribute, None)
        elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            self._text(node)
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            self._rebinding(node)

    def _import(self, module: str) -> str | None:
        loaded = module_facts(module)
        return import_label(loaded.name if loaded is not None else module)

    def _import_from(self, node: ast.ImportFrom) -> None:
        if node.level:  # the project's own modules
            return
        module = node.module or ""
        if label := self._import(module):
            self.labels.add(label)
        for alias in node.names:
            if alias.name == "*":
                if purity(module) is not None:
                    self.labels.add(f"from {module} import *")
                continue
            resolved, rest, aliases = resolve(module, [alias.name])
            self.labels.update(aliases)
            if not rest:
                if label := import_label(resolved):
                    self.labels.add(label)
            elif f"{resolved}.{rest[0]}" not in NAMED_ACCESS and (label := judge_module_name(resolved, rest[0])):
                self.labels.add(label)

    def _chain(self, node: ast.Attribute) -> None:
        """An attribute chain `a.b.c`: through a module by what it resolves to, else name by name."""
        attributes: list[str] = []
        inner: ast.expr = node
        while isinstance(inner, ast.Attribute):
            attributes.append(inner.attr)
            self.judged.add(id(inner))
            inner = inner.value
        attributes.reverse()
        module = self._module_of(inner)
        if module is not None:
            self.judged.add(id(inner))
            self._module_chain(module, attributes)
            if not (isinstance(inner, ast.Name) and inner.id in self.ambiguous):
                return
        text = isinstance(inner, ast.Constant) and isinstance(inner.value, str)
        for position, attribute in enumerate(attributes):
            self._attribute(attribute, inner if position == 0 else None, text_receiver=text and position == 0)

    def _module_chain(self, module: str, attributes: list[str]) -> None:
        resolved, rest, aliases = resolve(module, attributes)
        self.labels.update(aliases)
        if module_facts(resolved.split(".")[0]) is None:  # the project's or a third party's module
            for attribute in rest:
                self._attribute(attribute, None)
            return
        if not rest:  # the chain ends at a module, held as a value
            self.labels.add(value_label(resolved))
            return
        if f"{resolved}.{rest[0]}" in NAMED_ACCESS | ATTRIBUTE_WRITERS and len(rest) == 1:
            self.labels.add(f"{resolved}.{rest[0]} as a value")  # a call of it is judged in _call
        elif label := judge_module_name(resolved, rest[0]):
            self.labels.add(label)
        elif rest[0].startswith("__") and rest[0].endswith("__"):
            self._attribute(rest[0], None)  # a pure module's dunder (`json.__dict__`) is none of its names
        for attribute in rest[1:]:
            self._attribute(attribute, None)

    def _attribute(self, attribute: str, receiver: ast.expr | None, *, text_receiver: bool = False) -> None:
        """An attribute of a value the code holds: its public names are its own business, but not
        the way up the stack, into pytest's machinery, to a module, or through a dunder."""
        if attribute in FRAME_ATTRIBUTES or attribute in MACHINERY_ATTRIBUTES or attribute in RISKY_MODULE_NAMES:
            self.labels.add(f".{attribute}")
        elif attribute.startswith("__") and attribute.endswith("__"):
            if attribute not in PLAIN_DUNDERS:
                self.labels.add(f".{attribute}")
        elif attribute.startswith("_"):
            if not (isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")):
                self.private.add(attribute)
        elif attribute in ("format", "format_map") and not text_receiver:
            self.labels.add(f".{attribute} of a computed template")

    def _name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            return
        name = node.id
        imported = self._module_of(node)
        if imported is not None:
            resolved, rest, _ = resolve(imported, [])
            if module_facts(resolved.split(".")[0]) is None:
                # The project's or a third party's: a module (`import x`) held as a value, else
                # its names are judged where read.
                label = value_label(resolved) if name in self.modules else None
            elif not rest:
                label = value_label(resolved)
            elif f"{resolved}.{rest[0]}" in NAMED_ACCESS | ATTRIBUTE_WRITERS:
                label = f"{resolved}.{rest[0]} as a value"
            else:
                label = None
            if label:
                self.labels.add(label)
            if name not in self.global_reads:
                return
        elif not self._builtin(name):
            return
        if name in REFLECTION:
            self.labels.add(f"{name} as a value")  # reduce(getattr, ...), map(getattr, ...)
        elif name not in PLAIN_BUILTINS:
            self.free.add(name)  # exec, open, __builtins__, or a name another file binds

    def _call(self, node: ast.Call) -> None:
        function = node.func
        if isinstance(function, ast.Name) and function.id in REFLECTION and self._builtin(function.id):
            self.judged.add(id(function))
            self._reflection(function.id, node)
        elif isinstance(function, ast.Name) and function.id == "type" and self._builtin("type"):
            if len(node.args) + len(node.keywords) > 1:
                self.labels.add("type() making a class")
        elif (callee := self._callee(function)) in NAMED_ACCESS:
            self.judged.update(id(part) for part in ast.walk(function))
            self._named_access(callee, node)
        elif callee in ATTRIBUTE_WRITERS:
            self.judged.update(id(part) for part in ast.walk(function))
            if callee == "functools.update_wrapper":
                given = [*node.args[:1], *(keyword.value for keyword in node.keywords if keyword.arg == "wrapper")]
                self._write(callee, given[0] if given else None)
            elif id(node) not in self.decorators:  # wraps(f) on a def of the file's own is plain
                self.labels.add(f"{callee}() held as a value")
        elif isinstance(function, ast.Call) and self._callee(function.func) == "functools.wraps":
            self.judged.add(id(function))  # wraps(f)(target): writes to target
            self.judged.update(id(part) for part in ast.walk(function.func))
            self._write("functools.wraps", node.args[0] if node.args else None)
        elif (
            isinstance(function, ast.Name)
            and function.id in ("setattr", "delattr")
            and self._builtin(function.id)
            and node.args
            and self._held_by_module(node.args[0]) is not None
        ):
            self._write(function.id, node.args[0])
        if isinstance(function, ast.Attribute) and function.attr in ("format", "format_map"):
            receiver = function.value
            if isinstance(receiver, ast.Constant) and isinstance(receiver.value, str):
                for attribute in _FORMAT_ATTRIBUTE.findall(receiver.value):
                    self._attribute(attribute, None)

    def _write(self, writer: str, target: ast.expr | None) -> None:
        """A call that writes attributes of `target` (update_wrapper's wrapper, setattr's
        object): refused on a module or what a module holds, and, for a writer whose name is
        plain, on anything but a function or class the file defines."""
        held = self._held_by_module(target) if target is not None else None
        if held is not None:
            assert target is not None
            self.labels.add(f"{writer} writes to {held}")
            self.judged.update(id(part) for part in ast.walk(target))
        elif not (isinstance(target, ast.Name) and target.id in self.owned) and writer in ATTRIBUTE_WRITERS:
            self.labels.add(f"{writer} on a value the code does not define")

    def _reflection(self, builtin: str, node: ast.Call) -> None:
        """getattr(x, "name") reads an attribute like x.name; with a name computed at run time it
        can read any, and is judged as such."""
        name = node.args[1] if len(node.args) > 1 else None
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            self.labels.add(f"{builtin}(<computed name>)")
            return
        module = self._module_of(node.args[0])
        if module is not None:
            self.judged.add(id(node.args[0]))
            self._module_chain(module, [name.value])
        receiver = node.args[0]
        if module is None or (isinstance(receiver, ast.Name) and receiver.id in self.ambiguous):
            self._attribute(name.value, receiver)

    def _callee(self, function: ast.expr) -> str:
        """The dotted name a call's function is imported as ("operator.attrgetter"), or ""."""
        chain = self._resolved_chain(function)
        return ".".join([chain[0], *chain[1]]) if chain is not None else ""

    def _named_access(self, callee: str, node: ast.Call) -> None:
        """attrgetter("a.b") and methodcaller("name", ...) read the attributes they name."""
        names = node.args if callee.endswith("attrgetter") else node.args[:1]
        literal = [arg.value for arg in names if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
        if not names or len(literal) < len(names) or (node.keywords and callee.endswith("attrgetter")):
            self.labels.add(f"{callee}(<computed name>)")
        for text in literal:
            for attribute in text.split("."):
                self._attribute(attribute, None)

    def _class(self, node: ast.ClassDef) -> None:
        if any(keyword.arg == "metaclass" for keyword in node.keywords):
            self.labels.add("a class with a metaclass")
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names = [item.name]
            else:
                names = [target.id for target in targets(item) if isinstance(target, ast.Name)]
            for name in names:
                if name.startswith("__") and name.endswith("__") and name not in PLAIN_CLASS_DUNDERS:
                    self.labels.add(f"defines {name}")

    def _rebinding(self, node: ast.stmt) -> None:
        """Assigning to (or deleting) an attribute of a module or of anything a module holds:
        rebinding another module's code (`os.environ = ...`, `plugin._write = ...`,
        `json.JSONEncoder.encode = ...`, through a name bound to it too); and assigning any
        dunder (`value.__class__ = Other`, which a read of it does not)."""
        stores = [inner for target in targets(node) for inner in ast.walk(target)
                  if isinstance(inner, ast.Attribute) and isinstance(inner.ctx, (ast.Store, ast.Del))]  # fmt: skip
        for inner in stores:
            if inner.attr.startswith("__") and inner.attr.endswith("__"):
                self.labels.add(f"assigns .{inner.attr}")
            held = self._held_by_module(inner.value)
            if held is not None:
                self.labels.add(f"assigns {held}.{inner.attr}")

    def _text(self, node: ast.Constant) -> None:
        self.labels.update(text_labels(node))


# --- the judgement ---------------------------------------------------------------------------------

_BUILTIN_NAMES = frozenset(dir(builtins))


_cache: TextCache[Uses] = TextCache(4096)


def uses(source: str) -> Uses:
    """What `source` uses beyond plain Python (see the module doc); nothing if it does not parse.
    Cached by the text's hash (gi.model.textcache)."""

    def read() -> Uses:
        try:
            tree = parse_quietly(source)
        except SyntaxError:
            return Uses(*[frozenset[str]()] * 7)
        return _Walker(tree, global_reads(source)).run()

    return _cache.get(source, read)


def risky_names(source: str) -> frozenset[str]:
    """Every use in `source` beyond plain Python, as short labels ("os._exit", ".f_back",
    "getattr(<computed name>)", "defines __eq__", "'pytest'", "import gc"), with the names it
    reads but binds nowhere ("name x") and the private attributes of values it does not define
    ("._x")."""
    found = uses(source)
    return (
        found.labels
        | {f"name {name}" for name in found.free_names}
        | {f".{name}" for name in found.private_attributes - found.defined_attributes}
    )


def _project_modules(files: Mapping[str, str]) -> set[str]:
    """The module names the editable files are imported as ("pkg/mod.py": pkg, pkg.mod)."""
    names: set[str] = set()
    for file in files:
        parts = file.removesuffix(".py").split("/")
        if parts[-1] == "__init__":
            parts.pop()
        names.update(".".join(parts[: end + 1]) for end in range(len(parts)))
    return names


def new_risky_names(
    original: Mapping[str, str], variant: Mapping[str, str], allowed: Mapping[str, str] | None = None
) -> list[str]:
    """What the variant's files use beyond plain Python that no file of the original (nor of
    `allowed`, another program whose uses are allowed) uses: "file: label" lines, sorted; empty
    when the variant adds nothing of the kind.

    A name read but bound nowhere is allowed when a file of the original binds or reads it (a
    builtin's name only when the original reads that builtin: a method named `exec` is not
    `exec`), a private attribute when the original or the file itself defines or reads it (a
    classic operator may move a statement from one file or function to another); importing one
    of the program's own editable modules is allowed."""
    labels: set[str] = set()
    names: set[str] = set()
    free: set[str] = set()
    attributes: set[str] = set()
    for source in [*original.values(), *(allowed or {}).values()]:
        found = uses(source)
        labels |= found.labels | found.quoted
        names |= found.bound_names | found.free_names
        free |= found.free_names
        attributes |= found.attribute_names | found.private_attributes
    labels |= {f"import {module}" for module in _project_modules(original)}
    flagged = []
    for file, source in sorted(variant.items()):
        if source == original.get(file):
            continue
        found = uses(source)
        new = set(found.labels - labels)
        # A builtin only where the original uses that builtin (a method of the same name is not it).
        new |= {f"name {name}" for name in found.free_names - (free | (names - _BUILTIN_NAMES))}
        new |= {f".{name}" for name in found.private_attributes - attributes - found.defined_attributes}
        flagged += [f"{file}: {label}" for label in sorted(new)]
    return flagged
