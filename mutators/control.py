"""Control-flow insertion: `break`, `continue` and `return` before a statement, where legal."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gi.edits import Edit, InsertControl
from gi.patch import Patch
from gi.program import Program, Site
from mutators.base import MutationContext, choose_site, register, statement_sites


def _allows(keyword: str, site: Site) -> bool:
    context = site.context
    assert context is not None
    if context.fixed_position:
        return False
    return context.in_function if keyword == "return" else context.in_loop


@dataclass(frozen=True)
class ControlInsertion:
    """Insert one control keyword before a statement in a loop (break, continue) or function (return)."""

    keyword: str
    name: str
    description: str

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        site = choose_site(statement_sites(program), rng, context, lambda s: _allows(self.keyword, s))
        return InsertControl(site.location, self.keyword) if site else None


for _keyword, _where in (("break", "inside a loop"), ("continue", "inside a loop"), ("return", "inside a function")):
    register(ControlInsertion(_keyword, f"insert_{_keyword}", f"insert `{_keyword}` before a statement {_where}"))
