"""Differential held-out checks: the editable code's public functions, called on the inputs
the training tests give them (and any listed in the config), must return what the
original's return.

On the original, the recorder the behaviour oracle shares (`gi.fitness.oracle.record`) runs the
training tests under a hook that notes, among others, every call of a public top-level function
of the editable files whose positional arguments are literals (they survive `repr` and
`ast.literal_eval`; the first 20 distinct inputs of each function, 500 in all), then calls each
function again on each distinct input and keeps repr() of the result, or the exception's type.
`checks_module` turns these cases into a pytest file that the engine runs with the held-out
tests, so a variant is judged by the same signed test report, and the same definition of
overfitting, as any held-out test.
"""

from __future__ import annotations

from collections.abc import Sequence

#: Where the generated checks go in a held-out copy of the program (relative to its root).
TEST_FILE = "gi_differential/test_gi_differential.py"

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


def checks_module(cases: Sequence[Sequence[str]]) -> str:
    """The pytest file of the differential checks."""
    return TEMPLATE.format(cases=[list(case) for case in cases])
