"""The warm worker's spare children learn the pages a child writes of the worker's memory and
write them ahead (fitness/sandboxed/warm_spare.py): real forked processes and their page faults,
and real warm workers."""

from __future__ import annotations

import array
import os
import re
import resource
import sys
from pathlib import Path

import pytest

from gi.engine.sandbox.limits import Limits
from gi.engine.warm import WarmPool
from gi.fitness.sandboxed.warm_spare import PAGE, Spares, WrittenPages, own_pages, populate, runs
from gi.model.program import Program

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pagemap and madvise are Linux's")
TESTS = "from calc import answer\n\n\ndef test_answer():\n    assert answer() == 2\n"
KERNEL = tuple(int(part) for part in re.findall(r"\d+", os.uname().release)[:2])


def in_a_child(work: str, objects: list[object], stop: int = -1, written: WrittenPages | None = None) -> bytes:
    """Fork; in the child, populate `written` (if given), then touch every object (a reference
    count written on each one's page) and send back its page faults meanwhile and, for
    "learn", its own pages."""
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(reading)
            if written is not None:
                populate(written.runs, stop)
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            for _ in objects:  # a reference taken to each and given back: written on its page
                pass
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
            message = own_pages() if work == "learn" else str(faults).encode()
            while message:
                message = message[os.write(writing, message) :]
        finally:
            os._exit(0)
    os.close(writing)
    received = b""
    while chunk := os.read(reading, 1 << 16):
        received += chunk
    os.close(reading)
    os.waitpid(pid, 0)
    return received


@pytest.mark.skipif(KERNEL < (5, 14), reason="MADV_POPULATE_WRITE came with Linux 5.14")
def test_a_spare_that_populated_the_pages_a_child_wrote_copies_next_to_none_of_them_as_it_runs() -> None:
    objects = [object() for _ in range(200_000)]  # (16 bytes each: 800 pages of the heap)
    written = WrittenPages()
    written.learn(in_a_child("learn", objects))
    assert written.runs == [], "a page counts once two children listed it"
    written.learn(in_a_child("learn", objects))
    assert written.children == 2 and sum(count for _, count in written.runs) > 500
    stop, never = os.pipe()
    try:
        untouched = int(in_a_child("faults", objects))
        populated = int(in_a_child("faults", objects, stop, written))
    finally:
        os.close(stop)
        os.close(never)
    assert untouched > 400, "a child's first touches copy the pages it shares with its parent"
    assert populated < untouched / 10, (populated, untouched)


def test_a_spare_stops_populating_once_its_variant_comes() -> None:
    written, objects = WrittenPages(), [object() for _ in range(50_000)]
    written.learn(in_a_child("learn", objects))
    written.learn(in_a_child("learn", objects))
    assert written.runs
    stop, come = os.pipe()
    os.write(come, b"x")
    try:
        assert populate(written.runs, stop) == 0, "the variant was there before the first page"
    finally:
        os.close(stop)
        os.close(come)


def test_a_forged_page_list_is_kept_to_the_pages_the_worker_holds() -> None:
    held = [object() for _ in range(10)]
    ours = id(held[0]) // PAGE  # a page of this process's heap
    written = WrittenPages()
    forged = array.array("Q", [1, 2, 3, ours, (1 << 47) // PAGE - 1, *range(10**9, 10**9 + 1000)])
    written.learn(forged.tobytes() + b"odd")
    assert written.runs == [], "one list alone adds nothing"
    written.learn(forged.tobytes())
    assert written.runs == [(ours, 1)] and written.children == 2, "and the worker's pages only"
    written.forget()
    assert written.learning() and written.runs == []


def test_page_runs() -> None:
    assert runs([3, 4, 5, 9, 11, 12]) == [(3, 3), (9, 1), (11, 2)]
    assert runs([]) == []


@pytest.mark.parametrize("populating", [True, False])
def test_a_spare_lists_its_pages_only_where_spares_populate(populating: bool) -> None:
    spares = Spares([], populating)
    spare = spares.fork(None, [], lambda request, ends: os._exit(0))
    assert spare is not None, "(the spare never returns here: it ends when dropped)"
    try:
        assert (spare.reading.pages >= 0) is populating, "a pipe for its page list"
    finally:
        spare.discard()


@pytest.mark.skipif(KERNEL < (5, 14), reason="MADV_POPULATE_WRITE came with Linux 5.14")
def test_a_worker_learns_from_its_first_children_and_its_spares_populate_only_where_told(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "calc.py").write_text("def answer():\n    return 2\n")
    (tmp_path / "tests" / "test_calc.py").write_text(TESTS)
    program = Program.load(tmp_path, ["calc.py"])
    counted: dict[bool, int] = {}
    for told in (True, False):
        pool = WarmPool(program, Limits(isolate=False), 1, spare_pages=told)
        try:
            runs = [pool.run_tests({}, ["tests"], timeout=60, limits={}, default_limit=0) for _ in range(5)]
        finally:
            pool.close()
        assert all(run.outcomes == {"tests/test_calc.py::test_answer": "passed"} for run in runs)
        counted[told] = pool.populated_runs
    # Two children's lists, then a spare forked meanwhile for the fourth run on.
    assert counted[True] >= 1 and counted[False] == 0, counted
