"""A project as its maintainers laid it out: where its modules import from, and the Python its
tests run in.

Mutation-testing tools run variants of real projects against their own suites every day, and
find a project's layout and runner instead of asking for them (mutmut puts its copy's `src/`
or project folder first on the path and strips the original's); gi does the same:

- **Import roots**: the folder above each editable file's outermost package (`src` in a src
  layout, the project folder in a flat one). Every test run puts the variant copy's import
  roots on PYTHONPATH, ahead of everything installed, so `import cachetools` finds the
  variant and never an installed (or editable-installed) copy of the original. gi's plugin
  says where each editable module was imported from, and a module imported from anywhere else
  is named as an error (`foreign_imports`).
- **The interpreter**: a project's own virtual environment (`.venv`, `venv`, `.env` or `env`
  holding a pyvenv.cfg), found by `gi init` and named in `program.python`, or gi's own
  interpreter. gi asks it once (`probe`) for its version, the folders the sandbox must show it
  and the pytest plugins it has. gi's report plugin travels as a file on PYTHONPATH, so the
  environment needs pytest and nothing of gi's.
- **pytest's own settings** (the ini file pytest finds from the rootdir: pytest.ini,
  pyproject.toml, tox.ini, setup.cfg) stay in force; `pytest_options` adds only what makes a run
  gi's: no coverage plugin writing its data where the tests stand (pytest-cov's `--no-cov`), no
  distribution over xdist workers (`-n 0`), no random order (`-p no:randomly`). A plugin that
  only a project naming it uses is left out of a project that never names it (its sources,
  tests and settings; `OPTIONAL_PLUGINS`): Hypothesis's (`-p no:hypothesispytest`), which,
  installed with gi, imports all of Hypothesis at every session's end, its asserts rewritten,
  most of a small project's test run; and AnyIO's (`-p no:anyio`), which comes with gi's model
  client, imports every async back-end installed (Trio) as pytest starts and wraps the
  collection of every test, each fixture's set-up and each test's call.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import tempfile
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from packaging.utils import canonicalize_name

from gi.fitness.tests import PytestSetup
from gi.model.errors import ProgramError
from gi.model.program import IGNORED_DIRS, Program

#: The folders a virtual environment of the project's own is looked for in, in this order.
ENVIRONMENT_NAMES = (".venv", "venv", ".env", "env")
#: Folder names that hold a src layout's packages even without an __init__.py above them.
SOURCE_FOLDERS = frozenset({"src", "lib", "source"})
#: Seconds an interpreter may take to answer `probe`.
PROBE_TIMEOUT = 60.0

_PROBE = r"""
import importlib.metadata, importlib.util, json, sys
plugins = set()
for entry in importlib.metadata.entry_points(group="pytest11"):
    dist = getattr(entry, "dist", None)
    plugins.add(dist.name if dist is not None else entry.name)
print(json.dumps({
    "version": list(sys.version_info[:2]),
    "prefixes": [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix],
    "path": [entry for entry in sys.path if entry],
    "pytest": importlib.util.find_spec("pytest") is not None,
    "coverage": importlib.util.find_spec("coverage") is not None,
    "plugins": sorted(plugins),
}))
"""


#: Plugins that distributions installed beside pytest (gi's own dependencies, where the tests run
#: in gi's interpreter) bring to every test run, and that only a project naming them uses:
#: (distribution, pytest's name for the plugin, the word such a project says somewhere).
OPTIONAL_PLUGINS = (("hypothesis", "hypothesispytest", "hypothesis"), ("anyio", "anyio", "anyio"))
OPTIONAL_WORDS = frozenset(word for _, _, word in OPTIONAL_PLUGINS)


@dataclass(frozen=True)
class Interpreter:
    """The Python a project's tests run in, as it answered `probe`."""

    executable: str
    version: tuple[int, int]
    #: Host folders it reads: its prefixes and the entries of its sys.path outside the project.
    folders: tuple[str, ...]
    #: Distributions that give it pytest plugins (normalised names: "pytest-cov").
    plugins: tuple[str, ...]
    has_pytest: bool
    has_coverage: bool

    def pytest_options(self, named: Collection[str] = OPTIONAL_WORDS) -> tuple[str, ...]:
        """What every test run adds to the project's own pytest settings (see the module doc);
        `named`: the words of `OPTIONAL_PLUGINS` the project says (`named_plugins`)."""
        options = ["-p", "no:randomly"]
        for distribution, plugin, word in OPTIONAL_PLUGINS:
            if distribution in self.plugins and word not in named:
                options += ["-p", f"no:{plugin}"]
        if "pytest-cov" in self.plugins:
            options.append("--no-cov")
        if "pytest-xdist" in self.plugins:
            options += ["-n", "0"]
        return tuple(options)


def find_environment(root: Path) -> Path | None:
    """The interpreter of the project's own virtual environment, or None (no such folder)."""
    for name in ENVIRONMENT_NAMES:
        folder = root / name
        python = folder / "bin" / "python"
        if (folder / "pyvenv.cfg").is_file() and python.exists():
            return python
    return None


