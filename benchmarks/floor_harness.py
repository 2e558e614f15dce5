"""The floor of an evaluation: the same tests in a warm forked interpreter with nothing else.

python benchmarks/floor_harness.py REQUEST.json OUT.json   (run by benchmarks/evaluation_floor.py)

REQUEST.json names the program's folder, its training test paths and the variants (each the
text of its edited files). This process copies the program (without the held-out tests), imports
pytest once (a test module may use `pytest.raises`), compiles the test modules and the
original's editable modules once, and then for each variant, alternately:

- the floor: forks; the child makes the variant's modules from their text (the others from the
  original's compiled code), runs each test module and calls its test functions (plain
  functions without arguments: this floor knows no fixtures), and exits; nothing else;
- pytest in a warm fork: forks; the child makes the variant's modules alike and runs
  `pytest.main` on the training paths, quiet, without gi's plugin or Hypothesis's (which gi
  leaves out where a project never names Hypothesis): what running the tests through pytest
  costs, start-up, collection and reporting included.

It writes the wall seconds of each (fork to reaped child) and what the floor's tests gave.
Needs the standard library and pytest; nothing of gi's.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

#: Seconds a variant's child may take before it is killed (a variant that loops).
CHILD_SECONDS = 10


def module_name(file: str) -> str:
    """The module an editable file is imported as, from the program's root."""
    name = file.removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__")


def test_files(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_file():
            found.append(path)
            continue
        found += sorted(p for p in path.rglob("*.py") if p.name.startswith("test_") or p.name.endswith("_test.py"))
    return found


def install(sources: dict[str, str], originals: dict[str, types.CodeType]) -> None:
    """Make the program's editable modules in this process: the variant's from their text, the
    others from the original's compiled code."""
    for file, code in originals.items():
        name = module_name(file)
        module = types.ModuleType(name)
        module.__file__ = os.path.abspath(file)
        sys.modules[name] = module
        text = sources.get(file)
        exec(code if text is None else compile(text, module.__file__, "exec"), module.__dict__)


def bare_tests(tests: list[tuple[Path, types.CodeType]]) -> list[bool]:
    """Run each test module and call its test functions; whether each passed."""
    outcomes = []
    for path, code in tests:
        module = types.ModuleType(path.stem)
        module.__file__ = str(path.resolve())
        exec(code, module.__dict__)
        for name, value in list(vars(module).items()):
            if name.startswith("test") and callable(value):
                try:
                    value()
                    outcomes.append(True)
                except Exception:
                    outcomes.append(False)
    return outcomes


def in_child(work: Any) -> tuple[float, bytes]:
    """Fork, run `work()` in the child (its bytes go back on a pipe), reap it; the wall seconds."""
    read, write = os.pipe()
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        signal.alarm(CHILD_SECONDS)
        status = 0
        try:
            data = work()
            while data:
                data = data[os.write(write, data) :]
        except BaseException:
            status = 1
        os._exit(status)
    os.close(write)
    data = b""
    while chunk := os.read(read, 65536):
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    return time.perf_counter() - started, data


def main() -> None:
    request = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    copy = Path(tempfile.mkdtemp(prefix="gi-floor-")) / "program"
    shutil.copytree(request["root"], copy, ignore=shutil.ignore_patterns(*request.get("exclude", [])))
    os.chdir(copy)
    sys.path.insert(0, str(copy))
    import pytest

    originals = {file: compile(Path(file).read_bytes(), os.path.abspath(file), "exec") for file in request["files"]}
    tests = [(path, compile(path.read_bytes(), str(path.resolve()), "exec")) for path in test_files(request["train"])]
    quiet = os.open(os.devnull, os.O_WRONLY)
    floor, through_pytest, outcomes = [], [], []
    for sources in request["variants"]:

        def bare(sources: dict[str, str] = sources) -> bytes:
            install(sources, originals)
            return json.dumps(bare_tests(tests)).encode()

        def with_pytest(sources: dict[str, str] = sources) -> bytes:
            install(sources, originals)
            os.dup2(quiet, 1)
            os.dup2(quiet, 2)
            pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", *request["train"]])
            return b""

        seconds, data = in_child(bare)
        floor.append(seconds)
        outcomes.append(json.loads(data) if data else None)
        through_pytest.append(in_child(with_pytest)[0])
    Path(sys.argv[2]).write_text(json.dumps({"floor": floor, "pytest": through_pytest, "outcomes": outcomes}))


if __name__ == "__main__":
    main()
