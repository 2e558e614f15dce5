"""Each expression operator and fix template repairs a bug no classic operator repairs in one edit.

One small program per operator, with a one-line bug and its tests. The operator, drawing
sites by fault localisation (the buggy line weighs most), proposes the fix; the fixed
variant passes the real tests in a real pytest run and the original fails them. Every
distinct one-edit variant the classic operators propose, drawing as often with the same
weights, is run against the same tests, and none passes: no classic operator repairs the
bug in one edit, neither by the fix nor by another program. (Those runs carry one variant of
every bug at once, each in its own module: twelve checks for the price of one pytest run.)
The claim is about the classic operators (and, for return_replace, the two new operators that
could reach a returned value another way), not about every other new operator. `sibling_update` proposes what a classic
`statement_copy` could also propose, so its case compares rates.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from textwrap import dedent
from typing import Any

import numpy as np
import pytest

from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.model.edits import Edit
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.model.results import Evaluation
from gi.mutators import OPERATORS, MutationContext, names, templates

DRAWS = 100
#: Proposals of each rival operator whose distinct variants run the bug's real tests.
RIVAL_DRAWS = 40
#: The operators gi had before the expression operators and fix templates.
CLASSIC = sorted(
    name
    for name in OPERATORS.names()
    if type(OPERATORS.get(name)).__module__ not in (names.__name__, templates.__name__)
)


@dataclass(frozen=True)
class Bug:
    source: str
    fixed: str
    tests: str


BUGS = {
    "name_replace": Bug(
        dedent("""\
        def total_cost(items):
            total = 0
            for price, cost in items:
                total += price
            return total
        """),
        dedent("""\
        def total_cost(items):
            total = 0
            for price, cost in items:
                total += cost
            return total
        """),
        dedent("""\
        def test_costs_add_up():
            assert total_cost([(5, 2), (7, 3)]) == 5
        """),
    ),
    "argument_swap": Bug(
        dedent("""\
        def minutes(seconds):
            return divmod(60, seconds)
        """),
        dedent("""\
        def minutes(seconds):
            return divmod(seconds, 60)
        """),
        dedent("""\
        def test_minutes_and_seconds():
            assert minutes(130) == (2, 10)
        """),
    ),
    "expression_replace": Bug(
        dedent("""\
        def remaining(width, height, used):
            if used > width * height:
                return 0
            return width - used
        """),
        dedent("""\
        def remaining(width, height, used):
            if used > width * height:
                return 0
            return width * height - used
        """),
        dedent("""\
        def test_what_is_left():
            assert remaining(3, 4, 5) == 7
            assert remaining(3, 4, 20) == 0
        """),
    ),
    "integer_offset": Bug(
        dedent("""\
        def take_through(items, n):
            return items[:n]
        """),
        dedent("""\
        def take_through(items, n):
            return items[:n + 1]
        """),
        dedent("""\
        def test_up_to_and_including():
            assert take_through([1, 2, 3, 4], 1) == [1, 2]
        """),
    ),
    "call_replace": Bug(
        dedent("""\
        def highest(scores):
            return min(scores)
        """),
        dedent("""\
        def highest(scores):
            return max(scores)
        """),
        dedent("""\
        def test_highest():
            assert highest([3, 9, 4]) == 9
        """),
    ),
    "negate": Bug(
        dedent("""\
        def evens(values):
            kept = []
            for value in values:
                if value % 2:
                    kept.append(value)
            return kept
        """),
        dedent("""\
        def evens(values):
            kept = []
            for value in values:
                if not value % 2:
                    kept.append(value)
            return kept
        """),
        dedent("""\
        def test_evens():
            assert evens([1, 2, 3, 4]) == [2, 4]
        """),
    ),
    # A wrong value returned: `key` where None was meant. The fix, None, is a value the program
    # returns elsewhere, but no name (name_replace) and of another kind than `key`
    # (expression_replace copies values for values); the one-line `if` holds no statement a
    # classic operator could replace.
    "return_replace": Bug(
        dedent("""\
        def lookup(table, key):
            if key in table: return table[key]
            return None


        def checked(table, key):
            if key not in table: return key
            return table[key]
        """),
        dedent("""\
        def lookup(table, key):
            if key in table: return table[key]
            return None


        def checked(table, key):
            if key not in table: return None
            return table[key]
        """),
        dedent("""\
        def test_checked():
            assert checked({'a': 1}, 'a') == 1
            assert checked({'a': 1, 'b': 2}, 'b') == 2
            assert checked({'a': 1}, 'b') is None
            assert checked({}, 'a') is None
        """),
    ),
    "clamp": Bug(
        dedent("""\
        def withdraw(balance, amount):
            return balance - amount
        """),
        dedent("""\
        def withdraw(balance, amount):
            return max(0, balance - amount)
        """),
        dedent("""\
        def test_never_below_zero():
            assert withdraw(10, 3) == 7
            assert withdraw(3, 10) == 0
        """),
    ),
    "guard": Bug(
        dedent("""\
        def first_word(text):
            words = text.split()
            return words[0]
        """),
        dedent("""\
        def first_word(text):
            words = text.split()
            if not words:
                return None
            return words[0]
        """),
        dedent("""\
        def test_first_word():
            assert first_word('a b') == 'a'
            assert first_word('') is None
        """),
    ),
    "condition_drop": Bug(
        dedent("""\
        def weekend(day, holiday):
            return day >= 5 and holiday
        """),
        dedent("""\
        def weekend(day, holiday):
            return day >= 5
        """),
        dedent("""\
        def test_weekend():
            assert weekend(6, False) is True
            assert weekend(5, False) is True
            assert weekend(6, True) is True
            assert weekend(5, True) is True
            assert weekend(4, False) is False
            assert weekend(2, True) is False
            assert weekend(0, True) is False
        """),
    ),
    "condition_extend": Bug(
        dedent("""\
        def ship(paid, free, log):
            if free:
                log.append('free')
            if paid:
                log.append('shipped')
            return log
        """),
        dedent("""\
        def ship(paid, free, log):
            if free:
                log.append('free')
            if paid or free:
                log.append('shipped')
            return log
        """),
        dedent("""\
        def test_ship():
            assert ship(True, False, []) == ['shipped']
            assert ship(False, True, []) == ['free', 'shipped']
            assert ship(True, True, []) == ['free', 'shipped']
            assert ship(False, False, []) == []
        """),
    ),
    "sibling_update": Bug(
        dedent("""\
        def tally(words):
            counts = {}
            total = 0
            longest = ''
            for word in words:
                word = word.lower()
                if len(word) > len(longest):
                    longest = word
                if word in counts:
                    counts[word] += 1
                    total += 1
                else:
                    counts[word] = 1
            return counts, total, longest
        """),
        dedent("""\
        def tally(words):
            counts = {}
            total = 0
            longest = ''
            for word in words:
                word = word.lower()
                if len(word) > len(longest):
                    longest = word
                if word in counts:
                    counts[word] += 1
                    total += 1
                else:
                    total += 1
                    counts[word] = 1
            return counts, total, longest
        """),
        dedent("""\
        def test_tally():
            assert tally(['a', 'B', 'b']) == ({'a': 1, 'b': 2}, 3, 'a')
        """),
    ),
}


def test_every_new_operator_has_a_repair_case() -> None:
    assert set(BUGS) == set(OPERATORS.names()) - set(CLASSIC)


#: The head of each bug's test file. A module that raises on import fails its tests, in their
#: setup, rather than leaving no test collected: the batched check (`_passing_together`) reads
#: that as a failure at once, where a file that collects nothing would be run again alone.
IMPORTING = """\
import pytest

