"""Measures keyed by what they depend on: the program, the patch, or the text."""

from __future__ import annotations

import json
import shutil
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gi.config import load_config
from gi.engine.measures import RunMeasures, program_measures, static_measures, variant_measures
from gi.fitness.measures import MEASURES, Basis, Measure
from gi.fitness.objectives import OBJECTIVES, Direction, Objective, UserFunction, measures_read, reference_point
from gi.model.edits import DeleteStatement, InsertStatement, ReplaceNumber, ReplaceStatement
from gi.model.guard import risky_names
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program, parse_quietly
from gi.model.sites import Location, SiteKind
from gi.run.experiment import run_experiment

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"

SOURCE = """\
def f(values):
    total = 0
    for value in values:
        total += value
    return total
"""


def test_two_patches_to_one_program_keep_their_own_size_and_diff(make_program: Callable[[str], Program]) -> None:
    program = make_program(SOURCE)
    statements = [site.location for site in program.sites_of(SiteKind.STATEMENT)]
    target: Location = statements[1]  # total = 0
    ingredient: Location = statements[-1]  # return total
    one = Patch((ReplaceStatement(target, ingredient),))
    two = Patch((DeleteStatement(target), InsertStatement(target, ingredient)))
    short, long = apply(program, one), apply(program, two)
    assert short.tree_hash == long.tree_hash, "both patches make the same program"
    assert variant_measures(short)["size"] == 1 and variant_measures(long)["size"] == 2
    assert program_measures(short) == program_measures(long)


def test_text_measures_follow_the_text_not_the_tree(make_program: Callable[[str], Program]) -> None:
    tidy = make_program(SOURCE)
    messy = make_program(SOURCE.replace("total = 0", "total=0  # start"))
    assert apply(tidy, Patch()).tree_hash == apply(messy, Patch()).tree_hash
    assert variant_measures(apply(messy, Patch()))["style"] > variant_measures(apply(tidy, Patch()))["style"]


WARNED = r"""
def f(x):
    pattern = "\d+"
    if x is 1:
        return pattern
    return x * 2
"""


def test_code_the_compiler_warns_about_is_judged_without_a_warning(make_program: Callable[[str], Program]) -> None:
    """'"is" with a literal' and an invalid escape are legal code the compiler warns about. gi
    parses, compiles and measures such a variant in its own process: the warnings must not reach
    the user's terminal, and under `python -W error` they must not make it a syntax error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        program = make_program(WARNED)
        two = program.sites_of(SiteKind.NUMBER)[-1].location  # the 2 of x * 2
        variant = apply(program, Patch((ReplaceNumber(two, "3"),)))
        assert variant.syntax_error is None
        assert variant.tree_hash != program.tree_hash
        assert program_measures(variant)["complexity"] == 2
        assert variant_measures(variant)["size"] == 1
        assert risky_names('import gc\npattern = "\\d+"\n') == {"import gc"}, "the guard still reads it"
    statements = [site.location for site in program.sites_of(SiteKind.STATEMENT)]
    broken = apply(program, Patch((InsertStatement(statements[0], statements[-1]),)))  # return before the def
    assert broken.syntax_error == "mod.py:2: 'return' outside function"


def test_the_measures_a_run_reads_are_its_objectives_and_what_their_bounds_read() -> None:
    objectives = [OBJECTIVES.get(name) for name in ("failed_tests", "complexity", "size")]
    assert measures_read(objectives) == {"failed_tests", "complexity", "size"}
    # diff_lines' worst value worth keeping is twice the original's lines, and one.
    assert measures_read([OBJECTIVES.get("diff_lines")]) == {"diff_lines", "source_lines"}


def test_only_the_measures_named_are_taken(make_program: Callable[[str], Program]) -> None:
    variant = apply(make_program(SOURCE), Patch())
    assert set(static_measures(variant, names={"complexity", "size"})) == {"complexity", "size"}
    assert set(variant_measures(variant, {"complexity", "size"})) == {"size"}, "complexity is the program's"
    every = static_measures(variant)
    assert {"style", "maintainability", "halstead_volume", "source_lines"} <= set(every)
    assert static_measures(variant, names={"style"}) == {"style": every["style"]}


def _grading_run(tmp_path: Path, objectives: list[str]) -> dict[str, Any]:
    """The grading example at 4 x 1 on these objectives: its summary and its store's evaluations."""
    program = tmp_path / "grading"
    shutil.copytree(EXPERIMENTS / "programs" / "grading", program)
    config = load_config(EXPERIMENTS / "grading.toml")
    config = config.model_copy(
        update={
            "experiment": config.experiment.model_copy(update={"output": tmp_path / "runs"}),
            "program": config.program.model_copy(update={"root": program}),
            "search": config.search.model_copy(update={"population": 4, "generations": 1}),
            "objectives": config.objectives.model_copy(update={"minimize": objectives}),
        }
    )
    result = run_experiment(config)
    lines = (result.folder / "evaluations.jsonl").read_text(encoding="utf-8").splitlines()
    return {"summary": result.summary, "evaluations": [json.loads(line) for line in lines]}


