"""Spare children of gi's warm test worker (warm_worker.py): each forked ahead of its variant.

A child forked from the worker shares the worker's memory copy-on-write: its first write to
each shared page (most of them reference counts of the objects pytest and the tests touch) has
the kernel copy that page, and on a small suite those copies were most of a child's time. The
pages are nearly the same for every child of a worker, so the worker learns them from what its
first children held alone as they ended (`own_pages`, listed on a pipe of their own before their
exit status; `WrittenPages.learn`). A spare child, forked while the last variant's tests run,
copies them ahead on the core those tests leave free (`populate`, with `MADV_POPULATE_WRITE`:
the kernel breaks the sharing of each page as a write would, without writing), until the worker
hands it its variant (`Spare.hand`: the report key on what becomes its stdin, and the request
framed as gi's, `send` and `receive`, which the worker's pipes to gi use too). The spare then
becomes that variant's child.

A spare lives beside the last variant's processes, which may kill it, stop it or lower its
limits: the worker settles that run without killing the spare, lets it go on if it was stopped,
and drops it if what it may run with changed (`Spares.settle`); one that died is replaced by a
child forked then.

Installed beside the worker as gi_warm_spare.py; only the standard library. Where the kernel
lacks `MADV_POPULATE_WRITE` (before Linux 5.14) or /proc/self/pagemap, nothing is learned or
populated, and a spare saves only the fork.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import json
import os
import select
import signal
import struct
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

if __package__:  # imported from gi's package (by gi's own tests and type checks)
    from .warm_cleaning import resources
else:  # a workspace's tools folder, where gi copies it beside this file
    import importlib

    resources = importlib.import_module("gi_warm_cleaning").resources

#: madvise's advice that faults pages in writable (Linux 5.14).
MADV_POPULATE_WRITE = 23
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
#: In a pagemap entry: the page is present, and mapped by this process alone.
_PRESENT = 1 << 63
_EXCLUSIVE = 1 << 56
#: How many children of a worker it learns the written pages from (the later ones write nearly
#: only pages the first few did).
LEARNING_CHILDREN = 3
#: Pages a spare populates between two looks for its variant.
CHUNK_PAGES = 64
#: The most of a child's page list the worker reads (in bytes: eight a page).
PAGES_BYTES = 8 * 262144

_libc = ctypes.CDLL(None, use_errno=True)
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def _private_writable() -> list[tuple[int, int]]:
    """This process's private writable mappings, as (first page, end page); not the kernel's."""
    found = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if fields[1] != "rw-p" or (len(fields) > 5 and fields[5].startswith("[v")):
                continue  # ([vvar], [vdso], [vsyscall]: the kernel's)
            start, end = (int(bound, 16) // PAGE for bound in fields[0].split("-"))
            found.append((start, end))
    return found


def _pages_where(wanted: int) -> array.array[int]:
    """The pages of this process's private writable mappings whose pagemap entry has every bit
    of `wanted`."""
    found = array.array("Q")
    try:
        with open("/proc/self/pagemap", "rb") as pagemap:
            for start, end in _private_writable():
                pagemap.seek(start * 8)
                entries = memoryview(pagemap.read((end - start) * 8)).cast("Q")
                found.extend(start + index for index, entry in enumerate(entries) if entry & wanted == wanted)
    except (OSError, ValueError):
        return array.array("Q")
    return found


def own_pages() -> bytes:
    """In a child as it ends: the pages it holds alone (those of the worker's it wrote, and its
    own allocations), as page numbers in eight bytes each."""
    return _pages_where(_PRESENT | _EXCLUSIVE).tobytes()


class WrittenPages:
    """The pages of the worker's memory its children write, as runs of (first page, pages),
    learned from the first LEARNING_CHILDREN children of a worker (or of its prepared session):
    the pages at least two of them listed. A list is the variant's to forge; one forged list
    adds nothing, and a page must be the worker's own to count."""

    def __init__(self) -> None:
        self.runs: list[tuple[int, int]] = []
        self.children = 0
        self._listed: dict[int, int] = {}

    def learning(self) -> bool:
        """Whether the worker still learns from its children's lists."""
        return self.children < LEARNING_CHILDREN

    def forget(self) -> None:
        """Learn anew (the worker's memory changed: another prepared session)."""
        self.runs, self.children, self._listed = [], 0, {}

    def learn(self, listed: bytes) -> None:
        """Count a child's page list (`own_pages`; empty where it ended without one)."""
        self.children += 1
        claimed = array.array("Q")
        claimed.frombytes(listed[: len(listed) - len(listed) % 8])
        if not claimed:
            return
        for page in set(claimed).intersection(_pages_where(_PRESENT)):
            self._listed[page] = self._listed.get(page, 0) + 1
        self.runs = runs(sorted(page for page, times in self._listed.items() if times >= 2))