try:
    from {module} import *
except Exception as error:
    IMPORT_ERROR: Exception | None = error
else:
    IMPORT_ERROR = None


@pytest.fixture(autouse=True)
def _imported():
    if IMPORT_ERROR is not None:
        pytest.fail(f"{module}.py does not import: {{IMPORT_ERROR!r}}")


"""


@pytest.fixture(scope="module")
def bugs(tmp_path_factory: pytest.TempPathFactory) -> Program:
    """Every bug in one program: module `<operator>.py`, tested by `tests/test_<operator>.py`."""
    folder = tmp_path_factory.mktemp("bugs")
    (folder / "tests").mkdir()
    # A module that does not import stops no other bug's tests (see _passing_together).
    (folder / "pytest.ini").write_text("[pytest]\naddopts = --continue-on-collection-errors\n")
    for name, bug in BUGS.items():
        (folder / f"{name}.py").write_text(bug.source)
        (folder / "tests" / f"test_{name}.py").write_text(IMPORTING.format(module=name) + bug.tests)
    return Program.load(folder, ["*.py"], protected=["tests"])


def _context(program: Program, name: str) -> MutationContext:
    """Fault localisation as the search would have it: the buggy lines weigh 1, the other
    lines of the bug's module 0.1, other modules nothing."""
    bug = BUGS[name]
    lines = difflib.SequenceMatcher(None, bug.source.splitlines(), bug.fixed.splitlines()).get_opcodes()
    buggy = {
        line + 1 for tag, first, last, _, _ in lines if tag != "equal" for line in range(first, max(last, first + 1))
    }
    weights = {(f"{name}.py", line + 1): 0.1 for line in range(len(bug.source.splitlines()))}
    weights |= {(f"{name}.py", line): 1.0 for line in buggy}
    return MutationContext(line_weights=weights).bind(program)