@functools.cache
def probe(executable: str, root: Path | None = None) -> Interpreter:
    """Ask an interpreter what gi needs to know of it; raise ProgramError naming what is wrong.
    `root` (the project folder) is never shown to the sandbox, so path entries inside it (an
    editable install of the original) are left out of `folders`."""
    where = f"program.python = {executable!r}"
    if not Path(executable).exists():
        raise ProgramError(f"{where}: no such interpreter")
    try:
        with tempfile.TemporaryDirectory(prefix="gi-probe-") as empty:  # nothing of the project on sys.path
            done = subprocess.run(
                [executable, "-c", _PROBE], cwd=empty, capture_output=True, text=True, timeout=PROBE_TIMEOUT,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONNOUSERSITE": "1"}, check=False,
            )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ProgramError(f"{where}: it does not run: {error}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ProgramError(f"{where}: it does not run Python 3 ({last})")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    if not answer["pytest"]:
        raise ProgramError(
            f"{where}: pytest is not installed there (gi runs the tests with it): {executable} -m pip install pytest"
        )
    folders: list[str] = []
    inside = root.resolve() if root is not None else None
    for prefix in answer["prefixes"]:
        folders.append(str(Path(prefix).resolve()))
    for entry in answer["path"]:
        path = Path(entry).resolve()
        if path.is_dir() and (inside is None or not path.is_relative_to(inside)):
            folders.append(str(path))
    unique = sorted(set(folders))
    kept = tuple(
        path for path in unique if not any(Path(path).is_relative_to(other) for other in unique if other != path)
    )
    return Interpreter(
        executable=executable,
        version=(int(answer["version"][0]), int(answer["version"][1])),
        folders=kept,
        plugins=tuple(sorted({canonicalize_name(name) for name in answer["plugins"]})),
        has_pytest=True,
        has_coverage=bool(answer["coverage"]),
    )


def import_roots(root: Path, files: Sequence[str]) -> tuple[str, ...]:
    """The folders (relative to root, "." for root itself) the editable files import from: the
    folder above each file's outermost package (folders with an __init__.py), or a src layout's
    src/ (lib/, source/) for namespace packages under it; "." last."""
    roots: set[str] = set()
    for file in files:
        parts = list(PurePosixPath(file).parts[:-1])
        while parts and (root.joinpath(*parts) / "__init__.py").is_file():
            parts.pop()
        if len(parts) > 1 and parts[0] in SOURCE_FOLDERS:
            parts = parts[:1]
        roots.add(PurePosixPath(*parts).as_posix() if parts else ".")
    return tuple(sorted(roots - {"."})) + ((".",) if "." in roots else ())


def own_modules(root: Path, files: Sequence[str], roots: Sequence[str] = ()) -> set[str]:
    """The top-level names a project's own modules import as: its editable files' first folder
    or module, and whatever lies in its folder and in each import root (`src` of a src layout)."""
    own = {path.split("/")[0].removesuffix(".py") for path in files}
    for folder in (root, *(root / import_root for import_root in roots)):
        if folder.is_dir():
            own |= {entry.name.removesuffix(".py") for entry in folder.iterdir()}
    return own


def module_names(files: Sequence[str], roots: Sequence[str]) -> dict[str, str]:
    """The dotted module name each editable file is imported as, under the deepest import root
    holding it (`src/cachetools/keys.py` -> `cachetools.keys`)."""
    names: dict[str, str] = {}
    ordered = sorted(roots, key=lambda folder: -len(PurePosixPath(folder).parts) if folder != "." else 0)
    for file in files:
        path = PurePosixPath(file)
        for folder in ordered:
            if folder == "." or path.is_relative_to(folder):
                relative = path if folder == "." else path.relative_to(folder)
                parts = list(relative.with_suffix("").parts)
                if parts and parts[-1] == "__init__":
                    parts.pop()
                if parts and all(part.isidentifier() for part in parts):
                    names[".".join(parts)] = file
                break
    return names


#: The files where a project would name Hypothesis: its code and tests, and pytest's settings.
_SETTINGS_SUFFIXES = (".py", ".toml", ".cfg", ".ini")


def named_plugins(root: Path) -> set[str]:
    """The words of `OPTIONAL_PLUGINS` ("hypothesis", "anyio") that a file of the project (code,
    tests or settings; caches and environments aside) says, in any case."""
    words = set(OPTIONAL_WORDS)
    found: set[str] = set()
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders if name not in IGNORED_DIRS and name not in ENVIRONMENT_NAMES]
        for name in names:
            if name.endswith(_SETTINGS_SUFFIXES):
                try:
                    text = (Path(folder) / name).read_bytes().lower()
                except OSError:
                    continue
                found.update(word for word in words - found if word.encode() in text)
                if found == words:
                    return found
    return found


def pytest_setup(program: Program, python: Path) -> tuple[PytestSetup, Interpreter]:
    """How a program's tests run: in `python` (asked once), with the copy's import roots ahead
    of anything installed, and the module name of each editable file for the plugin's check."""
    interpreter = probe(str(python), program.root)
    roots = import_roots(program.root, program.files)
    setup = PytestSetup(
        python=str(python),
        options=interpreter.pytest_options(named_plugins(program.root)),
        import_roots=roots,
        modules=tuple(sorted(module_names(program.files, roots).items())),
        lend_coverage=not interpreter.has_coverage,
    )
    return setup, interpreter
