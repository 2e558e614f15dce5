"""Control-flow insertion: `break`, `continue` or `return` before a statement, where legal."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from gi.model.edits import Edit, InsertControl
from gi.model.patch import Patch
from gi.model.program import Program
from gi.model.sites import Site
from gi.mutators.base import BaseOperator, MutationContext, allowed_sites, choose_site, register, statement_sites


def legal_keywords(site: Site) -> tuple[str, ...]:
    """The control keywords the syntax allows before this statement."""
    context = site.context
    assert context is not None
    if context.fixed_position:
        return ()
    return (("break", "continue") if context.in_loop else ()) + (("return",) if context.in_function else ())


@dataclass(frozen=True)
class ControlInsertion(BaseOperator):
    """Insert `break` or `continue` (in a loop) or `return` (in a function) before a statement."""

    name: str = "insert_control"
    description: str = "insert `break` or `continue` (inside a loop) or `return` (inside a function) before a statement"

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        site = choose_site(statement_sites(program), rng, context, lambda s: bool(legal_keywords(s)))
        if site is None:
            return None
        keywords = legal_keywords(site)
        return InsertControl(site.location, keywords[int(rng.integers(len(keywords)))])

    def sites(self, program: Program, context: MutationContext) -> list[Site]:
        return allowed_sites(statement_sites(program), context, lambda s: bool(legal_keywords(s)))

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        for keyword in legal_keywords(site):
            yield InsertControl(site.location, keyword)


register(ControlInsertion())