def _fixes(program: Program, operator: str, name: str) -> list[Edit]:
    """The distinct edits among `DRAWS` proposals of `operator` that make bug `name`'s fix."""
    fixed = Program(program.root, {**program.sources, f"{name}.py": BUGS[name].fixed}).tree_hash
    rng = np.random.default_rng(0)
    context = _context(program, name)
    seen: set[Edit] = set()
    for _ in range(DRAWS):
        edit = OPERATORS.get(operator).propose(program, Patch(), rng, context)
        if edit is not None:
            seen.add(edit)
    return sorted((edit for edit in seen if apply(program, Patch((edit,))).tree_hash == fixed), key=str)


#: Besides the classic operators, the new operators that must not repair a case in one edit
#: either: the ones that could reach its fix by another road.
RIVALS = {
    "return_replace": ("name_replace", "expression_replace"),
}


def _variants(
    program: Program, operators: list[str], name: str, draws: int = RIVAL_DRAWS
) -> dict[str, tuple[str, Variant]]:
    """The distinct programs (by tree hash) that `draws` proposals of each operator make on
    bug `name`'s program with its fault localisation, each with an operator that made it."""
    context = _context(program, name)
    found: dict[str, tuple[str, Variant]] = {}
    for operator in operators:
        rng = np.random.default_rng(0)
        for _ in range(draws):
            edit = OPERATORS.get(operator).propose(program, Patch(), rng, context)
            if edit is not None:
                variant = apply(program, Patch((edit,)))
                if variant.syntax_error is None and variant.changed_files:
                    found.setdefault(variant.tree_hash, (operator, variant))
    return found


def _passes(evaluation: Evaluation) -> bool:
    """Whether a real test run passed every test it ran, and ran some."""
    return (
        evaluation.ok and evaluation.measures.get("failed_tests") == 0 and bool(evaluation.measures.get("test_count"))
    )


def _checking(program: Program, tests: str = "tests") -> Evaluator:
    return Evaluator(program, EvaluationSettings((tests,), timeout=120, test_timeout=5, workers=2, engine="warm"))


def _passing(program: Program, name: str, variants: dict[str, tuple[str, Variant]]) -> dict[str, str]:
    """Of `variants`, those that pass every test of bug `name` in a real test run: tree hash
    -> the operator that made it, and its diff."""
    evaluator = _checking(program, f"tests/test_{name}.py")
    try:
        evaluations = evaluator.evaluate_many([variant for _, variant in variants.values()])
    finally:
        evaluator.close()
    return {
        key: f"{operator}: {variant.diff()}"
        for (key, (operator, variant)), evaluation in zip(variants.items(), evaluations, strict=True)
        if _passes(evaluation)
    }


