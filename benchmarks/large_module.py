"""How long gi takes to parse and index a large module (a run's first phase).

Generates a module of --megabytes (5 by default) of ordinary code, seeded (--seed): functions
with loops, branches, comprehensions and early returns, classes with methods, closures with
`nonlocal`, generators, async functions. Then, in one process:
- `Program.load` on it, as `gi run` reads an editable file: the interpreter's compile, libcst's
  parse, the normalised syntax tree, each node's lines, the site index; its seconds and sites;
- each of those steps alone, with the garbage collector paused as `Program` pauses it, and the
  lines also from libcst's own PositionProvider (what gi used before), side by side;
- with --gc-too, `Program.load` again with the garbage collector running throughout, as before.

python benchmarks/large_module.py [--megabytes 5] [--seed 0] [--gc-too]
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import gc
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from unittest import mock

import libcst as cst
import libcst.metadata
import numpy as np

from gi.model.positions import line_spans
from gi.model.program import Program, compile_quietly, garbage_collection_paused
from gi.model.sites import _SiteCollector

T = TypeVar("T")

BLOCKS = (
    '''
def total_{i}(items, limit={n}, *, scale=2.5):
    """Sum the scaled items below a limit."""
    total = 0
    seen = set()
    for index, item in enumerate(items):
        if item is None or item in seen:
            continue
        seen.add(item)
        if index % 3 == 0 and item > limit:
            total += item * scale
        elif item < -limit:
            total -= abs(item) // 2
        else:
            total = max(total, item + {n})
    while total > limit * 10:
        total = total / 2
    return [x for x in seen if x != total] if total else total
''',
    """
class Holder{i}:
    size = {n}

    def __init__(self, value):
        self.value = value

    def grow(self, other):
        if not isinstance(other, Holder{i}):
            raise TypeError("other must be a Holder{i}")
        return Holder{i}(self.value + other.value * self.size)

    @property
    def doubled(self):
        return {{"value": self.value * 2, "size": self.size}}
""",
    """
def counter_{i}(start={n}):
    count = start

    def step(by=1):
        nonlocal count
        count += by
        return count

    return step
""",
    """
def pairs_{i}(rows):
    for row in rows:
        try:
            key, value = row
        except ValueError:
            continue
        if not key:
            break
        yield key.strip(), int(value) % {n}
""",
    """
async def fetch_{i}(client, names, retries={n}):
    results = {{}}
    for name in names:
        for attempt in range(retries):
            reply = await client.get(name)
            if reply.ok:
                results[name] = reply.body[: {n} + 1]
                break
    return results
""",
)


def generate(megabytes: float, seed: int) -> str:
    """A module of about `megabytes` of the blocks above, drawn and numbered with `seed`."""
    rng = np.random.default_rng(seed)
    parts = ['"""A generated module (benchmarks/large_module.py)."""\n']
    size = 0
    index = 0
    while size < megabytes * 1e6:
        block = BLOCKS[int(rng.integers(len(BLOCKS)))].format(i=index, n=int(rng.integers(1, 1000)))
        parts.append(block)
        size += len(block)
        index += 1
    return "\n".join(parts)


def timed(what: Callable[[], T]) -> tuple[float, T]:
    started = time.perf_counter()
    result = what()
    return time.perf_counter() - started, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gc-too", action="store_true", help="also load with the garbage collector running")
    args = parser.parse_args()
    source = generate(args.megabytes, args.seed)
    print(f"load average {' '.join(f'{value:.1f}' for value in os.getloadavg())} on {os.cpu_count()} cores")
    print(f"a generated module of {len(source) / 1e6:.2f} MB, {source.count(chr(10))} lines (seed {args.seed})")
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "big.py").write_text(source, encoding="utf-8")
        seconds, program = timed(lambda: Program.load(folder, ["big.py"]))
        print(f"Program.load (parse and index, as gi run does): {seconds:.1f} s, {len(program.sites)} sites")
        del program
        if args.gc_too:
            gc.collect()
            started = time.perf_counter()
            with mock.patch("gi.model.program.garbage_collection_paused", contextlib.nullcontext):
                sites = len(Program.load(folder, ["big.py"]).sites)
            print(f"  the same, the garbage collector running: {time.perf_counter() - started:.1f} s, {sites} sites")
    gc.collect()
    with garbage_collection_paused():
        print("its steps alone (the garbage collector paused):")
        seconds, _ = timed(lambda: compile_quietly(source, "big.py"))
        print(f"  the interpreter's compile: {seconds:.1f} s")
        seconds, module = timed(lambda: cst.parse_module(source))
        print(f"  libcst's parse: {seconds:.1f} s")
        seconds, _ = timed(lambda: ast.dump(ast.parse(source)))
        print(f"  the normalised syntax tree: {seconds:.1f} s")
        seconds, _ = timed(lambda: line_spans(module))
        wrapper = libcst.metadata.MetadataWrapper(module, unsafe_skip_copy=True)
        before, _ = timed(lambda: wrapper.resolve(libcst.metadata.PositionProvider))
        print(f"  each node's lines: {seconds:.1f} s (libcst's PositionProvider, as before: {before:.1f} s)")
        seconds, _ = timed(lambda: _SiteCollector("big.py", module).collect())
        print(f"  the site index (each node's lines again, the scope facts, the sites): {seconds:.1f} s")


if __name__ == "__main__":
    main()
