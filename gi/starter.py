"""`gi init`: a commented starter config for a project, written without asking anything.

It looks at the project folder the way pytest and gi do: test files (`test_*.py`,
`*_test.py`) are the tests, by the folder named like a test folder (`tests`, `test`, `testing`)
that holds them or else by their own path; a folder named `holdout` (or `heldout`, `held_out`)
holds held-out tests; every other Python file but conftest.py, setup.py and a workload is
editable. The config it writes is one `gi run` accepts unchanged:
tests are never editable, and the run folder lies beside the project, outside what a run
copies.
"""

from __future__ import annotations

import ast
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from gi.errors import ConfigError, ProgramError
from gi.program import IGNORED_DIRS

CONFIG_NAME = "gi.toml"
HOLDOUT_NAMES = frozenset({"holdout", "heldout", "held_out"})
TEST_FOLDERS = frozenset({"tests", "test", "testing"}) | HOLDOUT_NAMES
#: Python files that are part of a project's tooling, not of its program.
NOT_EDITABLE = frozenset({"conftest.py", "setup.py", "noxfile.py", "fabfile.py"})


@dataclass(frozen=True)
class Project:
    """What `gi init` found in a project folder (paths relative to it, sorted)."""

    root: Path
    files: tuple[str, ...]
    train: tuple[str, ...]
    holdout: tuple[str, ...]
    workload: str | None


def _is_test(name: str) -> bool:
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def _test_path(test_file: Path) -> str:
    """The pytest path a test file is run by: its outermost folder named like a test folder
    (tests, test, testing, holdout, ...), else the file itself (a test beside the code)."""
    for index, part in enumerate(test_file.parts[:-1]):
        if part in TEST_FOLDERS:
            return Path(*test_file.parts[: index + 1]).as_posix()
    return test_file.as_posix()


def _python_files(root: Path) -> list[Path]:
    """Every .py file under root, relative, skipping what gi never searches (caches, VCS,
    environments) and links."""
    found = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(
            name for name in subfolders if name not in IGNORED_DIRS and not (Path(folder) / name).is_symlink()
        )
        for name in sorted(names):
            path = Path(folder) / name
            if name.endswith(".py") and path.is_file() and not path.is_symlink():
                found.append(path.relative_to(root))
    return found


def _workload(root: Path) -> str | None:
    """`workload:run` when the project has a workload.py with a no-argument `run` function."""
    path = root / "workload.py"
    if not path.is_file():
        return None
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "run":
            arguments = node.args
            positional = len(arguments.posonlyargs) + len(arguments.args)
            keywords_needed = any(default is None for default in arguments.kw_defaults)
            if positional == len(arguments.defaults) and not keywords_needed:
                return "workload:run"
    return None


def survey(root: Path) -> Project:
    """Find a project's editable files, its training and held-out tests and its workload."""
    root = root.resolve()
    if not root.is_dir():
        raise ProgramError(f"{root}: no such project folder")
    files = _python_files(root)
    test_paths = sorted({_test_path(path) for path in files if _is_test(path.name)})
    holdout = tuple(path for path in test_paths if path in HOLDOUT_NAMES)
    train = tuple(path for path in test_paths if path not in HOLDOUT_NAMES)
    if not train:
        raise ProgramError(
            f"{root}: no tests found (pytest files named test_*.py or *_test.py, outside a holdout folder);"
            " gi needs tests to tell a working variant from a broken one"
        )
    workload = _workload(root)
    protected = [Path(test) for test in test_paths]
    editable = tuple(
        path.as_posix()
        for path in files
        if not any(path == test or test in path.parents for test in protected)
        and path.name not in NOT_EDITABLE
        and not (workload and path.as_posix() == "workload.py")
    )
    if not editable:
        raise ProgramError(f"{root}: no Python file to improve (every .py file there is a test or tooling)")
    return Project(root, editable, train, holdout, workload)


def _toml_list(items: tuple[str, ...]) -> str:
    """A TOML array of strings (JSON's string escapes are TOML's basic strings')."""
    return "[" + ", ".join(json.dumps(item) for item in items) + "]"


def _name(root: Path) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", root.name).strip("-.")
    return name or "project"


def starter_config(project: Project) -> str:
    """The text of a commented starter config for a surveyed project, for a file in its folder."""
    name = _name(project.root)
    minimize = ["failed_tests", "runtime", "size"] if project.workload else ["failed_tests", "complexity", "size"]
    holdout = (
        f"# Never seen by the search: run on the front as it grows, to see what overfits.\n"
        f"holdout = {_toml_list(project.holdout)}"
        if project.holdout
        else '# Tests the search never sees, run on the front as it grows (none found):\n# holdout = ["holdout"]'
    )
    goal = "faster" if project.workload else "simpler"
    workload = (
        f"""
# The runtime objective times this no-argument function; a variant must return what the original does.
[workload]
call = "{project.workload}"
check_output = true
"""
        if project.workload
        else """
# To make the code faster: a no-argument function that exercises it, and "runtime" in
# objectives.minimize.
# [workload]
# call = "workload:run"
"""
    )
    return f"""\
# A starter config `gi init` wrote for {name}: `gi run {CONFIG_NAME}` runs it as it is.
# Goal: {goal} code that passes the same tests. Every key is explained in gi's README
# (Config reference); paths are relative to this file. gi never changes your files: variants
# run on copies, and `gi apply` applies a result only when you ask.

[experiment]
name = "{name}"
# One seed fixes every random choice of a run.
seed = 1
# Run folders go beside the project, never inside it.
output = "../{name}-gi-runs"

[program]
# The project folder, only ever read.
root = "."
# The files gi may edit (globs allowed); tests and conftest.py never are.
files = {_toml_list(project.files)}

[tests]
# Pytest paths used during the search.
train = {_toml_list(project.train)}
{holdout}
# Seconds for one whole test run.
timeout = 60

[objectives]
minimize = {_toml_list(tuple(minimize))}
# Variants must pass every training test; "none" to repair code whose tests fail.
constraint = "train_pass"

[search]
# `gi algorithms` lists the others.
algorithm = "nsga2"
# About population x (generations + 1) test runs in all.
population = 20
generations = 10

[mutators]
# Or a list of names from `gi operators`.
operators = "all"
{workload}"""


def write_starter_config(folder: Path) -> tuple[Path, Project]:
    """Survey a project and write its starter config as gi.toml in it; refuse to overwrite one."""
    project = survey(folder)
    path = project.root / CONFIG_NAME
    if path.exists() or path.is_symlink():
        raise ConfigError(f"{path}: a config is already there; gi init never overwrites one (remove it first)")
    text = starter_config(project)
    with path.open("x", encoding="utf-8") as stream:
        stream.write(text)
    return path, project