@pytest.mark.parametrize("name", sorted(BUGS))
def test_the_new_operator_proposes_the_repair(name: str, bugs: Program) -> None:
    assert _fixes(bugs, name, name), f"{name} never proposed the fix in {DRAWS} draws"


def _outcomes_of(evaluation: Evaluation, name: str) -> set[str]:
    """The outcomes of bug `name`'s tests in a run of the whole suite."""
    return {outcome for test, outcome in evaluation.tests.items() if test.startswith(f"tests/test_{name}.py::")}


def _passing_together(program: Program, cases: dict[str, dict[str, tuple[str, Variant]]]) -> dict[str, dict[str, str]]:
    """`_passing` for every bug at once: each bug's variants change its own module only, and its
    tests import only that module, so one real test run of a program that carries one variant of
    each bug's module checks them all. A module that raises on import fails only its own tests
    (`IMPORTING`; one that stops the interpreter leaves its file uncollected, and the program's
    pytest.ini says --continue-on-collection-errors). A run whose outcomes cannot be read bug by
    bug is never taken as a failure: no tests of the bug, tests gi reads as not run, or a run
    that timed out or crashed as a whole; those variants run again one at a time."""
    queues = {name: list(variants.items()) for name, variants in cases.items()}
    rounds = [
        {name: queue[index] for name, queue in queues.items() if index < len(queue)}
        for index in range(max(map(len, queues.values())))
    ]
    combined = [
        Variant(
            program,
            Patch(),
            {**program.sources, **{f"{name}.py": v.sources[f"{name}.py"] for name, (_, (_, v)) in r.items()}},
            (),
        )
        for r in rounds
    ]
    passing: dict[str, dict[str, str]] = {name: {} for name in cases}
    alone: list[tuple[str, str, str, Variant]] = []
    evaluator = _checking(program)
    try:
        for members, evaluation in zip(rounds, evaluator.evaluate_many(combined), strict=True):
            for name, (key, (operator, variant)) in members.items():
                outcomes = _outcomes_of(evaluation, name)
                if not evaluation.ok or not outcomes or "not_run" in outcomes:
                    alone.append((name, key, operator, variant))
                elif outcomes == {"passed"}:
                    passing[name][key] = f"{operator}: {variant.diff()}"
        # Alone, beside the other bugs' original modules (which import: their bugs are in what
        # they compute), a variant whose module stops the run or which hangs fails its tests.
        for (name, key, operator, variant), evaluation in zip(
            alone, evaluator.evaluate_many([variant for *_, variant in alone]), strict=True
        ):
            outcomes = _outcomes_of(evaluation, name)
            if evaluation.ok and outcomes == {"passed"}:
                passing[name][key] = f"{operator}: {variant.diff()}"
    finally:
        evaluator.close()
    return passing


@pytest.fixture(scope="module")
def classic_variants(bugs: Program) -> dict[str, dict[str, tuple[str, Variant]]]:
    """Each bug's distinct one-edit variants from the classic operators and its rivals."""
    return {name: _variants(bugs, [*CLASSIC, *RIVALS.get(name, ())], name) for name in sorted(BUGS)}


@pytest.fixture(scope="module")
def classic_passing(
    bugs: Program, classic_variants: dict[str, dict[str, tuple[str, Variant]]]
) -> dict[str, dict[str, str]]:
    return _passing_together(bugs, classic_variants)


@pytest.mark.parametrize("name", sorted(BUGS))
def test_no_classic_operator_repairs_it_in_one_edit(
    name: str,
    bugs: Program,
    classic_variants: dict[str, dict[str, tuple[str, Variant]]],
    classic_passing: dict[str, dict[str, str]],
) -> None:
    """Every distinct one-edit variant that the classic operators (and the case's rivals)
    propose in RIVAL_DRAWS draws each with the same weights fails the bug's real tests: none is a
    repair, whether it is the fix's program or another that passes. sibling_update's fix is
    also a classic statement_copy (it copies a statement): there only that copy may pass, and
    the template proposes it far more often."""
    assert len(classic_variants[name]) >= 5, f"only {len(classic_variants[name])} variants to check"
    passing = classic_passing[name]
    if name == "sibling_update":
        fixed = Program(bugs.root, {**bugs.sources, f"{name}.py": BUGS[name].fixed}).tree_hash
        assert set(passing) <= {fixed}, passing
        rng = np.random.default_rng(0)
        context = _context(bugs, name)
        repairs = _fixes(bugs, name, name)
        hits = {
            operator: sum(OPERATORS.get(operator).propose(bugs, Patch(), rng, context) in repairs for _ in range(DRAWS))
            for operator in (name, "statement_copy")
        }
        assert hits[name] >= 4 * max(hits["statement_copy"], 1), hits
    else:
        assert not passing, passing


