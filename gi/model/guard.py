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
import symtable
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from gi.model.program import parse_quietly
from gi.model.stdlib import (
    NAMED_ACCESS,
    RISKY_MODULE_NAMES,
    import_label,
    judge_module_name,
    purity,
    resolve,
    stdlib_module,
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
#: Attributes of frames, code, generators, coroutines, tracebacks and cells: the way up the stack.
FRAME_ATTRIBUTES = frozenset({
    "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace", "f_lasti", "f_lineno", "f_trace_lines",
    "f_trace_opcodes", "tb_frame", "tb_next", "tb_lasti", "tb_lineno", "gi_frame", "gi_code", "gi_yieldfrom",
    "gi_running", "gi_suspended", "cr_frame", "cr_code", "cr_await", "cr_origin", "cr_running", "ag_frame",
    "ag_code", "ag_await", "ag_running", "cell_contents", "co_consts", "co_code", "co_names", "co_varnames",
    "co_freevars", "co_cellvars", "co_filename", "co_name",
})  # fmt: skip
#: Attributes of pytest's and pluggy's machinery.
MACHINERY_ATTRIBUTES = frozenset({
    "pluginmanager", "ihook", "hookimpl", "hookwrapper", "get_hookimpls", "get_plugins", "getplugin",
    "get_plugin", "has_plugin", "list_name_plugin", "add_hookcall_monitoring", "add_hookspecs", "_hookimpls",
    "_inner_hookexec", "_hookexec", "_multicall", "pytest_impl", "pytest_spec",
})  # fmt: skip
#: Text that names the machinery (for getattr, import_module, sys.modules, format strings, ...).
_RISKY_TEXT = re.compile(
    r"pytest|pluggy|gi_py|gi_workload|gi_warm|GI_[A-Z_]+|conftest|sys\.modules|builtins|__\w+__|"
    + r"\b(?:"
    + "|".join(sorted(FRAME_ATTRIBUTES | MACHINERY_ATTRIBUTES))
    + r")\b"
)
#: Dunders that text may name (`if __name__ == "__main__"`, a docstring's `__init__`).
_PLAIN_TEXT = frozenset({"__main__", "__init__", "__name__", "__file__", "__doc__", "__future__"})
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


class _Walker:
    """Collects one file's `Uses`. ast.walk visits a node before its children, so a call or an
    attribute chain judges its parts and marks them (`judged`) before they are visited alone."""

    def __init__(self, tree: ast.Module, global_reads: frozenset[str]) -> None:
        self.nodes = list(ast.walk(tree))
        #: Names some scope reads where no scope around it binds them: builtins (or globals of
        #: another file), whatever else of the same name the file binds elsewhere.
        self.global_reads = global_reads
        self.labels: set[str] = set()
        self.free: set[str] = set()
        self.private: set[str] = set()
        self.imports: dict[str, str] = {}  # a name bound by an import -> what it names ("os.path")
        self.bound: set[str] = set()
        self.defined: set[str] = set()
        self.attributes: set[str] = set()  # every attribute name the file reads or writes
        self.quoted: set[str] = set()  # the text labels of its docstrings and bare strings
        self.judged: set[int] = set()  # ids of nodes already judged as part of a larger one
        self.ambiguous: set[str] = set()  # module names that may name something else (`_bindings`)

    def run(self) -> Uses:
        self._bindings()
        for node in self.nodes:
            if id(node) not in self.judged:
                self._visit(node)
        return Uses(frozenset(self.labels), frozenset(self.free), frozenset(self.private),
                    frozenset(self.bound), frozenset(self.defined), frozenset(self.attributes),
                    frozenset(self.quoted))  # fmt: skip

    def _bindings(self) -> None:
        """Every name the file binds, what its imports name, the attributes it defines, and its
        docstrings and bare strings (text that never runs)."""
        for node in self.nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    self.imports[bound] = alias.name if alias.asname else bound
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name != "*":
                        # Relative imports are the project's own modules: not resolved here.
                        base = node.module or ""
                        self.imports[alias.asname or alias.name] = (
                            f"{base}.{alias.name}" if not node.level else f".{alias.name}"
                        )
            elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self.bound.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.bound.add(node.name)
            elif isinstance(node, ast.arg):
                self.bound.add(node.arg)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                self.bound.update(node.names)
            elif (isinstance(node, ast.ExceptHandler) and node.name) or (
                isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name
            ):
                self.bound.add(node.name)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                self.bound.add(node.rest)
            elif isinstance(node, ast.Attribute):
                self.attributes.add(node.attr)
                if isinstance(node.ctx, ast.Store):
                    self.defined.add(node.attr)
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                self.judged.add(id(node.value))  # a docstring or a bare string never runs
                self.quoted.update(_text_labels(node.value))
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.defined.add(item.name)
                    self.defined.update(target.id for target in _targets(item) if isinstance(target, ast.Name))
        self.bound |= set(self.imports)
        aliases: dict[int, str] = {}  # the Name nodes that `m = os` binds -> the module
        for node in self.nodes:  # `m = os`: m names os wherever it is read
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                value = self._dottedmodule(node.value)
                if value is not None:
                    self.imports.setdefault(node.targets[0].id, value)
                    aliases[id(node.targets[0])] = value
                    self.judged.update(id(part) for part in ast.walk(node.value))
        named: dict[str, set[str]] = {}
        for name, what in _bindings_of(self.nodes, aliases):
            named.setdefault(name, set()).add(what)
        #: Names that are a module in one place and may be something else in another (`import
        #: math as m` and `m = <a generator>`; read where no scope binds them): their attributes
        #: are judged both ways. (`import os` in two functions is os both times.)
        self.ambiguous = {name for name, what in named.items() if len(what) > 1 and name in self.imports}
        self.ambiguous |= self.global_reads & set(self.imports)

    def _dottedmodule(self, node: ast.expr) -> str | None:
        """The module an expression `a.b.c` names, when `a` is imported and the chain resolves
        to a standard-library module; None otherwise."""
        chain = self._resolved_chain(node)
        return chain[0] if chain is not None and not chain[1] and stdlib_module(chain[0]) is not None else None

    def _resolved_chain(self, node: ast.expr) -> tuple[str, list[str]] | None:
        """`a.b.c` with `a` imported, resolved: (the module reached, the attributes left); None
        when the chain does not start at an imported name."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        module = self._module_of(node)
        if module is None:
            return None
        resolved, rest, aliases = resolve(module, list(reversed(parts)))
        self.labels.update(aliases)
        return resolved, rest

    def _module_of(self, node: ast.expr) -> str | None:
        """What an imported name names (an absolute dotted name), or None."""
        if isinstance(node, ast.Name) and node.id in self.imports and not self.imports[node.id].startswith("."):
            return self.imports[node.id]
        return None

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
        loaded = stdlib_module(module)
        return import_label(loaded.__name__ if loaded is not None else module)

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
        if stdlib_module(resolved.split(".")[0]) is None:  # the project's or a third party's module
            for attribute in rest:
                self._attribute(attribute, None)
            return
        if not rest:  # the chain ends at a module, held as a value
            if label := value_label(resolved):
                self.labels.add(label)
            return
        if f"{resolved}.{rest[0]}" in NAMED_ACCESS and len(rest) == 1:
            self.labels.add(f"{resolved}.{rest[0]} as a value")  # a call of it is judged in _call
        elif label := judge_module_name(resolved, rest[0]):
            self.labels.add(label)
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
            if stdlib_module(resolved.split(".")[0]) is None:
                label = None  # the project's or a third party's: its names are judged where read
            elif not rest:
                label = value_label(resolved)
            elif f"{resolved}.{rest[0]}" in NAMED_ACCESS:
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

    def _builtin(self, name: str) -> bool:
        """Whether a read of `name` may be the builtin (or another file's global): somewhere the
        file reads it where no scope binds it, or nowhere does the file bind it (a method, a
        parameter or a class attribute of that name hides no builtin elsewhere)."""
        return name in self.global_reads or name not in self.bound

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
        if isinstance(function, ast.Attribute) and function.attr in ("format", "format_map"):
            receiver = function.value
            if isinstance(receiver, ast.Constant) and isinstance(receiver.value, str):
                for attribute in _FORMAT_ATTRIBUTE.findall(receiver.value):
                    self._attribute(attribute, None)

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
                names = [target.id for target in _targets(item) if isinstance(target, ast.Name)]
            for name in names:
                if name.startswith("__") and name.endswith("__") and name not in PLAIN_CLASS_DUNDERS:
                    self.labels.add(f"defines {name}")

    def _rebinding(self, node: ast.stmt) -> None:
        """Assigning to (or deleting) an existing attribute of a module: rebinding another
        module's code (`os.environ = ...`, `plugin._write = ...`); and assigning any dunder
        (`value.__class__ = Other`, which a read of it does not)."""
        for target in _targets(node):
            for inner in ast.walk(target):
                if not isinstance(inner, ast.Attribute):
                    continue
                if inner.attr.startswith("__") and inner.attr.endswith("__"):
                    self.labels.add(f"assigns .{inner.attr}")
                parts = [inner.attr]
                base = inner.value
                while isinstance(base, ast.Attribute):
                    parts.append(base.attr)
                    base = base.value
                module = self._module_of(base)
                if module is None:
                    continue
                resolved, rest, _ = resolve(module, list(reversed(parts)))
                loaded = stdlib_module(resolved)
                if loaded is None or (len(rest) == 1 and hasattr(loaded, rest[0])):
                    self.labels.add(f"assigns {'.'.join([resolved, *rest])}")

    def _text(self, node: ast.Constant) -> None:
        self.labels.update(_text_labels(node))


def _bindings_of(nodes: list[ast.AST], aliases: Mapping[int, str]) -> Iterator[tuple[str, str]]:
    """Each binding in `nodes`: the name, and the module it binds the name to ("" for any
    other value); `aliases` are the Name nodes of `m = os` assignments."""
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield (alias.asname, alias.name) if alias.asname else (alias.name.split(".")[0],) * 2
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            yield from (
                (alias.asname or alias.name, f"{base}.{alias.name}") for alias in node.names if alias.name != "*"
            )
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            yield node.id, aliases.get(id(node), "")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name, ""
        elif isinstance(node, ast.arg):
            yield node.arg, ""
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            yield node.name, ""
        elif isinstance(node, ast.MatchMapping) and node.rest:
            yield node.rest, ""


def _global_reads(source: str) -> frozenset[str]:
    """The names some scope of `source` reads as a global or builtin that the module does not
    bind (by Python's own scoping, `symtable`); every name read when it does not compile."""
    try:
        top = symtable.symtable(source, "<variant>", "exec")
    except (SyntaxError, ValueError):
        return frozenset(node.id for node in ast.walk(parse_quietly(source)) if isinstance(node, ast.Name))
    bound = {symbol.get_name() for symbol in top.get_symbols() if symbol.is_assigned() or symbol.is_imported()}
    reads: set[str] = set()
    tables = [top]
    while tables:
        table = tables.pop()
        for symbol in table.get_symbols():
            if symbol.is_declared_global() and (symbol.is_assigned() or symbol.is_imported()):
                bound.add(symbol.get_name())  # `global x` and `x = ...` in a function
            elif symbol.is_referenced() and symbol.is_global():
                reads.add(symbol.get_name())
        tables.extend(table.get_children())
    return frozenset(reads - bound)


def _text_labels(node: ast.Constant) -> set[str]:
    """Labels for text that names the test machinery, a frame attribute or a dunder."""
    if not isinstance(node.value, (str, bytes)):
        return set()
    text = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
    return {repr(found.group(0)) for found in _RISKY_TEXT.finditer(text) if found.group(0) not in _PLAIN_TEXT}


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    if isinstance(node, ast.Delete):
        return list(node.targets)
    return []


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
        return _Walker(tree, _global_reads(source)).run()

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
