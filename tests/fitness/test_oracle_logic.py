"""The oracle's logic in gi's process: which functions a patch changes, the calls Hypothesis draws
from recorded ones, when two outcomes differ, the shrinking of a difference, and a difference
written as a pytest test that passes on the original and fails on the variant."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, Phase, find, settings

from gi.fitness.oracle.changes import changed_functions
from gi.fitness.oracle.inputs import FunctionProfile, UnmakeableError, calls
from gi.fitness.oracle.search import search_difference
from gi.fitness.oracle.values import Call, counterexample, crash_counterexample, crashes, differs, source

ORIGINAL = '''"""Helpers."""

LIMIT = 10


def clip(value):
    """Clip to LIMIT."""
    return min(value, LIMIT)


def total(values):
    return sum(clip(value) for value in values)


def unrelated(text):
    return text.upper()
'''

QUICK = settings(max_examples=300, database=None, deadline=None, suppress_health_check=list(HealthCheck),
                 phases=[Phase.generate, Phase.shrink])  # fmt: skip


def profile(key: str, *calls_made: list[list[object]]) -> FunctionProfile:
    """A function of one parameter, called as `calls_made` say."""
    return FunctionProfile.from_json(
        key,
        {
            "parameters": [{"name": "p0", "kind": "positional_or_keyword"}],
            "calls": [{"args": args, "kwargs": {}} for args in calls_made],
        },
    )


def test_a_patch_changes_the_functions_it_edits_and_those_that_use_them() -> None:
    modules = {"helpers.py": "helpers"}
    edited = ORIGINAL.replace("return min(value, LIMIT)", "return value")
    assert changed_functions({"helpers.py": ORIGINAL}, {"helpers.py": edited}, modules) == {
        "helpers:clip": "edited",
        "helpers:total": "uses clip",
    }
    # A repair whose failing tests reach clip is meant to change it, and total through it.
    assert changed_functions({"helpers.py": ORIGINAL}, {"helpers.py": edited}, modules, {"helpers:clip"}) == {}
    constant = ORIGINAL.replace("LIMIT = 10", "LIMIT = 11")
    assert set(changed_functions({"helpers.py": ORIGINAL}, {"helpers.py": constant}, modules)) == {
        "helpers:clip",
        "helpers:total",
    }
    cosmetic = ORIGINAL.replace('"""Clip to LIMIT."""', '"""Clip."""').replace("(value, LIMIT)", "( value,LIMIT )")
    assert changed_functions({"helpers.py": ORIGINAL}, {"helpers.py": cosmetic}, modules) == {}


def test_calls_are_drawn_beyond_the_recorded_ones() -> None:
    seen = profile("m:f", [["int", "7"]], [["int", "13"]], [["int", "97"]])
    drawn = calls(seen)
    even_beyond = find(drawn, lambda call: int(call.args[0][1]) > 100 and int(call.args[0][1]) % 2 == 0,
                       settings=QUICK, random=random.Random(0))  # fmt: skip
    assert int(even_beyond.args[0][1]) % 2 == 0
    texts = profile("m:g", [["list", [["str", "ab"]]]])
    longer = find(calls(texts), lambda call: len(call.args[0][1]) >= 3, settings=QUICK, random=random.Random(0))
    assert longer.args[0][0] == "list" and {item[0] for item in longer.args[0][1]} == {"str"}


def test_a_parameter_given_only_objects_cannot_be_made_unless_it_has_a_default() -> None:
    objects = profile("m:f", [["object", "m.Thing", []]])
    try:
        calls(objects)
    except UnmakeableError as error:
        assert "m.Thing" in str(error)
    else:
        raise AssertionError("calls of a function taking only objects were made")
    annotated = FunctionProfile.from_json(
        "m:g", {"parameters": [{"name": "n", "kind": "positional_or_keyword", "annotation": ["int"]}], "calls": []}
    )
    assert find(calls(annotated), lambda call: call.args[0][0] == "int", settings=QUICK).args[0][0] == "int"


def test_outcomes_differ_on_values_exceptions_arguments_and_time_but_not_on_dict_order() -> None:
    returned = {"returned": ["int", "1"], "args": [], "kwargs": {}}
    assert not differs(returned, dict(returned))
    assert differs(returned, {"returned": ["bool", True], "args": [], "kwargs": {}})
    assert differs(returned, {"raised": "builtins.AssertionError", "args": [], "kwargs": {}})
    assert differs(returned, {"timed_out": True})
    assert not differs({"timed_out": True}, returned), "what the original did in time is unknown"
    mutated = {"returned": ["none"], "args": [["list", [["int", "1"]]]], "kwargs": {}}
    assert differs(mutated, {**mutated, "args": [["list", []]]})
    one = ["dict", [[["str", "a"], ["int", "1"]], [["str", "b"], ["int", "2"]]]]
    other = ["dict", [[["str", "b"], ["int", "2"]], [["str", "a"], ["int", "1"]]]]
    assert not differs({"returned": one, "args": [], "kwargs": {}}, {"returned": other, "args": [], "kwargs": {}})


def test_a_difference_is_shrunk_to_the_smallest_call() -> None:
    def original(n: int) -> bool:
        if n < 17:
            return n in {2, 3, 5, 7, 11, 13}
        return all(n % d for d in range(2, n))

    def variant(n: int) -> bool:  # is_prime with its quick check shrunk to `n % 13`
        if n < 17:
            return n in {2, 3, 5, 7, 11, 13}
        if not n % 13:
            return False
        assert n & 1
        return all(n % d for d in range(3, n, 2))

    def outcome(function: object, call: Call) -> dict[str, object]:
        try:
            return {"returned": ["bool", function(int(call.args[0][1]))]}  # type: ignore[operator]
        except AssertionError:
            return {"raised": "builtins.AssertionError"}

    seen = profile("arith:is_prime", *([["int", str(n)]] for n in (7, 13, 97, 101, 9, 15, 91, 1)))
    for seed in range(3):
        found = search_difference(seen, lambda call: (outcome(original, call), outcome(variant, call)), seed=seed,
                                  deadline=time.monotonic() + 60)  # fmt: skip
        assert found.difference is not None
        assert found.difference.call.args == (["int", "18"],)


def test_a_counterexample_passes_on_the_original_and_fails_on_the_variant(tmp_path: Path) -> None:
    call = Call("store:add", (["list", [["int", "3"]]], ["int", "4"]))
    original = {"returned": ["int", "2"], "args": [["list", [["int", "3"], ["int", "4"]]], ["int", "4"]], "kwargs": {}}
    variant = {"returned": ["bool", True], "args": [["list", [["int", "3"]]], ["int", "4"]], "kwargs": {}}
    test = counterexample(call, ["items", "item"], original, variant, import_from="store")
    assert test is not None
    assert "def test_add_3_4():" in test and "items = [3]" in test
    for code, passes in (("def add(items, item):\n    items.append(item)\n    return len(items)\n", True),
                         ("def add(items, item):\n    return True\n", False)):  # fmt: skip
        folder = tmp_path / ("original" if passes else "variant")
        folder.mkdir()
        (folder / "store.py").write_text(code)
        (folder / "test_counterexample.py").write_text(test)
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "."], cwd=folder,
                             capture_output=True, text=True, check=False)  # fmt: skip
        assert (run.returncode == 0) is passes, run.stdout


def test_only_values_gi_can_write_become_source() -> None:
    assert source(["tuple", [["int", "1"]]]) == "(1,)"
    assert source(["float", "nan"]) == "float('nan')"
    assert source(["dict", [[["str", "k"], ["set", []]]]]) == "{'k': set()}"
    assert source(["object", "m.Thing", []]) is None


def test_a_crash_is_an_error_of_the_language_where_the_original_answered() -> None:
    returned = {"returned": ["int", "1"], "args": [], "kwargs": {}}
    refused = {"raised": "builtins.ValueError", "args": [], "kwargs": {}}
    crashed = {"raised": "builtins.IndexError", "args": [], "kwargs": {}}
    assert crashes(returned, crashed) and crashes(refused, crashed)
    assert not crashes(returned, refused), "a ValueError may be the repair's point: refusing a bad input"
    assert not crashes(returned, {"raised": "builtins.AssertionError"}), "a program's own check"
    assert not crashes(crashed, {"raised": "builtins.KeyError"}), "the original crashed there too"
    assert not crashes({"timed_out": True}, crashed) and not crashes({"unavailable": "x"}, crashed)
    assert not crashes(returned, {"returned": ["int", "2"]}), "a different result is not a crash"
    assert not crashes(returned, crashed, expected=frozenset({"builtins.IndexError"})), "what a failing test asks for"
    assert not crashes(returned, {"raised": "builtins.RecursionError"}), "how deep a call goes depends on the stack"
    stopped = {"returned": ["iterated", [["int", "1"]], ["raised", "builtins.ZeroDivisionError"]]}
    assert crashes({"returned": ["iterated", [["int", "1"]], None]}, stopped)


def test_a_crash_counterexample_calls_without_judging_the_result(tmp_path: Path) -> None:
    call = Call("walk:pairs", (["list", [["int", "0"]]],))
    given = {"returned": ["iterated", [["int", "0"]], None], "args": [["list", [["int", "0"]]]], "kwargs": {}}
    test = crash_counterexample(call, given, import_from="walk")
    assert test == "from walk import pairs\n\n\ndef test_pairs_0_does_not_crash():\n    list(pairs([0]))\n"
    refusing = {"raised": "builtins.ValueError", "args": [], "kwargs": {}}
    test = crash_counterexample(call, refusing, import_from="walk")
    assert test is not None and "with contextlib.suppress(ValueError):" in test
    for name, code, passes in (
        ("refuses", "def pairs(items):\n    raise ValueError\n", True),
        ("answers", "def pairs(items):\n    return items\n", True),  # the ValueError may have been the bug
        ("crashes", "def pairs(items):\n    return items[1]\n", False),
    ):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "walk.py").write_text(code)
        (folder / "test_counterexample.py").write_text(test)
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "."], cwd=folder,
                             capture_output=True, text=True, check=False)  # fmt: skip
        assert (run.returncode == 0) is passes, run.stdout
