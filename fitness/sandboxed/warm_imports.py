"""gi's warm test worker's imports (warm_worker.py, installed beside it as gi_warm_imports.py):
what the worker imports and compiles once for all its children, and how a child imports its
variant.

- The worker preloads pytest, its plugins and the project's third-party dependencies as a cold
  run imports them (`preload`, under pytest's assertion rewriting hook), compiles the original's
  editable modules once (`CompiledOriginals`), and rewrites the asserts of the project's test
  modules, conftest.py files and gi's tools once (`cache_rewrites`).
- It fills once what pytest reads to report a failure: the lines of the test modules
  (`warm_source_lookups`), their trees and the original's (`cache_statement_ranges`), and the
  paths of the installed Python's frames (`cache_installed_paths`).
- A child imports its variant's editable modules from the request's sources, under their real
  file names (`VariantFinder`), and so does every Python process its tests start
  (`serve_spawned`: a `sitecustomize` that loads this file's finder).

It needs only the standard library and pytest.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import linecache
import os
import sys
import warnings
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

#: The worker's file name in the tools folder (gi.engine.warm.WORKER_NAME): the worker's own files
#: are not rewritten nor cached.
WORKER_FILE = "gi_warm_worker.py"
#: What the worker cleans with between children (gi.engine.warm.CLEANING_NAME): the worker's too.
CLEANING_FILE = "gi_warm_cleaning.py"
#: How the worker forks its children ahead (gi.engine.warm.SPARE_NAME): the worker's too.
SPARE_FILE = "gi_warm_spare.py"


class CompiledOriginals:
    """The code of the original's editable modules (GI_EDITABLE), compiled once, in the worker:
    a child importing one its variant leaves as it is (from the copy on disk) takes its code
    from here instead of compiling it (`serve_compiled_originals`). No bytecode is written in
    the sandbox, so each child compiled every module of the project it imported (on toolz about
    a fifth of a child's time). A module whose compilation warns is never cached: the child
    compiles it and warns, under the project's warning filters, as a cold run does."""

    def __init__(self) -> None:
        self._code: dict[str, tuple[bytes, CodeType | None]] = {}

    def note(self, filenames: Iterable[str]) -> None:
        """Compile the original's text of each editable file not compiled yet (its copy on disk)."""
        for filename in filenames:
            if filename not in self._code:
                self._code[filename] = self._compiled(filename)

    @staticmethod
    def _compiled(filename: str) -> tuple[bytes, CodeType | None]:
        try:
            with open(filename, "rb") as stream:
                data = stream.read()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                code = compile(data, filename, "exec", dont_inherit=True)
        except (OSError, SyntaxError, ValueError):
            return b"", None
        return data, None if caught else code

    def code(self, filename: str, data: bytes) -> CodeType | None:
        """The cached code of `filename` if `data` is the original's text, else None."""
        known = self._code.get(filename)
        return known[1] if known is not None and known[0] == data else None


#: The worker's compiled originals, shared by its children (fork).
ORIGINALS = CompiledOriginals()


def serve_compiled_originals(files: Iterable[str]) -> None:
    """Compile the editable `files` (relative to the copy) once, and make the file system's
    loader take a module's code from them when the source it read is the original's."""
    ORIGINALS.note(os.path.abspath(file) for file in files)
    loader = importlib.machinery.SourceFileLoader
    compile_source = loader.source_to_code

    def source_to_code(self: Any, data: bytes, path: str, *, _optimize: int = -1) -> CodeType:
        code = ORIGINALS.code(os.path.abspath(path), data) if _optimize == -1 else None
        return code if code is not None else compile_source(self, data, path, _optimize=_optimize)

    loader.source_to_code = source_to_code  # type: ignore[method-assign,assignment]


class MemorySource(importlib.abc.SourceLoader):
    """Loads a module from the variant's source text, under its real file name."""

    def __init__(self, filename: str, text: str) -> None:
        self.filename = filename
        self.text = text

    def get_filename(self, fullname: str) -> str:
        return self.filename

    def get_data(self, path: str) -> bytes:
        if path == self.filename:
            return self.text.encode("utf-8")
        with open(path, "rb") as stream:
            return stream.read()


class VariantFinder(importlib.abc.MetaPathFinder):
    """Serves the editable files (absolute path -> the variant's text) ahead of the disk."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.sources = sources

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        # A top-level name is looked for along sys.path, a submodule in its package's folder.
        entries = sys.path if path is None else path
        tail = fullname.rpartition(".")[2]
        for entry in entries:
            base = os.path.join(os.path.abspath(entry or os.getcwd()), tail)
            for filename, package in ((base + ".py", False), (os.path.join(base, "__init__.py"), True)):
                if filename in self.sources:
                    loader = MemorySource(filename, self.sources[filename])
                    locations = [os.path.dirname(filename)] if package else None
                    return importlib.util.spec_from_file_location(
                        fullname, filename, loader=loader, submodule_search_locations=locations
                    )
        return None


#: What a Python process the tests start runs first (as `sitecustomize`, from the child's
#: TMPDIR): the variant's finder from this module, then the sitecustomize it hides.
SPAWNED_BOOTSTRAP = """\
import importlib.machinery, importlib.util, json, os, sys

_here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(_here, "gi_variant_sources.json"), encoding="utf-8") as _stream:
    _sources = json.load(_stream)