def test_checking_the_bugs_together_finds_what_checking_each_alone_finds(
    bugs: Program, classic_variants: dict[str, dict[str, tuple[str, Variant]]]
) -> None:
    """The batched check above against each bug checked on its own: the same passing variants.
    Each case leads with its fix (so there is something to find), and guard's with two modules
    that do not import before it: one raising (its tests fail) and one that raises SystemExit,
    which leaves its test file uncollected and is checked again alone; the first two combined
    runs carry them beside the other two fixes."""
    names = ["argument_swap", "guard", "negate"]
    cases: dict[str, dict[str, tuple[str, Variant]]] = {}
    for name in names:
        fixed = apply(bugs, Patch((_fixes(bugs, name, name)[0],)))
        cases[name] = {fixed.tree_hash: (name, fixed), **dict(list(classic_variants[name].items())[:8])}
    broken = [
        Variant(bugs, Patch(), {**bugs.sources, "guard.py": head + bugs.sources["guard.py"]}, ())
        for head in ("import not_installed_anywhere\n", "raise SystemExit(3)\n")
    ]
    cases["guard"] = {**{variant.tree_hash: ("broken", variant) for variant in broken}, **cases["guard"]}
    together = _passing_together(bugs, cases)
    for name in names:
        alone = _passing(bugs, name, cases[name])
        assert together[name] == alone, name
        fix_key = next(key for key, (operator, _) in cases[name].items() if operator == name)
        assert fix_key in alone, f"{name}'s fix fails its tests"
        assert not {variant.tree_hash for variant in broken} & set(alone)


def test_what_passes_condition_drops_tests_is_the_fix(bugs: Program) -> None:
    """Seven asserts pin `weekend` down: of all the new operators' one-edit variants, those
    that pass its real tests (expression_replace's copy of `day >= 5`, condition_extend's
    `day >= 5 and (holiday or day >= 5)`) compute what the fix computes on every input."""
    name = "condition_drop"
    variants = _variants(bugs, [o for o in OPERATORS.names() if o not in CLASSIC], name, DRAWS)
    passing = _passing(bugs, name, variants)
    assert passing, "the fix itself passes"
    for key in passing:
        namespace: dict[str, Any] = {}
        exec(variants[key][1].sources[f"{name}.py"], namespace)  # the variant under test
        wrong = [
            (day, holiday)
            for day in range(-1, 9)
            for holiday in (False, True)
            if namespace["weekend"](day, holiday) != (day >= 5)
        ]
        assert not wrong, (passing[key], wrong)


def test_the_repairs_pass_the_real_tests(bugs: Program) -> None:
    """One real test run of the original and one of all the repairs at once (each in a
    module of its own): every bug's test fails before and passes after."""
    patch = Patch(tuple(_fixes(bugs, name, name)[0] for name in sorted(BUGS)))
    evaluator = Evaluator(bugs, EvaluationSettings(("tests",), timeout=60, test_timeout=10, workers=2))
    try:
        before, after = evaluator.evaluate_many([apply(bugs, Patch()), apply(bugs, patch)])
    finally:
        evaluator.close()
    for name in BUGS:
        outcomes = {test: outcome for test, outcome in before.tests.items() if f"test_{name}.py" in test}
        repaired = {test: outcome for test, outcome in after.tests.items() if f"test_{name}.py" in test}
        assert outcomes and set(outcomes.values()) == {"failed"}, (name, before.detail)
        assert repaired.keys() == outcomes.keys() and set(repaired.values()) == {"passed"}, (name, after.detail)
