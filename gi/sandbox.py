"""Scratch copies of the program and a command runner with limits.

Every variant runs in its own copy of the project folder; the user's folder is only read.
Commands run in a new session with a wall-clock limit (the whole process group is killed
when it strikes) and an address-space limit. Where bubblewrap works, the command also runs
with no network, the whole file system read-only but its scratch folder (where TMPDIR
points), and its own PID namespace, so nothing it starts outlives it. (No tmpfs over /tmp:
the interpreter or the project may live there, as a CI checkout often does.)
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gi.program import IGNORED_DIRS
from gi.results import ProcessOutcome

#: Environment variables passed through to sandboxed commands; everything else is dropped.
_PASSED_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "VIRTUAL_ENV", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


@functools.cache
def bubblewrap_available() -> bool:
    """True if `bwrap` is installed and can make the namespaces we ask for here."""
    if shutil.which("bwrap") is None:
        return False
    try:
        probe = subprocess.run(
            ["bwrap", "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "--die-with-parent", "true"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


@dataclass(frozen=True)
class Limits:
    """Limits for every command a variant runs."""

    memory_mb: int = 4096
    isolate: bool = True  # use bubblewrap (no network, read-only system, PID namespace) if it works


class LimitedRunner:
    """A `CommandRunner` that enforces `Limits`; one per scratch folder."""

    def __init__(self, limits: Limits, writable: Path) -> None:
        self.limits = limits
        self.writable = writable
        self.isolated = limits.isolate and bubblewrap_available()

    def _temporary(self) -> Path:
        """The scratch folder's own temporary folder, for TMPDIR."""
        folder = self.writable / "tmp"
        folder.mkdir(exist_ok=True)
        return folder

    def _wrap(self, argv: Sequence[str], cwd: Path) -> list[str]:
        # `ulimit -v` in a tiny shell is the thread-safe way to set RLIMIT_AS for a child.
        limited = ["/bin/sh", "-c", f'ulimit -v {self.limits.memory_mb * 1024} && exec "$@"', "gi-limit", *argv]
        if not self.isolated:
            return limited
        return [
            "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--bind", str(self.writable), str(self.writable), "--unshare-net", "--unshare-pid",
            "--unshare-ipc", "--die-with-parent", "--new-session", "--chdir", str(cwd), "--", *limited,
        ]  # fmt: skip

    def __call__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        timeout: float,
        env: Mapping[str, str] | None = None,
    ) -> ProcessOutcome:
        run_env = {name: os.environ[name] for name in _PASSED_ENV if name in os.environ}
        run_env.update(
            HOME=str(self.writable),
            TMPDIR=str(self._temporary()),
            PYTHONDONTWRITEBYTECODE="1",
            PYTHONHASHSEED="0",
        )
        run_env.update(env or {})
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            started = time.perf_counter()
            process = subprocess.Popen(
                self._wrap(argv, cwd),
                cwd=cwd,
                env=run_env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
            timed_out = False
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                _kill_group(process)
            seconds = time.perf_counter() - started
            out.seek(0)
            err.seek(0)
            stdout = out.read().decode("utf-8", "replace")
            stderr = err.read().decode("utf-8", "replace")
        return ProcessOutcome(
            returncode=process.returncode if process.returncode is not None else -9,
            stdout=stdout,
            stderr=stderr,
            seconds=seconds,
            timed_out=timed_out,
        )


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the command's whole process group, including what it left running, and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def copy_program(root: Path, destination: Path) -> None:
    """Copy the project folder, without version-control folders, caches and environments."""

    def ignore(folder: str, names: list[str]) -> set[str]:
        return {name for name in names if name in IGNORED_DIRS or name.endswith((".pyc", ".pyo"))}

    shutil.copytree(root, destination, ignore=ignore, symlinks=True)


@contextmanager
def scratch_copy(root: Path, sources: Mapping[str, str], *, parent: Path | None = None) -> Iterator[Path]:
    """A temporary copy of the program with `sources` (relative path -> text) written in."""
    with tempfile.TemporaryDirectory(prefix="gi-", dir=parent) as folder:
        workdir = Path(folder) / "program"
        copy_program(root, workdir)
        for relative, text in sources.items():
            target = workdir / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(text.encode("utf-8"))
        yield workdir