_spec = importlib.util.spec_from_file_location("gi_warm_imports_finder", os.environ["GI_WARM_IMPORTS_FILE"])
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
sys.meta_path.insert(0, _module.VariantFinder(_sources))
_module.watch_spawns(_here)
_others = [entry for entry in sys.path if entry and os.path.abspath(entry) != _here]
_hidden = importlib.machinery.PathFinder.find_spec("sitecustomize", _others)
if _hidden is not None and _hidden.loader is not None:
    _hidden.loader.exec_module(importlib.util.module_from_spec(_hidden))
"""


def variant_folder() -> str:
    """Where a child leaves its variant for the processes it starts (in TMPDIR, emptied after
    each child)."""
    return os.path.join(os.environ["TMPDIR"], "gi-variant")


def serve_spawned(sources: dict[str, str]) -> None:
    """Make every Python process the child starts import the variant too: its sources and the
    bootstrap in `variant_folder`, first on the PYTHONPATH the child's processes inherit; and
    note each process started without it (`watch_spawns`)."""
    folder = variant_folder()
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "gi_variant_sources.json"), "w", encoding="utf-8") as stream:
        json.dump(sources, stream)
    with open(os.path.join(folder, "sitecustomize.py"), "w", encoding="utf-8") as stream:
        stream.write(SPAWNED_BOOTSTRAP)
    os.environ["GI_WARM_IMPORTS_FILE"] = os.path.abspath(__file__)
    os.environ["PYTHONPATH"] = os.pathsep.join([folder, *filter(None, [os.environ.get("PYTHONPATH", "")])])
    watch_spawns(folder)


#: Where `watch_spawns` notes the processes started without the variant, in `variant_folder`.
UNSERVED_NOTES = "gi_started_without_variant.txt"
#: The audit events of a process start, each with the index of its environment argument (None:
#: the process inherits this one's).
_STARTS = {"subprocess.Popen": 3, "os.posix_spawn": 2, "os.exec": 2, "os.system": None}


def watch_spawns(folder: str) -> None:
    """Note (in `UNSERVED_NOTES`) each process started with an environment that no longer hands
    it the variant: one of its own (`env=`) or this one's with PYTHONPATH changed. Such a process
    imports the original from the worker's copy; a cold run's copy holds the variant, so the
    warm run is not the cold one. An audit hook: no code can remove it, and a process started
    with the variant watches the processes it starts in turn."""
    notes = os.path.join(folder, UNSERVED_NOTES)
    imports_file = os.environ["GI_WARM_IMPORTS_FILE"]

    def value(env: Any, name: str) -> str:
        for key in (name, name.encode()):  # os.environ's keys are text, os.environb's bytes
            with contextlib.suppress(Exception):
                return os.fsdecode(env[key])
        return ""

    def served(env: Any) -> bool:
        paths = value(env, "PYTHONPATH").split(os.pathsep)
        return folder in paths and value(env, "GI_WARM_IMPORTS_FILE") == imports_file

    def note(event: str, arguments: tuple[Any, ...]) -> None:
        index = _STARTS[event]
        own = arguments[index] if index is not None and index < len(arguments) else None
        if served(os.environ if own is None else own):
            return
        command = arguments[1] if len(arguments) > 1 else arguments[0]
        words = " ".join(map(str, command)) if isinstance(command, (list, tuple)) else str(command)
        how = "with PYTHONPATH changed" if own is None else "with an environment of its own"
        with open(notes, "a", encoding="utf-8") as stream:
            stream.write(f"{words[:200]!r} started {how}\n")

    def hook(event: str, arguments: tuple[Any, ...]) -> None:
        if event in _STARTS:
            with contextlib.suppress(Exception):  # a note lost must not fail the process start
                note(event, arguments)

    sys.addaudithook(hook)


def started_without_variant() -> str:
    """The first process `watch_spawns` noted in this worker's last child, or ""."""
    try:
        with open(os.path.join(variant_folder(), UNSERVED_NOTES), encoding="utf-8") as stream:
            return stream.readline(1000).strip()
    except (OSError, ValueError):
        return ""


