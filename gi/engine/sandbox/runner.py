"""The sandbox: a workspace per variant and a command runner with limits and isolation.

Every variant's code is hostile until proven otherwise: a mutation or a language model may
have written code that deletes files, reads secrets, opens sockets, forks, floods its
output or forges its own test results. Each evaluation gets a `Workspace`:

    <temporary folder>/      made by gi, never writable by the variant
        program/   a copy of the project with the variant's sources  (read-only inside)
        tools/     gi's own files: the pytest plugin, the workload script  (read-only inside)
        outputs/   what the command hands back: timings, coverage, return values  (writable)
        temporary/ HOME and TMPDIR  (writable)

gi writes only into folders the variant cannot write (program/ and tools/ are filled before
the first command runs) and reads back only regular files from outputs/, without following
links, after every process of the command is dead.

`Sandbox` runs a command in the workspace. Always: a new session and process group, a
wall-clock limit (the whole group is killed when it strikes), limits on address space, file
size and process count, stdout and stderr kept only as a bounded tail while they stream.
Where bubblewrap works (`isolation()` says), also: a user namespace with every capability
dropped and no nested namespaces, no network of any kind (a network namespace with only
loopback, so no host Unix socket either: the host's /run and /tmp are not mounted), its own
PID namespace (nothing it starts outlives it), and a file system that holds only the system
folders, the Python installation and the workspace: nothing of the home folder, nothing of
the user's project but the copy, all read-only but outputs/ and temporary/. As root, a
pids cgroup caps the process count (the kernel does not apply RLIMIT_NPROC to root), and a
command whose processes keep forking at the cap (a fork bomb: `FORK_BOMB_REFUSALS` refused
forks) is stopped at once: its spinning processes would otherwise starve the machine until
the wall-clock limit.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gi.engine.sandbox.bubblewrap import bubblewrap_command, isolation
from gi.engine.sandbox.files import _empty_folder, read_regular
from gi.engine.sandbox.finisher import over_quota
from gi.engine.sandbox.limits import WATCH_INTERVAL, Limits, _Cgroups, _processes_of_this_user
from gi.engine.sandbox.reaper import reaper_command
from gi.engine.sandbox.workspace import Workspace, install_tool
from gi.model.results import ProcessOutcome

#: Environment variables passed through to sandboxed commands; everything else is dropped.
#: What gi keeps of a command's channel (the test report): far more than any honest report.
CHANNEL_BYTES = 8 * 1024 * 1024
_PASSED_ENV = ("LANG", "LC_ALL", "TZ", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


# --- running a command ---------------------------------------------------------------------------


class _Tail:
    """Keeps the last `limit` bytes of a stream read on a thread (or, with `head`, the first),
    and a digest of all of it; the rest is read and dropped, so a flood costs gi no memory."""

    def __init__(
        self, stream: int, limit: int, *, head: bool = False, on_chunk: Callable[[bytes], None] | None = None
    ) -> None:
        self.limit = limit
        self.head = head
        self.on_chunk = on_chunk
        self.data = bytearray()
        self.total = 0
        self.digest = hashlib.sha256()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: int) -> None:
        with os.fdopen(stream, "rb", buffering=0) as source:
            while chunk := source.read(65536):
                self.total += len(chunk)
                self.digest.update(chunk)
                if self.on_chunk is not None:
                    self.on_chunk(chunk)
                if self.head:
                    self.data += chunk[: max(0, self.limit - len(self.data))]
                    continue
                self.data += chunk
                if len(self.data) > 2 * self.limit:
                    del self.data[: len(self.data) - self.limit]

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def kept(self) -> bytes:
        return bytes(self.data[: self.limit] if self.head else self.data[-self.limit :])

    def text(self) -> str:
        return self.kept().decode("utf-8", "replace")

    @property
    def truncated(self) -> bool:
        return self.total > self.limit


class Sandbox:
    """Runs commands in one `Workspace` under `Limits` (a `CommandRunner`)."""

    def __init__(self, limits: Limits, space: Workspace) -> None:
        self.limits = limits
        self.space = space
        self.isolated = isolation(limits).sandboxed

    @property
    def workdir(self) -> Path:
        return self.space.program

    @property
    def tools(self) -> Path:
        return self.space.tools

    @property
    def outputs(self) -> Path:
        return self.space.outputs

    def install_tool(self, name: str, text: str) -> Path:
        """Put one of gi's files into tools/ (read-only to the command) and return its path."""
        return install_tool(self.space, name, text)

    def read_output(self, name: str, max_bytes: int = 64 * 1024 * 1024) -> bytes | None:
        """A file the command left in outputs/: a regular file only, never through a link."""
        return read_regular(self.space.outputs / name, max_bytes)

    def clear_output(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.space.outputs / name).unlink()

    def _limited(self, argv: Sequence[str], cgroups: _Cgroups) -> list[str]:
        memory = self.limits.memory_mb * 1024 * 1024
        size = self.limits.file_mb * 1024 * 1024
        # Without a user namespace, RLIMIT_NPROC counts every process of the user, not just ours.
        processes = self.limits.processes + (0 if self.isolated else _processes_of_this_user())
        limits = [f"--as={memory}:{memory}", f"--fsize={size}:{size}", f"--nproc={processes}"]
        join = cgroups.join()
        if shutil.which("prlimit"):
            command = ["prlimit", *limits, "--", *argv]
        else:  # only the address space then: `ulimit` differs between shells for the rest
            command = ["/bin/sh", "-c", f'ulimit -v {memory // 1024} && exec "$@"', "gi-limit", *argv]
        return ["/bin/sh", "-c", f'{join}exec "$@"', "gi-sandbox", *command]

    def _wrap(self, argv: Sequence[str], cwd: Path, outputs: int | None = None) -> list[str]:
        if not self.isolated:
            return reaper_command(argv)
        return bubblewrap_command(argv, cwd, self.limits, self.space, outputs=outputs)

    def environment(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        """The command's whole environment: a few locale variables and ours, nothing else."""
        env = {name: os.environ[name] for name in _PASSED_ENV if name in os.environ}
        temporary = str(self.space.temporary)
        env.update(
            PATH=os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
            HOME=temporary,
            TMPDIR=temporary,
            USER="gi",
            LOGNAME="gi",
            PYTHONDONTWRITEBYTECODE="1",
            PYTHONHASHSEED="0",
            PYTHONNOUSERSITE="1",
        )
        env.update(extra or {})
        return env

    def __call__(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        stdin: bytes = b"",
        channel: bool = False,
        on_channel: Callable[[bytes], None] | None = None,
    ) -> ProcessOutcome:
        """Run `argv` in the workspace's program copy (or `cwd`) within the limits.

        `stdin` is written to the command's standard input before it starts (it must fit a pipe
        buffer). With `channel`, the command gets one more pipe, whose descriptor number is in
        GI_CHANNEL_FD; what it writes there comes back as `ProcessOutcome.channel`, and each
        piece read goes to `on_channel` as it arrives (for a display: nothing checked yet).
        """
        cwd = cwd or self.space.program
        # Nothing a command left in temporary/ reaches the next one: no result cached across
        # the test run, the behaviour check and the timing workers.
        _empty_folder(self.space.temporary)
        run_env = self.environment(env)
        limit = self.limits.output_kb * 1024
        cap = _Cgroups(self.limits)
        read_in, write_in = os.pipe()
        os.write(write_in, stdin)
        os.close(write_in)
        read_out, write_out = os.pipe()
        read_err, write_err = os.pipe()
        read_channel, write_channel = os.pipe() if channel else (-1, -1)
        if channel:
            run_env["GI_CHANNEL_FD"] = str(write_channel)
        # In bubblewrap, outputs/ is RAM; the finisher copies it back through this descriptor.
        outputs = os.open(self.space.outputs, os.O_RDONLY | os.O_DIRECTORY) if self.isolated else -1
        started = time.perf_counter()
        try:
            process = subprocess.Popen(
                self._limited(self._wrap(argv, cwd, outputs if outputs >= 0 else None), cap),
                cwd=cwd,
                env=run_env,
                stdin=read_in,
                stdout=write_out,
                stderr=write_err,
                pass_fds=tuple(descriptor for descriptor in (write_channel, outputs) if descriptor >= 0),
                start_new_session=True,
            )
        finally:
            for descriptor in (read_in, write_out, write_err, write_channel, outputs):
                if descriptor >= 0:
                    os.close(descriptor)
        out, err = _Tail(read_out, limit), _Tail(read_err, limit)
        report = _Tail(read_channel, CHANNEL_BYTES, head=True, on_chunk=on_channel) if channel else None
        timed_out, bomb = False, ""
        quota = _Quota.of(self)
        try:
            timed_out, bomb = _watch(process, timeout, cap, quota)
        finally:
            self._stop(process)
            for tail in (out, err, report):
                if tail is not None:
                    tail.join(timeout=5)
            cap.close()
        returncode = process.returncode if process.returncode is not None else -9
        if not bomb and self.isolated:
            bomb = over_quota(returncode, err.text())  # the finisher's count of files, in bubblewrap
        return ProcessOutcome(
            returncode=returncode,
            stdout=out.text(),
            stderr=err.text() + (f"\n{bomb}\n" if bomb and bomb not in err.text() else ""),
            resource=bomb if is_over_quota(bomb) else "",
            seconds=time.perf_counter() - started,
            timed_out=timed_out,
            channel=report.kept() if report is not None else b"",
            channel_overflow=report is not None and report.truncated,
            stdout_digest=f"{out.digest.hexdigest()}:{out.total}" if out.truncated else "",
        )

    def start(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None) -> LiveCommand:
        """Start a long-lived command (a warm worker) within the limits; it talks to gi over two
        pipes, whose descriptor numbers it finds in GI_REQUEST_FD and GI_RESPONSE_FD. Its own
        stdout and stderr are drained and dropped but for their tails."""
        run_env = self.environment(env)
        cap = _Cgroups(self.limits)
        request_read, request_write = os.pipe()
        response_read, response_write = os.pipe()
        read_out, write_out = os.pipe()
        read_err, write_err = os.pipe()
        run_env.update(GI_REQUEST_FD=str(request_read), GI_RESPONSE_FD=str(response_write))
        try:
            process = subprocess.Popen(
                self._limited(self._wrap(argv, self.space.program), cap),
                cwd=self.space.program,
                env=run_env,
                stdin=subprocess.DEVNULL,
                stdout=write_out,
                stderr=write_err,
                pass_fds=(request_read, response_write),
                start_new_session=True,
            )
        except BaseException:
            for descriptor in (request_write, response_read, read_out, read_err):
                os.close(descriptor)
            cap.close()
            raise
        finally:
            for descriptor in (request_read, response_write, write_out, write_err):
                os.close(descriptor)
        limit = self.limits.output_kb * 1024
        return LiveCommand(
            self,
            process,
            cap,
            request_write,
            response_read,
            _Tail(read_out, limit),
            _Tail(read_err, limit),
            _Quota.of(self),
        )

    def _stop(self, process: subprocess.Popen[bytes]) -> None:
        """Kill everything the command started, and reap it.

        In the sandbox, killing the process group takes bubblewrap and with it the PID
        namespace. Without it, the reaper first kills what left the group (daemons), then the
        group goes.
        """
        if not self.isolated and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def is_over_quota(why: str) -> bool:
    """Whether a command was stopped (`why`) for going over its disk quota."""
    return why.startswith(_Quota.OVER)


class _Quota:
    """What a command's writable folders on disk hold beyond what they held when it started,
    checked as it runs: past `disk_mb` it is stopped, and fails as `resource`. Without
    bubblewrap those are outputs/ and TMPDIR; a writable copy of the program (a cold run's,
    whose tests may write beside themselves) is on disk with bubblewrap too. Checked, not
    enforced: files allocated at once between two looks may go past it for that moment."""

    OVER = "over its disk quota"

    def __init__(self, folders: Sequence[Path], disk_mb: int, entries: int = 100_000) -> None:
        self.folders = tuple(folders)
        self.allowed = disk_mb * 1024 * 1024
        #: Entries a command may add at most (one that made more is over its quota too).
        self.entries = entries
        self.start_used, self.start_entries = self._usage()

    @classmethod
    def of(cls, sandbox: Sandbox) -> _Quota | None:
        """The quota of the folders a command of `sandbox` writes on disk, or None (all in RAM)."""
        folders = [] if sandbox.isolated else [sandbox.space.outputs, sandbox.space.temporary]
        if sandbox.limits.writable_program:
            folders.append(sandbox.space.program)
        return cls(folders, sandbox.limits.disk_mb, sandbox.limits.disk_files) if folders else None

    def exceeded(self) -> str:
        """Why the folders are over the quota, or ""."""
        used, entries = self._usage(self.start_used + self.allowed, self.start_entries + self.entries)
        what = " and ".join(folder.name for folder in self.folders)
        if used - self.start_used > self.allowed:
            return f"{self.OVER}: {what} grew by more than {self.allowed // 2**20} MiB"
        if entries - self.start_entries > self.entries:
            return f"{self.OVER}: {what} grew by more than {self.entries} files and folders"
        return ""

    def _usage(self, most_bytes: int | None = None, most_entries: int | None = None) -> tuple[int, int]:
        """Bytes and entries under the folders, the walk stopping once past either `most`."""
        used, entries = 0, 0
        stack = [str(folder) for folder in self.folders]
        while stack:
            with contextlib.suppress(OSError), os.scandir(stack.pop()) as found:
                for entry in found:
                    entries += 1
                    info = entry.stat(follow_symlinks=False)
                    used += info.st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
            if (most_bytes is not None and used > most_bytes) or (most_entries is not None and entries > most_entries):
                break
        return used, entries


def _watch(
    process: subprocess.Popen[bytes], timeout: float, cap: _Cgroups, quota: _Quota | None = None
) -> tuple[bool, str]:
    """Wait for the command to end within `timeout` seconds, looking at its refused forks (and,
    without bubblewrap, at its disk use) as it runs: (whether it ran out of time, why it was
    stopped as a fork bomb or over its quota, or ""). Either way it is still running, for the
    caller to stop."""
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        try:
            process.wait(timeout=max(0.0, min(remaining, WATCH_INTERVAL)))
            return False, quota.exceeded() if quota is not None else ""
        except subprocess.TimeoutExpired:
            bomb = cap.fork_bomb() or (quota.exceeded() if quota is not None else "")
            if bomb:
                return False, bomb
            if remaining <= 0:
                return True, ""


@dataclass
class LiveCommand:
    """A long-lived command started by `Sandbox.start`: its pipes, and how to stop it."""

    sandbox: Sandbox
    process: subprocess.Popen[bytes]
    cgroups: _Cgroups
    requests: int
    responses: int
    stdout: _Tail
    stderr: _Tail
    #: Its folders on disk and what they held when it started (None: all it writes is in RAM).
    quota: _Quota | None = None

    def alive(self) -> bool:
        return self.process.poll() is None

    def stopped(self, refused: int = 0) -> str:
        """Why the command must be stopped now, or "": a fork bomb (more refused forks than
        `refused`), or, without bubblewrap, its writable folders over their quota."""
        if bomb := self.cgroups.fork_bomb(refused):
            return bomb
        return self.quota.exceeded() if self.quota is not None else ""

    def read(self, size: int, deadline: float, refused: int = 0) -> tuple[bytes | None, str]:
        """Exactly `size` bytes from the command's answers by `deadline` (time.monotonic), and ""; or
        None, when it closed its end or the time ran out, and why it must be stopped (`stopped`,
        looked at while it is silent), if that is why."""
        data = b""
        while len(data) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, ""
            try:
                ready = select.select([self.responses], [], [], min(remaining, WATCH_INTERVAL))[0]
            except (OSError, ValueError):  # `stop` closed the pipe from another thread (a run ending)
                return None, ""
            if not ready:
                if why := self.stopped(refused):
                    return None, why
                continue
            try:
                chunk = os.read(self.responses, size - len(data))
            except OSError:  # (closed as above)
                return None, ""
            if not chunk:
                return None, ""
            data += chunk
        return data, ""

    def stop(self) -> None:
        """Kill the command and everything it started; close the pipes."""
        for descriptor in (self.requests, self.responses):
            with contextlib.suppress(OSError):
                os.close(descriptor)
        self.sandbox._stop(self.process)
        for tail in (self.stdout, self.stderr):
            tail.join(timeout=5)
        self.cgroups.close()


_PR_SET_DUMPABLE = 4


def hide_environment() -> None:
    """Make gi's /proc entries (its environment, with the API key) unreadable to other processes
    of the same user, for runs without a sandbox (root can still read them; Linux only)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
