"""gi run by a user who is not root, on a machine root ran gi on too (issue 37, holes 7 and 9).

Root's timing lock (/tmp/gi-timing-<host>.lock, readable only) made another user's `gi run`
crash with PermissionError at its first timing; the lock and gi's other files now lie in each
user's own folder. As a user gi may make no memory cgroup for (no cgroup v2 delegated to it),
`evaluation.memory_mb` binds each process alone: the run says so in one line at its start.

The user is made with `useradd` (as root; the tests are skipped elsewhere) and gi runs as it
through `runuser`; where the interpreter lies in a folder that user cannot enter (root's
home), the command runs in a mount namespace of the test's own that shows the interpreter's
folder and nothing more of it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import gi
from gi.engine.sandbox.bubblewrap import bubblewrap_available
from gi.engine.workload_runs import machine_timing_lock
from tests.hostile.attacks import BENCH, SUMS, SUMS_TESTS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not bubblewrap_available(), reason="gi runs as the other user under bubblewrap"),
    pytest.mark.skipif(os.geteuid() != 0, reason="making another user and running gi as it needs root"),
]

USER = "gi-nonroot"


@pytest.fixture(scope="module")
def user() -> str:
    """A user that is not root (made once, kept: another test process may use it at once)."""
    if shutil.which("useradd") is None or shutil.which("runuser") is None:
        pytest.skip("useradd and runuser are needed to run gi as another user")
    made = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/bin/sh", USER],
                          capture_output=True, text=True, check=False)  # fmt: skip
    if made.returncode not in (0, 9):  # 9: the user exists
        pytest.skip(f"no user could be made: {made.stderr.strip()}")
    return USER


def _closed_to_others(path: Path) -> Path | None:
    """The outermost folder above `path` that other users may not enter, or None."""
    for parent in reversed(path.parents):
        if parent != Path("/") and not os.stat(parent).st_mode & 0o001:
            return parent
    return None


def as_user(user: str, argv: list[str]) -> list[str]:
    """`argv` run as `user`; the interpreter's folder shown to it where it could not enter it."""
    command = ["runuser", "-u", user, "--", *argv]
    prefix = Path(sys.base_prefix).resolve()
    closed = _closed_to_others(prefix)
    if closed is None:
        return command
    shown = closed / prefix.relative_to(closed).parts[0]  # (folders bwrap makes on the way are closed)
    return ["bwrap", "--bind", "/", "/", "--tmpfs", str(closed), "--ro-bind", str(shown), str(shown),
            "--dev-bind", "/dev", "/dev", "--", *command]  # fmt: skip


@pytest.fixture
def project(user: str) -> Iterator[Path]:
    """A timed project in a folder of the user's own (pytest's temporary folders are root's)."""
    folder = Path(tempfile.mkdtemp(prefix="gi-other-user-"))
    root = folder / "sums"
    (root / "tests").mkdir(parents=True)
    (root / "sums.py").write_text(SUMS)
    (root / "bench.py").write_text(BENCH)
    (root / "tests" / "test_sums.py").write_text(SUMS_TESTS)
    (folder / "sums.toml").write_text("""\
[experiment]
name = "sums"
seed = 1
output = "runs"

[program]
root = "sums"
files = ["sums.py"]

[tests]
train = ["tests"]
timeout = 60

[objectives]
minimize = ["failed_tests", "runtime"]

[search]
population = 2
generations = 1

[mutators]
operators = ["constant"]

[workload]
call = "bench:run"
rigorous_processes = 2

[evaluation]
workers = 1
""")
    shutil.chown(folder, user)
    for path in folder.rglob("*"):
        shutil.chown(path, user)
    os.chmod(folder, 0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_user_runs_gi_after_root_did(user: str, project: Path) -> None:
    with machine_timing_lock():  # root times something first: its lock file is root's
        pass
    code = Path(gi.__file__).resolve().parents[1]  # the gi these tests import, whichever it is
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(project), "PYTHONPATH": str(code),
           "LANG": "C.UTF-8"}  # fmt: skip
    run = subprocess.run(as_user(user, [sys.executable, "-m", "gi.cli", "run", "sums.toml", "--quiet"]),
                         cwd=project, env=env, capture_output=True, text=True, timeout=900, check=False)  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = json.loads((project / "runs" / "sums-seed1" / "summary.json").read_text())
    # Where no memory cgroup could be made for this user, one line says so at the start;
    # where one could, the sandbox holds the command's processes to memory_mb together.
    warned = "limits each process of a command alone" in run.stderr
    assert warned != ("MiB in all" in summary["sandbox"]), (run.stderr[-2000:], summary["sandbox"])