def rewriting_as_pytest_does() -> Any:
    """pytest's assertion rewriting import hook, installed and told which modules to rewrite as
    pytest does before it loads its plugins (every top-level module of a distribution that
    brings a pytest plugin); its config, whose cleanup removes the hook; or None when this
    pytest cannot be asked. A module imported through the hook is one pytest rewrote: in a child,
    pytest finds it imported by a hook of its own kind and stays silent, as it does in a cold
    run. Imported without it, pytest warns "Module already imported so cannot be rewritten"
    when it starts, and a project whose settings turn warnings into errors
    (`filterwarnings = ["error"]`) stops there."""
    try:
        from _pytest.assertion import install_importhook
        from _pytest.config import get_config

        config = get_config()
        hook = install_importhook(config)
    except Exception:
        return None
    try:
        config._mark_plugins_for_rewrite(hook, False)  # type: ignore[call-arg,unused-ignore]
    except TypeError:  # an older pytest takes the hook alone
        try:
            config._mark_plugins_for_rewrite(hook)  # type: ignore[call-arg,unused-ignore]
        except Exception:
            config._ensure_unconfigure()
            return None
    except Exception:
        config._ensure_unconfigure()
        return None
    return config


def preload(modules: Sequence[str], blocked: Collection[str] = ()) -> None:
    """Import pytest, its plugins (but those the runs block, `-p no:NAME`) and the project's
    third-party dependencies, once, each as a cold run imports it (`rewriting_as_pytest_does`);
    where pytest cannot be asked how, only pytest's own plugins (the children import the rest,
    as a cold run does)."""
    import pytest  # noqa: F401
    from _pytest import config

    for name in (*config.essential_plugins, *config.default_plugins):
        with contextlib.suppress(ImportError):
            importlib.import_module(f"_pytest.{name}")
    # gi's plugin asks where the standard library lies; the first answer reads the build's
    # configuration (a few milliseconds in every child otherwise).
    with contextlib.suppress(Exception):
        import sysconfig

        sysconfig.get_paths()
    rewriting = rewriting_as_pytest_does()
    if rewriting is None:
        return
    try:
        for entry in importlib.metadata.entry_points(group="pytest11"):
            if entry.name in blocked:  # (what it imports would be every child's memory to copy)
                continue
            with contextlib.suppress(BaseException):  # a broken plugin is pytest's to report in the child
                entry.load()
        for name in modules:
            with contextlib.suppress(BaseException):
                importlib.import_module(name)
    finally:
        rewriting._ensure_unconfigure()
    # A module of the project's own must not stay imported here (named as a third-party one by
    # mistake, or imported by one): each child would find it and run it in place of its variant.
    project = os.path.join(os.getcwd(), "")
    for name, module in list(sys.modules.items()):
        if name != "__main__" and str(getattr(module, "__file__", None) or "").startswith(project):
            del sys.modules[name]


