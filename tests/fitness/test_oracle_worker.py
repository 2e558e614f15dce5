"""The oracle's sandboxed script (fitness/sandboxed/oracle_worker.py) run as gi runs it, over its
pipes: what it answers for calls, and that a program cannot make a different value answer as the
original's by lying in its own methods or by replacing json and repr once imported."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gi.fitness.oracle.record import limits_source, recorder_source, worker_source

HONEST = """
def five(x):
    return 5


def sort_in_place(values):
    values.sort()


def numbers(n):
    return (i * i for i in range(n))


def forever(x):
    while True:
        pass


def lists(x):
    return [x, (x, None), {"a": [1.5, float("nan")]}, {3, 1, 2}, b"ab", range(2, 9, 3)]
"""

# The same functions, from a program that lies: its value says it equals 5 and prints as 5, and
# once imported it replaces json.dumps and repr for everyone.
LIAR = """
import builtins
import json


class Five:
    def __eq__(self, other):
        return True

    def __hash__(self):
        return 5

    def __repr__(self):
        return "5"


class Sneaky(int):
    def __repr__(self):
        return "5"


json.dumps = lambda *args, **kwargs: '{"returned": ["int", "5"]}'
builtins.repr = lambda value: "5"


def five(x):
    return Five()


def sneaky(x):
    return Sneaky(6)
"""


class Worker:
    """The script in `serve` mode in a folder holding `module`.py."""

    def __init__(self, folder: Path, module: str, source: str) -> None:
        (folder / f"{module}.py").write_text(source)
        script = folder / "worker.py"
        script.write_text(worker_source())
        requests_read, self.requests = os.pipe()
        self.responses, responses_write = os.pipe()
        env = {**os.environ, "GI_REQUEST_FD": str(requests_read), "GI_RESPONSE_FD": str(responses_write)}
        self.process = subprocess.Popen(
            [sys.executable, str(script), "serve"], cwd=folder, env=env, pass_fds=(requests_read, responses_write)
        )
        os.close(requests_read)
        os.close(responses_write)
        self.key, self.number = os.urandom(32), 0
        self.send({"key": self.key.hex(), "modules": [module]})
        assert self.receive()["ready"] is True

    def send(self, request: dict[str, Any]) -> None:
        data = json.dumps(request).encode()
        os.write(self.requests, struct.pack(">I", len(data)) + data)

    def receive(self) -> dict[str, Any]:
        size = struct.unpack(">I", self._exactly(4))[0]
        framed = json.loads(self._exactly(size))
        mac = hmac.new(self.key, f"{self.number}:{framed['body']}".encode(), hashlib.sha256).hexdigest()
        assert hmac.compare_digest(framed["mac"], mac), "an answer the worker did not sign"
        self.number += 1
        answer: dict[str, Any] = json.loads(framed["body"])
        return answer

    def _exactly(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = os.read(self.responses, size - len(data))
            assert chunk, "the worker died"
            data += chunk
        return data

    def call(self, function: str, *args: list[Any], limit: float = 2.0) -> dict[str, Any]:
        self.send({"function": function, "args": list(args), "kwargs": {}, "limit": limit})
        return self.receive()

    def close(self) -> None:
        self.process.kill()
        self.process.wait()
        os.close(self.requests)
        os.close(self.responses)


@pytest.fixture
def honest(tmp_path: Path) -> Iterator[Worker]:
    worker = Worker(tmp_path, "honest", HONEST)
    yield worker
    worker.close()


def test_answers_describe_values_by_type_and_structure(honest: Worker) -> None:
    assert honest.call("honest:five", ["int", "1"]) == {
        "returned": ["int", "5"],
        "args": [["int", "1"]],
        "kwargs": {},
    }
    answer = honest.call("honest:lists", ["str", "x"])["returned"]
    assert answer == [
        "list",
        [
            ["str", "x"],
            ["tuple", [["str", "x"], ["none"]]],
            ["dict", [[["str", "a"], ["list", [["float", "1.5"], ["float", "nan"]]]]]],
            ["set", [["int", "1"], ["int", "2"], ["int", "3"]]],
            ["bytes", "6162"],
            ["range", "2", "9", "3"],
        ],
    ]


def test_a_returned_iterator_is_drained_and_mutated_arguments_come_back(honest: Worker) -> None:
    assert honest.call("honest:numbers", ["int", "4"])["returned"] == [
        "iterated",
        [["int", "0"], ["int", "1"], ["int", "4"], ["int", "9"]],
        None,
    ]
    answer = honest.call("honest:sort_in_place", ["list", [["int", "3"], ["int", "1"]]])
    assert answer["returned"] == ["none"]
    assert answer["args"] == [["list", [["int", "1"], ["int", "3"]]]]


def test_a_call_past_its_limit_times_out_and_the_worker_goes_on(honest: Worker) -> None:
    assert honest.call("honest:forever", ["int", "1"], limit=0.2) == {"timed_out": True}
    assert honest.call("honest:five", ["int", "1"])["returned"] == ["int", "5"]
    assert honest.call("honest:missing")["unavailable"].startswith("AttributeError")


def test_a_program_cannot_pass_a_different_value_for_the_original_s(honest: Worker, tmp_path: Path) -> None:
    folder = tmp_path / "liar"
    folder.mkdir()
    liar = Worker(folder, "liar", LIAR)
    try:
        original = honest.call("honest:five", ["int", "1"])["returned"]
        lying = liar.call("liar:five", ["int", "1"])["returned"]
        subclass = liar.call("liar:sneaky", ["int", "1"])["returned"]
    finally:
        liar.close()
    assert original == ["int", "5"]
    assert lying == ["object", "liar.Five", []]
    assert subclass == ["object", "liar.Sneaky", [["value", ["int", "6"]]]]


POWERS = """
def square(x):
    return x * x


