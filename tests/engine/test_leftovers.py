"""Nothing of a gi process outlasts it. Killed with kill -9, its commands die with it (without
bubblewrap too) and what it leaves (workspaces, cgroups) the next gi process removes, touching
nothing a live one uses; and a workspace goes even when a variant made folders in it read-only."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gi.engine.sandbox.limits import Limits, _Cgroups, remove_stale_cgroups, stops_fork_bombs
from gi.engine.sandbox.workspace import workspace
from tests.hostile import processes_with

ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534

HOLD_A_WORKSPACE = """\
import sys, time
from pathlib import Path
from gi.engine.sandbox.workspace import workspace
with workspace(Path(sys.argv[1]), {"mod.py": "x = 2\\n"}, parent=Path(sys.argv[2])) as space:
    print(space.base, flush=True)
    time.sleep(600)
"""

MAKE_A_WORKSPACE = """\
import sys
from pathlib import Path
from gi.engine.sandbox.workspace import workspace
with workspace(Path(sys.argv[1]), {}, parent=Path(sys.argv[2])) as space:
    print(space.base, flush=True)
"""

HOLD_CGROUPS = """\
import time
from gi.engine.sandbox.limits import Limits, _Cgroups
cgroups = _Cgroups(Limits())
print(*cgroups.folders, sep="\\t", flush=True)
time.sleep(600)
"""

RUN_A_SLEEPER = """\
import sys, threading, time
from pathlib import Path
from gi.engine.sandbox.limits import Limits
from gi.engine.sandbox.runner import Sandbox
from gi.engine.sandbox.workspace import workspace
from tests.hostile import processes_with
with workspace(Path(sys.argv[1]), {}, parent=Path(sys.argv[2])) as space:
    sandbox = Sandbox(Limits(isolate=False), space)
    command = ["sh", "-c", f"sleep 600 # {sys.argv[3]}"]
    threading.Thread(target=sandbox, args=(command,), kwargs={"timeout": 600}, daemon=True).start()
    def started():  # the command itself, not this script nor the reaper (whose arguments name it)
        for pid in processes_with(sys.argv[3]):
            try:
                if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sh\\0"):
                    return True
            except OSError:
                pass
        return False
    while not started():
        time.sleep(0.02)
    print(space.base, flush=True)
    time.sleep(600)
"""


def python(script: str, *arguments: Path | str) -> list[str]:
    return [sys.executable, "-c", script, *map(str, arguments)]


def killed_holder(script: str, *arguments: Path | str) -> list[Path]:
    """Run `script` until it prints the folders it holds (a line, tab-separated), kill -9 it, and
    return them."""
    process = subprocess.Popen(python(script, *arguments), stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert process.stdout is not None
    held = [Path(folder) for folder in process.stdout.readline().strip().split("\t") if folder]
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    return held


def test_the_next_gi_process_removes_a_killed_ones_workspace_and_only_that(tmp_path: Path) -> None:
    program = tmp_path / "program"
    program.mkdir()
    (program / "mod.py").write_text("x = 1\n")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    unclaimed = scratch / "gi-not-a-workspace"  # made by something else (or being made)
    unclaimed.mkdir()
    with workspace(program, {}, parent=scratch) as live:
        [left] = killed_holder(HOLD_A_WORKSPACE, program, scratch)
        assert (left / "program" / "mod.py").read_text() == "x = 2\n", "kill -9 left the workspace behind"
        kept = scratch / f"{left.name}-kept"  # a user's copy, to look at later: its mark came along
        shutil.copytree(left, kept, symlinks=True)

        command = python(MAKE_A_WORKSPACE, program, scratch)
        made = subprocess.run(command, check=False, capture_output=True, text=True, cwd=ROOT)
        assert made.returncode == 0, made.stderr

        assert not left.exists(), "the next process's first workspace removed the killed one's"
        assert (live.program / "mod.py").read_text() == "x = 1\n", "a live workspace is kept"
        assert unclaimed.is_dir()
        assert (kept / "program" / "mod.py").read_text() == "x = 2\n", "a copy of a workspace is no workspace"
        assert not Path(made.stdout.strip()).exists(), "the new process removed its own workspace"
    assert sorted(p.name for p in scratch.iterdir()) == sorted([unclaimed.name, kept.name])


def as_nobody(work: Callable[[], bool]) -> bool:
    """Run `work` in a forked child as a user without root's way past file modes (nobody, when
    the tests run as root); whether it returned True."""
    child = os.fork()
    if child == 0:
        code = 1
        try:
            if os.geteuid() == 0:
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            code = 0 if work() else 1
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status) == 0


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A fresh folder that nobody may use too (pytest's own temporary folders are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="test-leftovers-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_what_a_variant_made_read_only_goes_with_its_workspace(shared_folder: Path) -> None:
    """A folder a variant (or its test tools) made read-only stops a plain rmtree for a user
    who is not root: the workspace stayed forever, at the end of every evaluation that made one."""
    program = shared_folder / "program"
    program.mkdir()
    (program / "mod.py").write_text("x = 1\n")
    scratch = shared_folder / "scratch"
    scratch.mkdir()
    if os.geteuid() == 0:
        os.chown(scratch, NOBODY, NOBODY)
    program.chmod(0o755)
    (program / "mod.py").chmod(0o644)

    def evaluate_and_leave_nothing() -> bool:
        with workspace(program, {}, parent=scratch) as space:
            for made in (space.outputs, space.temporary):
                locked = made / "cache" / "deeper"
                locked.mkdir(parents=True)
                (locked / "file").write_text("x")
                locked.chmod(0o500)
                locked.parent.chmod(0o000)
        return not any(scratch.iterdir())

    assert as_nobody(evaluate_and_leave_nothing)


@pytest.mark.skipif(not stops_fork_bombs(), reason="gi makes cgroups only as root, under its own")
def test_the_next_gi_process_removes_a_killed_ones_cgroups_and_only_those() -> None:
    live = _Cgroups(Limits())
    try:
        left = killed_holder(HOLD_CGROUPS)
        assert left and all(folder.is_dir() for folder in left), "kill -9 left the cgroups behind"

        assert not set(left) & set(remove_stale_cgroups()), "cgroups younger than a minute are kept"
        assert all(folder.is_dir() for folder in left)

        removed = remove_stale_cgroups(min_age=0)
        assert set(left) <= set(removed)
        assert not any(folder.exists() for folder in left)
        assert all(folder.is_dir() for folder in live.folders), "a live command's cgroups are locked, kept"
        assert not set(live.folders) & set(removed)
    finally:
        live.close()
    assert not any(folder.exists() for folder in live.folders)


def test_without_bubblewrap_a_killed_gis_commands_die_with_it(tmp_path: Path) -> None:
    """With bubblewrap, a command's PID namespace dies with gi. Without it, the reaper that runs
    each command kills everything the command started when gi dies, not only when it ends."""
    program = tmp_path / "program"
    program.mkdir()
    (program / "mod.py").write_text("x = 1\n")
    marker = f"gi-orphan-{os.getpid()}"
    try:
        killed_holder(RUN_A_SLEEPER, program, tmp_path, marker)
        deadline = time.monotonic() + 10
        while processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert processes_with(marker) == [], "the command outlived the gi process that ran it"
    finally:
        for pid in processes_with(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
