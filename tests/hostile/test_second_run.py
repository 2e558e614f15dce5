"""The front's second run holds a member's returned values against the original's: the
original's learning run notes them (its audit), so a member returning what the original
returns (a Fraction, whose own `__eq__` decides the tests' checks) agrees, and one returning a
value equal to everything does not, even named after the original's type. Real evaluator,
real pytest and plugin, real sandbox."""

from __future__ import annotations

from pathlib import Path

from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.model.patch import Patch, Variant
from gi.model.program import Program

RATIO = "from fractions import Fraction\n\n\ndef ratio(a, b):\n    return Fraction(a, b) + 1\n"
TESTS = """\
from fractions import Fraction

from ratio import ratio


def test_half():
    assert ratio(1, 2) == Fraction(1, 2)


def test_third():
    assert ratio(1, 3) == Fraction(1, 3)
"""
EQUAL = """\
from fractions import Fraction


def ratio(a, b):
    make = type
    return make("Ledger", (Fraction,), {"_" * 2 + "eq" + "_" * 2: lambda self, other: True})(a, b)
"""
#: The same, named after the type the original returns.
SPOOF = EQUAL.replace(
    '{"_" * 2 + "eq"',
    '{"_" * 2 + "module" + "_" * 2: "fractions", "_" * 2 + "qualname" + "_" * 2: "Fraction", "_" * 2 + "eq"',
).replace('"Ledger"', '"Fraction"')


def test_a_member_returning_what_the_original_returns_agrees_and_a_forgery_does_not(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "ratio.py").write_text(RATIO)
    (tmp_path / "tests" / "test_ratio.py").write_text(TESTS)
    program = Program.load(tmp_path, ["ratio.py"], protected=["tests"])
    evaluator = Evaluator(program, EvaluationSettings(train=("tests",), timeout=60))
    evaluator.learn_canaries()
    assert evaluator.original_types.get("fractions.Fraction") == "Fraction.__eq__", evaluator.original_types
    searched = dict.fromkeys((f"tests/test_ratio.py::test_{name}" for name in ("half", "third")), "passed")
    honest = Variant(program, Patch(), {"ratio.py": RATIO.replace(" + 1", "")}, ())
    assert evaluator.second_run(honest, searched).agrees
    forged = evaluator.second_run(Variant(program, Patch(), {"ratio.py": EQUAL}, ()), searched)
    assert not forged.agrees and "Ledger" in forged.detail, forged.detail
    spoof = evaluator.second_run(Variant(program, Patch(), {"ratio.py": SPOOF}, ()), searched)
    assert not spoof.agrees and "fractions.Fraction (not its module's)" in spoof.detail, spoof.detail
