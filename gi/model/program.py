"""The target program: its files, parsed once with libcst, and the sites an edit can touch.

A site is addressed by a `Location`: the file and a path of field/index steps from the
module root of the *original* parse ("body[2].body.body[0]"). Paths are stable across
parses and processes, unlike libcst node objects, so edits stay plain data.
"""

from __future__ import annotations

import ast
import fnmatch
import gc
import hashlib
import io
import os
import threading
import tokenize
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import libcst as cst
import libcst.metadata

from gi.model.errors import ProgramError
from gi.model.sites import Location, Site, SiteKind, _SiteCollector

#: Folders never copied into a sandbox nor searched for editable files.
IGNORED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "node_modules",
        ".eggs",
        "build",
        "dist",
    }
)


def _matching_files(root: Path, pattern: str) -> list[str]:
    """Relative paths of the .py files under `root` that match a glob, skipping caches and VCS folders."""
    if not any(char in pattern for char in "*?["):
        return [pattern] if pattern.endswith(".py") and os.path.lexists(root / pattern) else []
    found = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(name for name in subfolders if name not in IGNORED_DIRS)
        for name in sorted(names):
            relative = (Path(folder) / name).relative_to(root).as_posix()
            if name.endswith(".py") and fnmatch.fnmatchcase(relative, pattern):
                found.append(relative)
    return found


def _is_test_file(relative: str, protected: Sequence[str]) -> bool:
    """Is `relative` a conftest.py, or inside one of the `protected` test paths?"""
    path = Path(relative)
    inside = any(path == Path(test) or Path(test) in path.parents for test in protected)
    return path.name == "conftest.py" or inside


def outside(root: Path, relative: str) -> bool:
    """Whether a path relative to `root` leads out of it (absolute, or climbing with `..`)."""
    path = Path(relative)
    return path.is_absolute() or ".." in path.parts or not (root / path).resolve().is_relative_to(root.resolve())


def _check_editable(root: Path, relative: str) -> None:
    """An editable file must be a regular file inside `root`, reached without links: gi must
    never write, nor let a variant write, anywhere else."""
    if outside(root, relative):
        raise ProgramError(
            f"program.files: {relative!r} lies outside the project folder {root}: gi edits only files inside it"
            " (the tests run in a copy of that folder, so they would never see an edit elsewhere)"
        )
    current = root
    for part in Path(relative).parts:
        current = current / part
        if current.is_symlink():
            raise ProgramError(f"{root / relative}: an editable file must not be or lie behind a symbolic link")
    if not current.is_file():
        raise ProgramError(f"{current}: an editable file must be a regular file inside {root}")


def decode_source(data: bytes, path: Path) -> tuple[str, str]:
    """The text of a Python file and its encoding: UTF-8 (a byte-order mark is dropped) or the
    encoding its coding declaration names (PEP 263), as the interpreter reads it."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as error:
        raise ProgramError(f"{path}: cannot read the file as Python source ({error})") from None
    return text.removeprefix("\ufeff"), "utf-8" if encoding == "utf-8-sig" else encoding


# warnings.catch_warnings swaps the process's one list of filters; the lock keeps gi's
# evaluation threads from putting back one another's swapped lists.
_WARNING_FILTERS = threading.RLock()


@contextmanager
def compiler_warnings_ignored() -> Iterator[None]:
    """Within it, code parsed or compiled in gi's process does not warn (see `parse_quietly`)."""
    with _WARNING_FILTERS, warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)  # invalid escapes before 3.12
        yield