def import_deferred(plugin: str, deferred: str) -> bool:
    """Import gi's report plugin `plugin` here, once, through pytest's rewriting hook as `-p`
    would (so pytest stays silent when a child loads it), with `deferred` set: the plugin reads
    its key and makes its hooks only when a child activates it. Returns whether it imported;
    if not, each child imports it as a cold run does."""
    rewriting = rewriting_as_pytest_does()
    os.environ[deferred] = "1"
    try:
        if rewriting is not None:
            from _pytest.assertion.rewrite import assertstate_key

            rewriting.stash[assertstate_key].hook.mark_rewrite(plugin)
        importlib.import_module(plugin)
    except Exception:
        sys.modules.pop(plugin, None)
        return False
    finally:
        os.environ.pop(deferred, None)
        if rewriting is not None:
            rewriting._ensure_unconfigure()
    return True


def warm_source_lookups(files: Iterable[str]) -> None:
    """Fill, once here, what pytest reads to show a failure, which each child would otherwise
    build anew: the standard library's map from files to the modules imported (the first
    `inspect.getmodule` of a process resolves the real path of every module's file), the regular
    expressions that find a statement's lines, and the lines of `files` (the project's test
    modules: they are never edited)."""
    import inspect

    with contextlib.suppress(Exception):
        inspect.getmodule(warm_source_lookups.__code__)  # (a code object: the lookup by file)
        inspect.getsource(warm_source_lookups)  # the patterns of findsource and of tokenize, compiled
    for file in files:
        linecache.getlines(file)


#: The most text `cache_statement_ranges` parses (a tree takes some 36 times its text's memory in
#: the worker and in each child's address space): a large suite's files past it parse as usual.
PARSED_CHARACTERS = 256 * 1024


def cache_statement_ranges(files: Iterable[str]) -> int:
    """Parse, once here, the files whose lines a failure's report shows that are the same for
    every variant (`files`: the project's test modules, the editable files as in the original),
    smallest first, up to PARSED_CHARACTERS in all, and find their statements' lines: pytest
    parses each file of a failure's traceback anew for each failure (its cache lives as long as
    one report). A child's report takes a tree from here when the source it would parse is the
    very text parsed; else it parses as usual. Returns how many texts are held."""
    try:
        from _pytest._code import code
        from _pytest._code import source as pytest_source

        original = pytest_source.getstatementrange_ast
        linenos = getattr(pytest_source, "_statement_linenos", None)  # memoized on the tree (pytest 9)
    except (ImportError, AttributeError):  # another pytest: children parse as usual
        return 0
    if vars(code).get("getstatementrange_ast") is not original:  # (the name code.py imported)
        return 0
    # The text pytest's `findsource` makes of a file's lines, which it parses.
    texts = sorted(("\n".join(line.rstrip() for line in linecache.getlines(file)) for file in files), key=len)
    budget = PARSED_CHARACTERS
    for text in texts:
        budget -= len(text)
        if budget < 0:
            break
        with contextlib.suppress(Exception), warnings.catch_warnings():  # (it does not parse: as usual)
            warnings.simplefilter("ignore")
            tree = ast.parse(text, "source", "exec")
            if linenos is not None:
                linenos(tree)
            PARSED[text] = tree

    def getstatementrange_ast(
        lineno: int, source: pytest_source.Source, assertion: bool = False, astnode: ast.AST | None = None
    ) -> tuple[ast.AST, int, int]:
        if astnode is None:
            astnode = PARSED.get(str(source))
        found: tuple[ast.AST, int, int] = original(lineno, source, assertion=assertion, astnode=astnode)
        return found

    pytest_source.getstatementrange_ast = vars(code)["getstatementrange_ast"] = getstatementrange_ast
    return len(PARSED)


#: The trees `cache_statement_ranges` parsed, by the text parsed.
PARSED: dict[str, ast.AST] = {}


