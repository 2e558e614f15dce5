"""The bindings of one file, as the tamper guard (gi.model.guard) reads them before it judges
anything: what each name is bound to (a module by an import or an alias, a def or class of the
file's own, what a module holds), which names a scope reads where none binds them (builtins, by
Python's own scoping: `symtable`), and the text that names gi's or pytest's machinery."""

from __future__ import annotations

import ast
import re
import symtable
from collections.abc import Iterator, Mapping

from gi.model.program import parse_quietly
from gi.model.stdlib import learn, module_facts, resolve

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


class Scope:
    """One file's bindings (`bindings()`), read by the guard's walk over the file."""

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
        self.modules: set[str] = set()  # names bound by `import x` (a module, whoever's)
        self.owned: set[str] = set()  # names bound by a def, a class or a lambda of the file's own
        #: Names bound to what a module holds (`c = json.JSONEncoder`) -> its dotted name.
        self.module_values: dict[str, str] = {}
        self.decorators: set[int] = set()  # ids of decorator expressions

    def bindings(self) -> None:
        """Every name the file binds, what its imports name, the attributes it defines, and its
        docstrings and bare strings (text that never runs)."""
        learn(  # the standard-library modules the file imports, in one child process
            [alias.name for node in self.nodes if isinstance(node, ast.Import) for alias in node.names]
            + [node.module for node in self.nodes if isinstance(node, ast.ImportFrom) and node.module]
        )
        for node in self.nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    self.imports[bound] = alias.name if alias.asname else bound
                    self.modules.add(bound)
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
                self.owned.add(node.name)
                self.decorators.update(id(decorator) for decorator in node.decorator_list)
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
                self.quoted.update(text_labels(node.value))
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.defined.add(item.name)
                    self.defined.update(target.id for target in targets(item) if isinstance(target, ast.Name))
        self.bound |= set(self.imports)
        aliases: dict[int, str] = {}  # the Name nodes that `m = os` binds -> the module
        for node in self.nodes:  # `m = os`: m names os wherever it is read
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                if isinstance(node.value, ast.Lambda):
                    self.owned.add(name)
                value = self._dottedmodule(node.value)
                if value is not None:
                    self.imports.setdefault(name, value)
                    aliases[id(node.targets[0])] = value
                    self.judged.update(id(part) for part in ast.walk(node.value))
                elif (held := self._held_by_module(node.value)) is not None:
                    self.module_values.setdefault(name, held)
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
        return chain[0] if chain is not None and not chain[1] and module_facts(chain[0]) is not None else None

    def _held_by_module(self, node: ast.expr) -> str | None:
        """The dotted name of what a module holds that `node` reads (`json.JSONEncoder`, a name
        bound to one), or of the module itself (`json`): None for anything else."""
        if isinstance(node, ast.Name) and node.id in self.module_values:
            return self.module_values[node.id]
        chain = self._resolved_chain(node)
        return ".".join([chain[0], *chain[1]]) if chain is not None else None

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

    def _builtin(self, name: str) -> bool:
        """Whether a read of `name` may be the builtin (or another file's global): somewhere the
        file reads it where no scope binds it, or nowhere does the file bind it (a method, a
        parameter or a class attribute of that name hides no builtin elsewhere)."""
        return name in self.global_reads or name not in self.bound


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


def global_reads(source: str) -> frozenset[str]:
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


def text_labels(node: ast.Constant) -> set[str]:
    """Labels for text that names the test machinery, a frame attribute or a dunder."""
    if not isinstance(node.value, (str, bytes)):
        return set()
    text = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
    return {repr(found.group(0)) for found in _RISKY_TEXT.finditer(text) if found.group(0) not in _PLAIN_TEXT}


def targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    if isinstance(node, ast.Delete):
        return list(node.targets)
    return []
