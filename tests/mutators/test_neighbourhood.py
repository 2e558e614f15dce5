"""Every classic operator and fix template enumerates its edits: whatever `propose` returns at a
site is among what `neighbourhood` lists there, on real programs, with and without fault
localisation's weights."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from gi.model.edits import Edit
from gi.model.patch import Patch, apply
from gi.model.program import Program
from gi.model.sites import Location, SiteKind
from gi.mutators import OPERATORS, MutationContext
from gi.mutators.base import edits_at, operator_sites
from gi.mutators.llm import LLMOperator

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = [
    (REPO / "experiments" / "programs" / "grading", "grading.py"),
    (REPO / "experiments" / "programs" / "bsearch", "bsearch.py"),
    (REPO / "experiments" / "programs" / "windows", "windows.py"),
    (REPO / "benchmarks" / "repair_programs" / "ledger", "ledger.py"),
    (REPO / "benchmarks" / "repair_programs" / "words", "words.py"),
    (REPO / "benchmarks" / "repair_programs" / "intervals", "intervals.py"),
]
#: Proposals sampled per operator and program.
DRAWS = 150


def contexts(program: Program) -> list[MutationContext]:
    """No weights; and weights on some lines, with a floor elsewhere (as a repair run has them)."""
    file = program.files[0]
    lines = sorted({site.line for site in program.sites_of(SiteKind.STATEMENT)})
    weighted = {(file, line): 1.0 for line in lines[::3]}
    return [MutationContext().bind(program), MutationContext(line_weights=weighted, line_floor=0.05).bind(program)]


def by_code(program: Program, edit: Edit) -> tuple[object, ...]:
    """An edit with each location it copies from (not its target) as the code there: two copies
    of the same code make the same program."""
    return (
        type(edit),
        *(
            program.code(value) if isinstance(value, Location) and field.name != "target" else value
            for field in dataclasses.fields(edit)
            for value in [getattr(edit, field.name)]
        ),
    )


@pytest.fixture(scope="module")
def programs() -> list[Program]:
    return [Program.load(root, [module], protected=["tests", "holdout"]) for root, module in PROGRAMS]


@pytest.mark.parametrize("name", OPERATORS.names())
def test_what_propose_returns_is_in_the_neighbourhood(name: str, programs: list[Program]) -> None:
    operator = OPERATORS.get(name)
    proposed_somewhere = False
    for program in programs:
        original = program.tree_hash
        for context in contexts(program):
            sites = {site.location: site for site in operator_sites(operator, program, context)}
            listed: dict[Location, list[Edit]] = {}
            made_by: dict[Location, set[str]] = {}
            rng = np.random.default_rng(7)
            for _ in range(DRAWS):
                edit = operator.propose(program, Patch(), rng, context)
                if edit is None:
                    continue
                proposed_somewhere = True
                assert edit.target in sites, f"{name} proposed at {edit.target}, which it does not list"
                site = sites[edit.target]
                if site.location not in listed:
                    listed[site.location] = list(edits_at(operator, program, site, context))
                    assert len(listed[site.location]) == len(set(listed[site.location])), f"{name}: an edit twice"
                if edit in listed[site.location] or by_code(program, edit) in {
                    by_code(program, e) for e in listed[site.location]
                }:
                    continue
                # Another edit may make the same program (a copy of the same code from elsewhere).
                made = apply(program, Patch((edit,)))
                if made.syntax_error is None and made.tree_hash == original:
                    continue  # an edit that changes nothing is no neighbour
                if site.location not in made_by:
                    made_by[site.location] = {apply(program, Patch((e,))).tree_hash for e in listed[site.location]}
                assert made.tree_hash in made_by[site.location], f"{name}: {edit} is not in its neighbourhood"
    assert proposed_somewhere, f"{name} proposed nothing on the test programs"


def test_most_sites_listed_have_an_edit(programs: list[Program]) -> None:
    """A site is listed where the operator may edit; only those whose options are costly to
    work out (copies of expressions, guards, conditions) may turn out to have none there."""
    costly = {"expression_replace", "return_replace", "guard", "condition_extend"}
    for name in OPERATORS.names():
        operator = OPERATORS.get(name)
        for program in programs:
            context = MutationContext().bind(program)
            sites = operator_sites(operator, program, context)
            empty = [site for site in sites if next(edits_at(operator, program, site, context), None) is None]
            assert not empty or name in costly, (name, empty[0].location)


def test_the_neighbourhood_is_a_fixed_order(programs: list[Program]) -> None:
    program = programs[0]
    context = MutationContext().bind(program)
    for name in OPERATORS.names():
        operator = OPERATORS.get(name)
        for site in operator_sites(operator, program, context):
            assert list(edits_at(operator, program, site, context)) == list(edits_at(operator, program, site, context))


def test_an_operator_that_cannot_enumerate_lists_nothing(programs: list[Program]) -> None:
    """The model's operator samples replies: it has no neighbourhood to list."""
    assert not hasattr(LLMOperator, "neighbourhood")
    program = programs[0]
    context = MutationContext().bind(program)

    class Sampler:
        name = "sampler"
        description = "proposes, never lists"

        def propose(self, *args: object) -> None:
            return None

    assert operator_sites(Sampler(), program, context) == ()
    site = program.sites_of(SiteKind.STATEMENT)[0]
    assert list(edits_at(Sampler(), program, site, context)) == []


def test_the_context_filters_the_sites(programs: list[Program]) -> None:
    """A site inside an excluded function is never listed, as it is never chosen."""
    program = programs[0]
    excluded = MutationContext(excluded_functions=frozenset({"letter"})).bind(program)
    everything = MutationContext().bind(program)
    for name in OPERATORS.names():
        operator = OPERATORS.get(name)
        kept = operator_sites(operator, program, excluded)
        assert all(site.function != "letter" for site in kept), name
        assert set(kept) <= set(operator_sites(operator, program, everything)), name