def cache_installed_paths() -> int:
    """Resolve, once here and as pytest does, the path pytest's report of a failure gives each
    frame of its traceback in the installed Python (pytest's, pluggy's and the standard
    library's frames, most of a traceback before pytest cuts it): it checks that the file
    exists, for every frame, as it filters and cuts each failure's traceback. The installed
    files do not change during a run (in the sandbox they are read-only). Files outside the
    installation (the project's, the variant's) are looked up as usual. Returns how many paths
    were resolved."""
    try:
        from _pytest._code import code

        lookup = code.Code.path
    except (ImportError, AttributeError):
        return 0
    if not isinstance(lookup, property) or lookup.fget is None:
        return 0
    resolve = lookup.fget
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    installed = tuple({os.path.join(way(p), "") for p in prefixes for way in (os.path.abspath, os.path.realpath)})
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and os.path.isabs(file) and file.startswith(installed) and file.endswith(".py"):
            with contextlib.suppress(Exception):
                found = resolve(code.Code(compile("", file, "exec")))  # pytest's own answer for the file
                if isinstance(found, Path):
                    INSTALLED_PATHS[file] = found

    def path(self: Any) -> Path | str:
        found = INSTALLED_PATHS.get(self.raw.co_filename)
        return found if found is not None else resolve(self)

    code.Code.path = property(path, doc=lookup.__doc__)
    return len(INSTALLED_PATHS)


#: The installed files `cache_installed_paths` found, each as the path pytest gives its frames.
INSTALLED_PATHS: dict[str, Path] = {}


def warm_collection_patterns(config: Any) -> None:
    """Compile, once here, the patterns pytest's collection matches each folder and file against
    (`norecursedirs`, `python_files`): `fnmatch` caches a pattern's regular expression, which
    each child would otherwise compile anew."""
    import fnmatch

    for option in ("norecursedirs", "python_files"):
        with contextlib.suppress(Exception):  # another pytest, without the option
            for pattern in map(str, config.getini(option)):
                fnmatch.fnmatch("", pattern)
                if os.sep in pattern and not os.path.isabs(pattern):  # as pytest's fnmatch_ex takes it
                    fnmatch.fnmatch("", f"*{os.sep}{pattern}")


def _is_rewritten(name: str) -> bool:
    """A file pytest's assertion rewriter rewrites by default: a test module or a conftest.py."""
    return name == "conftest.py" or (name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")))


def tool_files() -> list[str]:
    """gi's own modules in the tools folder beside this file (its report plugin and what that
    imports), the worker's aside: the same for every variant, like the project's tests."""
    folder = os.path.dirname(os.path.abspath(__file__))
    own = {WORKER_FILE, CLEANING_FILE, SPARE_FILE, os.path.basename(__file__)}
    return sorted(os.path.join(folder, name) for name in os.listdir(folder)
                  if name.endswith(".py") and name not in own)  # fmt: skip


def cache_rewrites() -> int:
    """Rewrite the asserts of the project's test modules and conftest.py files, and of gi's
    modules in the tools folder (pytest rewrites a plugin it loads with `-p`), once, here in the
    worker, and make pytest's rewriter take a file's code from this cache when its source is
    the one rewritten (else, or with `enable_assertion_pass_hook`, it rewrites as usual).
    Returns how many files were cached."""
    try:
        from _pytest.assertion import rewrite

        original = rewrite._rewrite_test
    except (ImportError, AttributeError):  # another pytest: children rewrite as usual
        return 0
    paths = list(tool_files())
    for folder, subfolders, names in os.walk(os.getcwd()):
        subfolders[:] = [name for name in subfolders if not name.startswith(".") and name != "__pycache__"]
        paths += [os.path.join(folder, name) for name in names if _is_rewritten(name)]
    for path in paths:
        with contextlib.suppress(Exception):  # a file that does not parse: pytest reports it in the child
            REWRITTEN[path] = original(Path(path), None)  # type: ignore[arg-type]  # None: no pass hook

    def rewrite_test(fn: Any, config: Any) -> Any:
        hit = REWRITTEN.get(str(fn))
        if hit is None or (config is not None and config.getini("enable_assertion_pass_hook")):
            return original(fn, config)
        if importlib.util.source_hash(fn.read_bytes()) != hit[0]:
            return original(fn, config)
        return hit

    rewrite._rewrite_test = rewrite_test
    return len(REWRITTEN)


#: The rewritten code of each file `cache_rewrites` cached, by path: (source hash, code).
REWRITTEN: dict[str, tuple[bytes, CodeType]] = {}