def runs(pages: list[int]) -> list[tuple[int, int]]:
    """Sorted page numbers as runs of (first page, pages)."""
    found: list[tuple[int, int]] = []
    for page in pages:
        if found and found[-1][0] + found[-1][1] == page:
            found[-1] = (found[-1][0], found[-1][1] + 1)
        else:
            found.append((page, 1))
    return found


def populate(written: list[tuple[int, int]], stop: int) -> int:
    """In a spare: make the `written` pages its own, until `stop` (the descriptor its variant
    comes on) is readable, looking at it every CHUNK_PAGES pages; the pages populated."""
    done, since = 0, CHUNK_PAGES
    for first, count in written:
        for start in range(first, first + count, CHUNK_PAGES):
            if since >= CHUNK_PAGES:
                since = 0
                with contextlib.suppress(OSError, ValueError):
                    if select.select([stop], [], [], 0)[0]:
                        return done
            pages = min(CHUNK_PAGES, first + count - start)
            since += pages
            if _libc.madvise(start * PAGE, pages * PAGE, MADV_POPULATE_WRITE) == 0:
                done += pages
            elif ctypes.get_errno() == 22:  # EINVAL: a kernel without the advice
                return done
    return done


def receive(stream: int) -> dict[str, Any] | None:
    """One framed message (a 4-byte length and JSON), or None when the pipe was closed."""
    header = _exactly(stream, 4)
    if header is None:
        return None
    body = _exactly(stream, struct.unpack(">I", header)[0])
    return None if body is None else dict(json.loads(body))


