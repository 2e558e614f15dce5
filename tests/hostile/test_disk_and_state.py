"""The disk and the state between variants (issue 27, cases 6 and 7), on both engines.

A variant that allocates gigabytes in outputs/ took 60 GB of the machine's disk in 12
evaluations of a warm worker, and one warm worker's variants saw each other's /tmp. Now every
folder a variant may write is RAM of `Limits.disk_mb` at most in bubblewrap (outputs/ too:
the finisher copies what gi reads back), /dev is read-only, and a warm worker empties them all
and removes its IPC namespace's System V objects between variants. Without bubblewrap the
writable folders are checked as the command runs, and a variant over its quota fails as
`resource`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from gi.engine.sandbox.bubblewrap import bubblewrap_available
from gi.engine.sandbox.limits import Limits
from gi.engine.sandbox.runner import Sandbox
from gi.engine.sandbox.workspace import workspace
from gi.engine.warm import WarmPool
from gi.fitness.outcomes import count_failed
from gi.fitness.tests import TestRun, run_tests
from gi.model.program import Program
from tests.hostile.attacks import (
    CALC,
    EVERY_WRITABLE,
    OUTPUTS,
    STATE_PLACES,
    TRAINING,
    fill,
    find_state,
    leave_state,
    module,
)

needs_bubblewrap = pytest.mark.skipif(not bubblewrap_available(), reason="RAM folders need the bubblewrap sandbox")
#: Small enough to fill in a moment: each writable folder holds 16 MiB at most.
QUOTA_MB = 16


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "calc"
    (folder / "tests").mkdir(parents=True)
    (folder / "calc.py").write_text(CALC)
    (folder / "tests" / "test_calc.py").write_text(TRAINING)
    return folder


def on_disk(folder: Path) -> int:
    """Bytes the files under `folder` take on the disk."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                continue
    return total


class Engine:
    """Runs variants of the ledger on one engine, in one scratch folder whose disk use is seen."""

    def __init__(self, project: Path, scratch: Path, engine: str, limits: Limits) -> None:
        self.project, self.scratch, self.engine, self.limits = project, scratch, engine, limits
        self.pool = (
            WarmPool(Program.load(project, ["calc.py"]), limits, 1, scratch=scratch) if engine == "warm" else None
        )

    def run(self, body: str) -> TestRun:
        source = module(body)
        if self.pool is not None:
            return self.pool.run_tests({"calc.py": source}, ["tests"], timeout=60, limits={}, default_limit=0)
        with workspace(self.project, {"calc.py": source}, parent=self.scratch) as space:
            run = run_tests(["tests"], timeout=60, runner=Sandbox(self.limits, space))
            self.peak = on_disk(space.base)
            self.copied_back = sorted(os.listdir(space.outputs))
            return run

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


#: Files and folders each writable folder may gain.
QUOTA_FILES = 2000


@pytest.fixture(params=["cold", "warm"])
def engine(request: pytest.FixtureRequest, project: Path, tmp_path: Path) -> Iterator[Engine]:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    running = Engine(project, scratch, request.param, Limits(disk_mb=QUOTA_MB, disk_files=QUOTA_FILES))
    yield running
    running.close()


@needs_bubblewrap
@pytest.mark.parametrize(
    "folders", [f"[{OUTPUTS}]", EVERY_WRITABLE], ids=["outputs", "every writable folder"]
)  # fmt: skip
def test_a_variant_filling_its_folders_takes_nothing_of_the_disk_and_no_more_than_its_quota(
    engine: Engine, folders: str
) -> None:
    """Five 8 MiB files in outputs/ (and in every folder it can write, /dev too): the quota stops
    it at 16 MiB a folder, in RAM; of outputs/ at most that much is copied back to the disk for
    gi to read, and it goes with the workspace: the disk under the workspaces does not grow."""
    before = on_disk(engine.scratch)
    for _ in range(3):  # a warm worker's folders live for the run: three variants in a row
        run = engine.run(fill(folders, 5, 8 << 20))
        assert count_failed(run) == 0 and not run.forged, run.failure_report()
        assert on_disk(engine.scratch) - before < 1 << 20
        if engine.engine == "cold":  # what the finisher copied back of outputs/, for gi to read
            assert engine.peak <= (QUOTA_MB + 1) << 20, "the workspace held more than the quota on disk"


@pytest.mark.parametrize("place", STATE_PLACES)
def test_a_variant_finds_nothing_an_earlier_one_left(engine: Engine, place: str) -> None:
    if place != "/tmp" and not bubblewrap_available():
        pytest.skip("/dev/shm and System V objects are the host's without bubblewrap")
    left = engine.run(leave_state(place))
    assert count_failed(left) == 0, left.failure_report()
    found = engine.run(find_state(place))
    assert count_failed(found) == 0, f"the variant found what the one before it left in {place}"