def cube(x):
    return x * x * x
"""

POWERS_TESTS = """
from powers import cube, square


def test_square():
    assert [square(n) for n in range(100)][-1] == 9801


def test_cube():
    assert cube(2) == 8
"""


def record(folder: Path, watch: list[str] | None, program: str = POWERS, tests: str = POWERS_TESTS,
           test_limit: float = 0.0, literals: int = 0) -> dict[str, Any]:  # fmt: skip
    """The recorder's output for the powers program's tests, run as gi runs it (less the sandbox)."""
    (folder / "powers.py").write_text(program)
    (folder / "test_powers.py").write_text(tests)
    (folder / "gi_oracle_worker.py").write_text(worker_source())
    (folder / "gi_pytest_limits.py").write_text(limits_source())
    (folder / "gi_oracle_recorder.py").write_text(recorder_source())
    plan = {"files": [str(folder / "powers.py")], "modules": ["powers"], "paths": ["test_powers.py"],
            "options": [], "listed": {}, "per_function": 5, "literal_per_function": literals, "literal_total": literals,
            "only": None, "watch": watch, "test_limit": test_limit, "call_limit": test_limit}  # fmt: skip
    output = folder / "calls.json"
    subprocess.run([sys.executable, "gi_oracle_recorder.py", str(output), json.dumps(plan)], cwd=folder,
                   env={**os.environ, "PYTHONPATH": str(folder)}, capture_output=True, check=True,
                   timeout=120)  # fmt: skip
    found: dict[str, Any] = json.loads(output.read_text())
    return found


def test_the_recording_hook_is_switched_off_once_the_watched_functions_have_their_calls(tmp_path: Path) -> None:
    """Python 3.11's profile hook slows every call the tests make; the oracle needs the calls of
    the functions it checks, so once those have theirs the tests run on without it."""
    (tmp_path / "all").mkdir()
    (tmp_path / "watched").mkdir()
    whole = record(tmp_path / "all", None)
    watched = record(tmp_path / "watched", ["powers:square"])
    assert whole["hook_to_the_end"] and not watched["hook_to_the_end"]
    assert whole["tests"] == watched["tests"] == {"passed": 2, "failed": 0}
    assert [call["args"] for call in watched["functions"]["powers:square"]["calls"]] == [
        [["int", str(n)]] for n in range(5)
    ]
    assert whole["functions"]["powers:cube"]["calls"] == [{"args": [["int", "2"]], "kwargs": {}}]
    assert watched["functions"]["powers:cube"]["calls"] == [], "cube runs after the hook is off"


def test_a_failing_test_that_hangs_on_the_buggy_original_fails_alone_and_the_rest_is_recorded(tmp_path: Path) -> None:
    """A repair's original may loop forever on a failing test (a binary search whose bound never
    moves): each test, and each literal call made again for the differential checks, has its own
    time limit, so the recording ends and keeps the other tests' calls and the failing test's
    reach."""
    stuck = (
        POWERS.replace("return x * x * x", "while True:\n        x = square(x) % 7")
        + "\n\ndef neg(x):\n    return -x\n"
    )
    later = "\n\ndef test_after_it():\n    from powers import neg\n\n    assert neg(1) == 1\n"
    found = record(tmp_path, None, program=stuck, tests=POWERS_TESTS + later, test_limit=1.0, literals=3)
    assert found["tests"] == {"passed": 1, "failed": 2}
    assert found["hook_to_the_end"]
    # The hook is still on after the limit: the failing test after it is recorded.
    assert found["failing_reach"] == ["powers:cube", "powers:neg", "powers:square"]
    assert found["functions"]["powers:cube"]["failing_calls"] == [0]
    assert found["functions"]["powers:neg"]["calls"] == [{"args": [["int", "1"]], "kwargs": {}}]
    # The differential checks' literal calls are made again under the limit: cube(2) hangs, no case.
    assert [case[1:] for case in found["cases"] if case[1] != "square"] == [["neg", "(1,)", "returns -1"]]
    assert ["square", "(0,)", "returns 0"] in [case[1:] for case in found["cases"]]