def _exactly(stream: int, size: int) -> bytes | None:
    """`size` bytes read from `stream`, or None if it ends first."""
    data = b""
    while len(data) < size:
        chunk = os.read(stream, size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def send(stream: int, message: dict[str, Any]) -> None:
    """Write `message` to `stream`, framed as `receive` reads it."""
    write_all(stream, struct.pack(">I", len(data := json.dumps(message).encode())) + data)


def write_all(stream: int, data: bytes) -> None:
    """Write all of `data` to `stream` (a pipe takes it in parts)."""
    while data:
        data = data[os.write(stream, data) :]


class ChildEnds(NamedTuple):
    """A child's ends of the pipes the worker reads it by: its stdin (the report key and plan),
    stdout, stderr, the report's channel, its deadlines (`WorkerWatch`), the exit status it says
    as it ends, and its page list (-1 unless the worker learns from it)."""

    key: int
    out: int
    err: int
    channel: int
    watch: int
    ending: int
    pages: int


@dataclass
class Spare:
    """A spare or a child, seen from the worker: its pid, the prepared session it was forked in
    (None for none), the worker's ends of its pipes (`key` and `go` until it is handed its
    request, -1 after; `reading`: the child's ends, read by the worker: stdout, stderr, channel,
    deadlines, status, page list, its `key` -1) and the pages it was forked to populate."""

    pid: int
    context: object
    key: int
    go: int
    reading: ChildEnds
    pages: int

    def hand(self, request: dict[str, Any]) -> bool:
        """Give the spare its request; False if it is gone (a variant's process may kill it)."""
        try:
            write_all(self.key, request["key"].encode())
            os.close(self.key)
            self.key = -1
            send(self.go, request)
            return True
        except OSError:
            return False
        finally:
            for descriptor in (self.key, self.go):
                with contextlib.suppress(OSError):
                    os.close(descriptor)
            self.key = self.go = -1

    def descriptors(self) -> list[int]:
        """The worker's ends of the child's pipes, once handed its request."""
        return [descriptor for descriptor in self.reading if descriptor >= 0]

    def discard(self) -> None:
        """End a spare (or a child its request never reached), and reap it."""
        for descriptor in (self.key, self.go, *self.descriptors()):
            with contextlib.suppress(OSError):
                os.close(descriptor)
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


#: How a spare becomes its variant's child: given the request and its ends of the pipes, it runs
#: the variant's tests (and returns only into a prepared session, to go on with it).
Become = Callable[[dict[str, Any], ChildEnds], None]


class Spares:
    """The worker's spare: one forked for the next variant while a variant's tests run, where a
    core is free for it (`populating`), and the pages its children write (`written`)."""

    def __init__(self, closed: Sequence[int], populating: bool = True) -> None:
        """`closed`: descriptors of the worker's that no child may hold (its pipes to gi);
        `populating`: whether spares are forked ahead and populate pages (gi says so where a
        core is free for it)."""
        self.closed = list(closed)
        self.populating = populating
        self.spare: Spare | None = None
        self.written = WrittenPages()
        self.resources = resources()

    @property
    def pid(self) -> int | None:
        """The spare's pid, if there is one."""
        return None if self.spare is None else self.spare.pid

    def take(self, context: object, become: Become, request: dict[str, Any]) -> Spare | None:
        """The child of `request`: the spare forked for `context` (a prepared session, or None),
        handed it, or a child forked now with it (no spare, or a variant's process killed it).
        None in that child, once its variant has run (`become`)."""
        spare, self.spare = self.spare, None
        if spare is not None and spare.context is not context:
            spare.discard()
            self.written.forget()
        elif spare is not None and spare.hand(request):
            return spare
        elif spare is not None:
            spare.discard()
        return self.fork(context, [], become, request)

    def fork_next(self, context: object, busy: Sequence[int], become: Become) -> bool:
        """Fork the spare for the next variant of `context` while a child runs (`busy`: the
        worker's ends of that child's pipes, which the spare closes), where spares populate
        (else the next child is forked as its variant comes: forked ahead, it would only compete
        with the tests); False in that spare, once its variant has run. A fork that fails (the
        variant's processes fill the limit) leaves the next child to be forked then."""
        if not self.populating:
            return True
        try:
            spare = self.fork(context, busy, become)
        except OSError:
            return True
        self.spare = spare
        return spare is not None

    def fork(self, context: object, busy: Sequence[int], become: Become,
             request: dict[str, Any] | None = None) -> Spare | None:  # fmt: skip
        """Fork a child for `request`, or a spare: it populates the pages children write, then
        waits for its request. Either becomes that request's child (`become`). The Spare in the
        worker; None in the child, once its variant has run."""
        pipes = [os.pipe() for _ in range(7)]  # stdin (the key), the request, stdout, stderr, ...
        key, go, out, err, channel, watch, ending = pipes
        pages = os.pipe() if self.populating and self.written.learning() else (-1, -1)
        try:
            if request is not None:
                write_all(key[1], request["key"].encode())
            # What the worker wrote and has not flushed (a prepared session's end prints its
            # summary) must not reach the child's output with the copy of the buffers it inherits.
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            pid = os.fork()
        except OSError:
            for descriptor in (*(end for pipe in pipes for end in pipe), *pages):
                if descriptor >= 0:
                    os.close(descriptor)
            raise
        if pid == 0:
            try:  # nothing of the worker's own code may run on here, whatever befalls the spare
                interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)  # (another's to send it)
                for descriptor in (*busy, *self.closed, go[1], key[1], pages[0], *(pipe[0] for pipe in pipes[2:])):
                    with contextlib.suppress(OSError):
                        os.close(descriptor)
                if request is None:
                    populate(self.written.runs, go[0])
                    request = receive(go[0])
                os.close(go[0])
                if request is None:  # dropped by the worker
                    os._exit(0)
                signal.signal(signal.SIGINT, interrupt)
                become(request, ChildEnds(key[0], out[1], err[1], channel[1], watch[1], ending[1], pages[1]))
            except BaseException:
                os._exit(70)
            return None
        for descriptor in (key[0], go[0], pages[1], *(pipe[1] for pipe in pipes[2:])):
            if descriptor >= 0:
                os.close(descriptor)
        reading = ChildEnds(-1, out[0], err[0], channel[0], watch[0], ending[0], pages[0])
        if request is not None:  # handed it already
            os.close(key[1])
            os.close(go[1])
            return Spare(pid, context, -1, -1, reading, 0)
        return Spare(pid, context, key[1], go[1], reading, sum(count for _, count in self.written.runs))

    def settle(self) -> bool:
        """After a run's processes are all gone but the spare: let it go on if one of them
        stopped it, and drop it if they lowered what it may run with, or if it has a process of
        its own (it never starts one: what it started would have outlived the run's). Whether
        it was dropped (then what it started must be reaped too)."""
        if self.spare is None:
            return False
        with contextlib.suppress(OSError):
            os.kill(self.spare.pid, signal.SIGCONT)
        if resources(self.spare.pid) == self.resources and not _children(self.spare.pid):
            return False
        self.discard()
        return True

    def unchanged(self) -> bool:
        """Whether the worker runs with what it started with (a variant's process may lower it)."""
        return resources() == self.resources

    def discard(self) -> None:
        """End the spare, if there is one."""
        if self.spare is not None:
            self.spare.discard()
            self.spare = None


def _children(pid: int) -> bool:
    """Whether the process `pid` has a child (or /proc cannot say)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return False  # (gone: a zombie's tasks are not listed)
    except OSError:
        return True
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as listed:
                if listed.read().strip():
                    return True
        except FileNotFoundError:
            continue
        except OSError:
            return True
    return False