def parse_quietly(source: str, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse` in gi's own process without the compiler's warnings (raises SyntaxError).

    Legal code can make the compiler warn ('"is" with a literal', an invalid escape sequence).
    Code a variant or a model wrote is parsed and compiled here to judge it, and its warnings
    would print on the user's terminal naming their file, or, under `python -W error`, turn a
    legal variant into a syntax error. They are the variant's own: its test run shows them.
    """
    with compiler_warnings_ignored():
        return ast.parse(source, filename=filename)


def compile_quietly(source: str, filename: str) -> None:
    """Compile `source` as a module, as the interpreter would import it, without the compiler's
    warnings (see `parse_quietly`); raises SyntaxError."""
    with compiler_warnings_ignored():
        compile(source, filename, "exec", dont_inherit=True)


@contextmanager
def garbage_collection_paused() -> Iterator[None]:
    """Within it, Python's cyclic garbage collector does not run. Parsing and indexing a module
    makes millions of objects and no garbage; each collection of the oldest generation walked
    them all again, which on a module of megabytes took about as long as the work itself."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def normalised_dump(source: str, filename: str = "<variant>") -> str:
    """The syntax tree of `source` without formatting and comments (raises SyntaxError)."""
    return ast.dump(parse_quietly(source, filename))


#: Characters from which parsing and indexing a file takes about a second or more: `Program`
#: reports its steps on such a file.
LARGE_FILE = 200_000


class Program:
    """The target: a project folder, the files GI may edit, their parses and their sites.

    Built once per run with `Program.load`; immutable afterwards. Every edit refers to
    sites of this object by `Location`.
    """

    def __init__(
        self,
        root: Path,
        sources: Mapping[str, str],
        encodings: Mapping[str, str] | None = None,
        *,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        """Parse and index `sources` (file relative to `root` -> text); `progress` is told each
        step (parsing, indexing its sites) on each file of LARGE_FILE characters or more, which
        take seconds, so that a run is never silent on a large module."""
        self.root = root
        self.files: tuple[str, ...] = tuple(sorted(sources))
        self.sources: Mapping[str, str] = dict(sources)
        #: How each file is written back (its coding declaration's encoding; UTF-8 by default).
        self.encodings: Mapping[str, str] = {file: (encodings or {}).get(file, "utf-8") for file in self.files}
        self.modules: dict[str, cst.Module] = {}
        self._nodes: dict[Location, cst.CSTNode] = {}
        self._code: dict[Location, str] = {}
        sites: list[Site] = []
        self._dumps: dict[str, str] = {}
        tell = progress or (lambda step: None)
        with garbage_collection_paused():
            for number, file in enumerate(self.files, start=1):
                size = len(self.sources[file])
                which = f"{file} ({number} of {len(self.files)}, {size / 1e6:.2g} MB)"
                if size >= LARGE_FILE:
                    tell(f"parsing {which}")
                module = self._parse(root, file)
                if size >= LARGE_FILE:
                    tell(f"indexing the sites of {which}")
                collector = _SiteCollector(file, module)
                collector.collect()
                sites.extend(collector.sites)
                self._nodes.update(collector.nodes)
        self.sites: tuple[Site, ...] = tuple(sites)
        self._by_kind: dict[SiteKind, tuple[Site, ...]] = {
            kind: tuple(site for site in sites if site.kind is kind) for kind in SiteKind
        }
        self._site_at = {(site.location, site.kind): site for site in sites}
        self.tree_hash = tree_hash(self._dumps)

    def _parse(self, root: Path, file: str) -> cst.Module:
        """One editable file's libcst module (its normalised syntax tree noted for the tree hash);
        raises ProgramError naming the line of a syntax error."""
        source = self.sources[file]
        try:
            # The interpreter's compiler first: its errors name the right line and say what
            # is wrong in Python's words ("Missing parentheses in call to 'print'", a TabError).
            compile_quietly(source, file)
            module = cst.parse_module(source)
            self._dumps[file] = normalised_dump(source, file)
        except SyntaxError as error:
            raise ProgramError(f"{root / file}:{error.lineno or '?'}: cannot parse: {error.msg}") from None
        except cst.ParserSyntaxError as error:
            raise ProgramError(f"{root / file}:{error.raw_line}: cannot parse: {error.message}") from None
        self.modules[file] = module
        return module

    @classmethod
    def load(
        cls,
        root: Path | str,
        patterns: Sequence[str],
        *,
        protected: Sequence[str] = (),
        progress: Callable[[str], None] | None = None,
    ) -> Program:
        """Read the files under `root` that match the glob `patterns` (relative to root).

        Test files are never editable: a glob skips every conftest.py and everything under the
        `protected` paths (the training and held-out tests); naming one outright is an error.
        """
        root = Path(root).resolve()
        if not root.is_dir():
            raise ProgramError(f"{root}: the program folder does not exist")
        sources: dict[str, str] = {}
        encodings: dict[str, str] = {}
        for pattern in patterns:
            if outside(root, pattern):
                _check_editable(root, pattern)
            explicit = not any(char in pattern for char in "*?[")
            matches = _matching_files(root, pattern)
            if explicit and matches and _is_test_file(matches[0], protected):
                raise ProgramError(
                    f"{root / pattern}: tests and conftest.py are never editable (program.files names a test file)"
                )
            matches = [name for name in matches if not _is_test_file(name, protected)]
            if not matches:
                raise ProgramError(f"{root}: no Python file matches {pattern!r} (globs are relative to the folder)")
            for name in matches:
                _check_editable(root, name)
                sources[name], encodings[name] = decode_source((root / name).read_bytes(), root / name)
        return cls(root, sources, encodings, progress=progress)

    def sites_of(self, kind: SiteKind) -> tuple[Site, ...]:
        return self._by_kind[kind]

    def site(self, location: Location, kind: SiteKind) -> Site | None:
        return self._site_at.get((location, kind))

    def node(self, location: Location) -> cst.CSTNode:
        """The original node at a site; raises KeyError for a location that is no site."""
        return self._nodes[location]

    def functions(self) -> dict[tuple[str, int], str]:
        """Qualified name ("Class.method") of every function, by (file, first line): the line of
        its `def` and, for a decorated function, also that of its first decorator (where
        cProfile places it)."""
        names: dict[tuple[str, int], str] = {}
        for file in self.files:
            for qualified, node in function_nodes(parse_quietly(self.sources[file], file)):
                names[(file, node.lineno)] = qualified
                if node.decorator_list:
                    names[(file, node.decorator_list[0].lineno)] = qualified
        return names

    def code(self, location: Location) -> str:
        """The original source of the node at a site, without the lines above it (cached)."""
        text = self._code.get(location)
        if text is None:
            node = self.node(location)
            if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                node = node.with_changes(leading_lines=())
            text = self._code[location] = self.modules[location.file].code_for_node(node)
        return text

    def has_site(self, location: Location) -> bool:
        return location in self._nodes

    def normalised(self, file: str) -> str:
        return self._dumps[file]


def function_nodes(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(qualified name, node) of every function in `tree`, methods as "Class.method"."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            qualified = f"{prefix}.{node.name}" if prefix else node.name
            if not isinstance(node, ast.ClassDef):
                yield qualified, node
            yield from function_nodes(node, qualified)
        else:
            yield from function_nodes(node, prefix)


def tree_hash(dumps: Mapping[str, str]) -> str:
    """Hash of the normalised trees of all editable files: equal programs, equal hashes."""
    digest = hashlib.sha256()
    for file in sorted(dumps):
        digest.update(file.encode())
        digest.update(b"\0")
        digest.update(dumps[file].encode())
        digest.update(b"\0")
    return digest.hexdigest()
