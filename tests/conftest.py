"""Shared fixtures: small programs written to temporary folders, and real-world modules."""

from __future__ import annotations

import contextlib
import shutil
import sysconfig
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import filelock
import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadFileScheduling

from gi.model.program import Program

#: Non-trivial modules of the installed Python: decorators, async code, match statements,
#: f-strings, comments and docstrings. Copied, never edited in place.
REAL_WORLD = ("asyncio/tasks.py", "dataclasses.py", "contextlib.py", "traceback.py", "textwrap.py")

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "experiments" / "programs"

#: Held by every test of the suite on this machine: shared by most, exclusively by those marked
#: `timing`. The suite runs in two processes (pytest-xdist), and a test that asserts on measured
#: speed-ups must not share the machine with another test's work: on CI's 2 cores the batching
#: search once timed every variant slower than the original while the other process ran.
QUIET_MACHINE = Path(tempfile.gettempdir()) / "gi-test-suite-timing.lock"


#: The quiet machine, while this process holds it from one `timing` test to the next.
_HELD: list[contextlib.ExitStack] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Run a `timing` test alone: it waits for the tests running beside it to end, and holds
    new ones off (a waiting writer goes first) until it is done, fixtures included. When the
    next test here is `timing` too, the machine stays held: let go in between, the other
    process would start a test, and the next one would wait for that test to end."""
    lock = filelock.ReadWriteLock(QUIET_MACHINE, is_singleton=False)
    if item.get_closest_marker("timing") is None:
        with lock.read_lock():
            yield
        return
    if not _HELD:
        held = contextlib.ExitStack()
        held.enter_context(lock.write_lock())
        _HELD.append(held)
    try:
        yield
    finally:
        if nextitem is None or nextitem.get_closest_marker("timing") is None:
            _HELD.pop().close()


#: The suite's longest test files, longest first (seconds on a 2-core machine, 2026-12-02). The
#: two processes take whole files in collection order (`--no-loadscope-reorder`), so these go
#: first and the many short files fill in at the end: a long file handed out last would leave the
#: other process idle for most of it. Files not named here follow in their own order, and the
#: `timing` files come last, run alone while the other process has nothing left to do.
LONGEST_FIRST = (
    "test_readme.py",  # 1,900 at a load of 10 to 20 (2026-12-04): every README recipe, whole searches, one by one
    "engine/test_oracle.py",  # 688 at a load of 20 to 98 (2026-12-04; 21 s of CPU): the oracle's runs
    "run/test_steady_state.py",  # 115 to 165 for its longest test, at a load of 10 to 67 (2026-12-04)
    "run/test_quality_diversity.py",  # 116 to 156 for its longest test, at the same load
    "hostile/test_timing_evidence.py",  # 144 (warm), at a load of 15 to 60 (2026-12-04)
    "hostile/test_model_reads_and_prints.py",  # 120 (warm), at the same load
    "hostile/test_other_users.py",  # 82, at the same load
    "run/test_experiment.py",  # 121
    "hostile/test_scored_run.py",  # 85
    "run/test_replay.py",  # 49
    "cli/test_starter.py",  # 47
    "model/test_random_patches.py",  # 45
    "studies/test_overfitting.py",  # 44
    "hostile/test_scores.py",  # 44
    "hostile/test_hostile_run.py",  # 38
    "engine/test_dask.py",  # 36
    "run/test_llm_runs.py",  # 33
    "engine/test_repairs.py",  # 31
    "engine/test_honest_figures.py",  # 22
    "hostile/test_forgery.py",  # 21
    "hostile/test_escape.py",  # 20
    "studies/test_arms.py",  # 17
)


#: Files whose tests share no fixture wider than a test's and each take minutes: their tests are
#: handed out one by one, not as a whole file (README's recipes, whole searches each, would
#: otherwise all run in one process while the other ran out of work).
ONE_BY_ONE = ("test_readme.py",)


class FilesOrTests(LoadFileScheduling):
    """pytest-xdist's `--dist loadfile` (a file's tests in one process, sharing its module
    fixtures), except the ONE_BY_ONE files, whose every test is a unit of its own."""

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        return nodeid if any(path == f"tests/{name}" for name in ONE_BY_ONE) else path


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> FilesOrTests | None:
    """`--dist loadfile` (pyproject.toml's addopts) hands out whole files, but ONE_BY_ONE's tests singly."""
    return FilesOrTests(config, log) if config.getvalue("dist") == "loadfile" else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the files as LONGEST_FIRST says, the `timing` files last (a stable sort: each file's
    tests keep their order)."""
    tests = Path(__file__).resolve().parent
    if stale := [name for name in LONGEST_FIRST if not (tests / name).is_file()]:
        raise pytest.UsageError(f"tests/conftest.py: LONGEST_FIRST names no such file: {', '.join(stale)}")
    rank = {tests / name: index for index, name in enumerate(LONGEST_FIRST)}
    timed = {item.path for item in items if item.get_closest_marker("timing") is not None}

    def place(item: pytest.Item) -> tuple[int, int]:
        if item.path in timed:
            return (2, 0)
        return (0, rank[item.path]) if item.path in rank else (1, 0)

    items.sort(key=place)


@pytest.fixture
def make_program(tmp_path: Path) -> Callable[[str], Program]:
    """Write `source` as mod.py in a fresh folder and load it as the program."""

    def make(source: str, name: str = "mod.py") -> Program:
        folder = tmp_path / f"program{len(list(tmp_path.iterdir()))}"
        folder.mkdir()
        (folder / name).write_text(source, encoding="utf-8")
        return Program.load(folder, [name])

    return make


@pytest.fixture(scope="session")
def real_world_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("realworld")
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for relative in REAL_WORLD:
        shutil.copyfile(stdlib / relative, folder / relative.replace("/", "_"))
    return folder


@pytest.fixture(scope="session")
def real_world(real_world_folder: Path) -> Program:
    return Program.load(real_world_folder, ["*.py"])


@pytest.fixture
def example_copy(tmp_path: Path) -> Callable[[str], Path]:
    """A copy of one of the example programs, so tests can check it is left unchanged."""

    def copy(name: str) -> Path:
        destination = tmp_path / name
        shutil.copytree(EXAMPLES / name, destination)
        return destination

    return copy