SLOW_FILL = f"""
import os
import time
for index in range(8):
    with open(os.path.join({OUTPUTS}, "fill-%d" % index), "wb") as stream:
        stream.write(b"x" * (4 << 20))
    time.sleep(0.3)
return a + b
"""


@pytest.mark.parametrize("engine_name", ["cold", "warm"])
def test_without_bubblewrap_a_variant_over_its_quota_fails_as_resource(
    project: Path, tmp_path: Path, engine_name: str
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    running = Engine(project, scratch, engine_name, Limits(isolate=False, disk_mb=QUOTA_MB))
    try:
        # Files written one after another, as code that writes results does (an allocation of
        # gigabytes at once would go past the quota before the next look: docs/guides/sandbox.md says so).
        over = running.run(SLOW_FILL)
        assert over.resource.startswith("over its disk quota"), (over.resource, over.outcomes)
        within = running.run("return a + b")
        assert count_failed(within) == 0 and not within.resource
    finally:
        running.close()
    assert on_disk(scratch) < 1 << 20


BESIDE_ITSELF = """
import os
import time
for index in range(8):
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fill-%d" % index), "wb") as stream:
        stream.write(b"x" * (4 << 20))
    time.sleep(0.3)
return a + b
"""


@pytest.mark.parametrize("isolate", [True, False], ids=["bubblewrap", "no bubblewrap"])
def test_a_cold_copy_the_tests_may_write_is_on_disk_and_held_to_the_quota(
    project: Path, tmp_path: Path, isolate: bool
) -> None:
    """A cold run's copy of the program is writable (tests may write beside themselves) and on
    disk, bubblewrap or not: what it grows by is checked as it runs, and past the quota the
    variant fails as `resource`; writing a little there is fine."""
    if isolate and not bubblewrap_available():
        pytest.skip("needs the bubblewrap sandbox")
    limits = Limits(isolate=isolate, disk_mb=QUOTA_MB, writable_program=True)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with workspace(project, {"calc.py": module(BESIDE_ITSELF)}, parent=scratch) as space:
        over = run_tests(["tests"], timeout=60, runner=Sandbox(limits, space))
    assert over.resource.startswith("over its disk quota"), (over.resource, over.outcomes)
    small = BESIDE_ITSELF.replace("range(8)", "range(1)").replace("4 << 20", "1 << 10")
    with workspace(project, {"calc.py": module(small)}, parent=scratch) as space:
        within = run_tests(["tests"], timeout=60, runner=Sandbox(limits, space))
    assert count_failed(within) == 0 and not within.resource, within.failure_report()


def flood(folder: str, count: int, name: str = "flood") -> str:
    """A body of `add` that makes `count` empty files in `folder` and then answers right."""
    return f"""
    import os
    for index in range({count}):
        try:
            os.close(os.open(os.path.join({folder}, "{name}-%d" % index), os.O_CREAT | os.O_WRONLY))
        except OSError:
            break
    return a + b
    """


@needs_bubblewrap
@pytest.mark.parametrize("folder", [OUTPUTS, 'os.environ["TMPDIR"]', '"/tmp"'], ids=["outputs", "TMPDIR", "/tmp"])
def test_a_flood_of_empty_files_is_over_the_quota_of_files(engine: Engine, folder: str) -> None:
    """Issue 37, hole 5: empty files cost no bytes, and a workload command made 300,000 of them
    in outputs/, all copied onto the host's disk. Each folder a variant writes holds at most
    `disk_files` more files: past it the variant fails as `resource`, and the next runs well."""
    over = engine.run(flood(folder, QUOTA_FILES * 3))
    assert over.resource.startswith("over its disk quota") and "files" in over.resource, (over.resource, over.outcomes)
    after = engine.run("return a + b")
    assert count_failed(after) == 0 and not after.resource, after.failure_report()


@needs_bubblewrap
def test_of_outputs_only_what_gi_reads_comes_back(project: Path, tmp_path: Path) -> None:
    """The finisher copies back the files gi's tools write (gi-*, timing.json, ...), a bounded
    number of them: not a variant's thousand files, nor a file of its own named like gi's."""
    limits = Limits(disk_mb=QUOTA_MB, disk_files=QUOTA_FILES)
    body = flood(OUTPUTS, QUOTA_FILES // 2).replace("return a + b", "") + flood(OUTPUTS, 400, name="gi-planted")
    with workspace(project, {"calc.py": module(body)}, parent=tmp_path) as space:
        run = run_tests(["tests"], timeout=60, runner=Sandbox(limits, space))
        back = sorted(os.listdir(space.outputs))
    assert count_failed(run) == 0 and not run.resource, run.failure_report()
    assert not [name for name in back if name.startswith("flood")], "files gi never reads came back"
    assert len(back) <= 256, f"{len(back)} files came back"
