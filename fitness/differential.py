"""Differential held-out checks: the editable code's public functions, called on the inputs
the training tests give them (and any listed in the config), must return what the
original's return.

On the original, `record_cases` runs the training tests under a profile hook that notes every
call of a public top-level function of the editable files whose arguments are literals (they
survive `repr` and `ast.literal_eval`), then calls each function again on each distinct input
and keeps repr() of the result, or the exception's type. `checks_module` turns the cases into a
pytest file that the engine runs with the held-out tests, so a variant is judged by the same
signed test report, and the same definition of overfitting, as any held-out test.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence

from gi.model.results import CommandRunner

#: Where the generated checks go in a held-out copy of the program (relative to its root).
TEST_FILE = "gi_differential/test_gi_differential.py"
#: Distinct inputs kept per function, and in all: the first ones the training tests use.
PER_FUNCTION = 20
TOTAL = 500

RECORDER_NAME = "gi_differential_recorder.py"
OUTPUT_NAME = "gi_differential_cases.json"

RECORDER = r"""
import ast, importlib, json, os, sys, types

out, files, paths, listed, per_function, total = sys.argv[1:7]
files = {os.path.realpath(file) for file in json.loads(files)}
listed = json.loads(listed)
per_function, total = int(per_function), int(total)
calls = {}


def key_of(frame):
    code = frame.f_code
    if code.co_name.startswith("_") or os.path.realpath(code.co_filename) not in files:
        return None
    function = frame.f_globals.get(code.co_name)
    if not isinstance(function, types.FunctionType) or function.__code__ is not code:
        return None  # nested functions and methods are not called from outside
    if code.co_flags & 0x0C or code.co_kwonlyargcount or frame.f_globals.get("__name__") == "__main__":
        return None  # *args, **kwargs and keyword-only arguments: not recorded
    return frame.f_globals["__name__"] + ":" + code.co_name


def literal(arguments):
    try:
        text = repr(tuple(arguments))
        return text if ast.literal_eval(text) == tuple(arguments) else None
    except Exception:
        return None


def hook(frame, event, arg):
    if event != "call":
        return
    key = key_of(frame)
    if key is None:
        return
    names = frame.f_code.co_varnames[: frame.f_code.co_argcount]
    text = literal([frame.f_locals[name] for name in names])
    seen = calls.setdefault(key, [])
    if text is not None and text not in seen and len(seen) < per_function:
        seen.append(text)


import pytest

sys.setprofile(hook)
try:
    pytest.main(["-q", "-p", "no:cacheprovider", *json.loads(paths)])
finally:
    sys.setprofile(None)
for key, inputs in listed.items():
    seen = calls.setdefault(key, [])
    seen += [text for text in (literal(arguments) for arguments in inputs) if text is not None and text not in seen]
cases = []
for key in sorted(calls):
    module, _, name = key.partition(":")
    function = getattr(importlib.import_module(module), name)
    for text in calls[key]:
        try:
            result = "returns " + repr(function(*ast.literal_eval(text)))
        except Exception as error:
            result = "raises " + type(error).__name__
        cases.append([module, name, text, result])
with open(out, "w", encoding="utf-8") as stream:
    json.dump(cases[:total], stream)
"""

TEMPLATE = '''"""Differential checks gi generated: each public function, on an input the training tests
gave it, must return what the original returned (repr), or raise what it raised."""

import ast
import importlib

import pytest

CASES = {cases!r}


@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{{c[1]}}-{{i}}" for i, c in enumerate(CASES)])
def test_same_result_as_the_original(case):
    module, name, arguments, expected = CASES[case]
    function = getattr(importlib.import_module(module), name)
    try:
        result = "returns " + repr(function(*ast.literal_eval(arguments)))
    except Exception as error:
        result = "raises " + type(error).__name__
    assert result == expected, f"{{name}}{{arguments}}"
'''


class DifferentialError(Exception):
    """The original's calls could not be recorded."""


def record_cases(
    train: Sequence[str],
    files: Sequence[str],
    listed: Mapping[str, Sequence[Sequence[object]]],
    *,
    runner: CommandRunner,
    timeout: float,
) -> list[list[str]]:
    """[module, function, repr(arguments), result] for each distinct literal input the training
    tests give the public functions of `files`, and each input `listed` ("module:function" ->
    argument lists), with the original's result; run in the runner's copy of the original."""
    script = runner.install_tool(RECORDER_NAME, RECORDER)
    runner.clear_output(OUTPUT_NAME)
    paths = [str(runner.workdir / file) for file in files]
    inputs = json.dumps({key: [list(arguments) for arguments in calls] for key, calls in listed.items()})
    output = str(runner.outputs / OUTPUT_NAME)
    command = [sys.executable, str(script), output, json.dumps(paths), json.dumps(list(train)), inputs,
               str(PER_FUNCTION), str(TOTAL)]  # fmt: skip
    process = runner(command, timeout=timeout, env={"PYTHONPATH": str(runner.workdir)})
    data = runner.read_output(OUTPUT_NAME)
    if data is None:
        tail = (process.stderr or process.stdout).strip().splitlines()[-1:] or ["no output"]
        raise DifferentialError(f"recording the training tests' calls failed: {tail[0]}")
    cases: list[list[str]] = json.loads(data)
    return cases


def checks_module(cases: Sequence[Sequence[str]]) -> str:
    """The pytest file of the differential checks."""
    return TEMPLATE.format(cases=[list(case) for case in cases])