def test_a_run_takes_no_measure_its_objectives_do_not_read(tmp_path: Path) -> None:
    """pycodestyle and radon's maintainability index cost a run on "complexity" most of gi's
    own time a variant (toolz: 0.25 s of 0.5 s a variant, docs/architecture.md): a run takes
    only the measures its objectives read."""
    run = _grading_run(tmp_path / "complexity", ["failed_tests", "complexity", "size"])
    assert len(run["evaluations"]) > 1
    for evaluation in run["evaluations"]:
        if evaluation["status"] == "ok":
            assert {"failed_tests", "complexity"} <= set(evaluation["measures"])
            assert not {"style", "maintainability", "halstead_volume", "diff_lines"} & set(evaluation["measures"])
    # diff_lines' bound reads the original's lines: taken in such a run, so its worst value worth
    # keeping is twice grading.py's lines and one, not the 3 a missing count would give.
    text = (EXPERIMENTS / "programs" / "grading" / "grading.py").read_text(encoding="utf-8")
    run = _grading_run(tmp_path / "diff", ["failed_tests", "diff_lines"])
    baseline = run["summary"]["baseline"]["measures"]
    assert baseline["source_lines"] == len(text.splitlines()) + 1  # the line after the last newline
    [reference] = reference_point([OBJECTIVES.get("diff_lines")], baseline, test_count=1, max_edits=1)
    assert reference == 2 * (len(text.splitlines()) + 1) + 1


class ParseRace:
    """A measure from outside gi that, while it runs, has another thread parse as gi's breeding
    thread does, and records whether that parse had to wait for it."""

    def __init__(self) -> None:
        self.parse_waited: list[bool] = []
        self.threads: list[threading.Thread] = []

    def __call__(self, variant: Variant) -> float:
        breeding = threading.Thread(target=parse_quietly, args=(SOURCE,))
        breeding.start()
        breeding.join(timeout=0.5)
        self.parse_waited.append(breeding.is_alive())
        self.threads.append(breeding)
        return 1.0


@pytest.mark.parametrize("path", ["registered measure", "run's own measure", "user's function"])
def test_a_measure_from_outside_gi_never_builds_a_syntax_tree_beside_another_thread(
    make_program: Callable[[str], Program], path: str
) -> None:
    # On CPython 3.11 two threads building syntax trees at once may fail with "SystemError: AST
    # constructor recursion depth mismatch" (CPython issue 106905); a plugin's measure that
    # calls ast.parse while breeding parses in its thread made a run fail as gi's bug.
    variant = apply(make_program(SOURCE), Patch())
    race = ParseRace()
    measure = Measure("parse_race", Basis.PROGRAM, "parses while another thread parses", race)
    if path == "registered measure":
        MEASURES.add("parse_race", measure)
        try:
            assert static_measures(variant, names={"parse_race"}) == {"parse_race": 1.0}
        finally:
            MEASURES.remove("parse_race")
    elif path == "run's own measure":
        objective = Objective("parse_race", Direction.MINIMIZE, "parses", measure)
        assert RunMeasures([objective])(variant) == {"parse_race": 1.0}
    else:
        assert UserFunction("tests:parse_race", race)(variant) == 1.0
    for thread in race.threads:
        thread.join()
    assert race.parse_waited == [True], "the other thread parsed while the measure ran"
