"""The one-edit neighbourhood of a program, walked best first (PraPR's and TBar's order).

Every operator that can enumerate (gi.mutators.base.Enumerating) lists its sites and, at each,
every edit it could make. The walk yields them in order of the chance that each is the edit
wanted, under a simple model: the line to edit is one with a chance in proportion to its weight
(fault localisation's suspiciousness when repairing, the profile's hotness of its function
when speeding up), the operator is the right one in proportion to its prior, each of the
operator's sites on that line is as likely as another, and the operator's k-th edit at the
site is the right one with a chance in proportion to 1/k (Zipf: operators list the edits
their proposals favour first, the nearest ingredients, as CapGen ranks them by context). So
an edit's score is `weight(line) * prior(operator) / (sites * k * H(n))`, with `sites` the
operator's sites on the line, n its edits at the site and H(n) = 1 + 1/2 + ... + 1/n: an edit
that is one of few at a suspicious line (negate, an off-by-one, a comparison) comes before the
sixtieth statement copy there, and both before any edit at a line no failing test runs. An
edit showing one of the anti-patterns of overfitting patches (Tan et al.; gi.model.plausible:
a deleted statement, an early exit, ...) counts ANTI_PATTERN_ODDS as much, per anti-pattern:
those are the repairs least often right, and gi ranks them last among plausible patches too.

The walk is lazy: sites are expanded in order of their best possible score (the site's
share of the line's weight times the prior), and an edit is yielded once no site still to
expand could beat it, so the order is exact and a module of thousands of sites costs only
what is walked. Ties keep the order of expansion, then the operator's own order: the walk is
a fixed sequence for one program, operator list and context, so a resumed run walks it again
to where it stood.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from gi.model.edits import Edit
from gi.model.patch import Patch
from gi.model.plausible import anti_patterns
from gi.model.program import Program
from gi.model.sites import Site
from gi.mutators.base import MutationContext, Operator, edits_at, operator_sites

#: How much likelier an edit is to be the one wanted than one showing an anti-pattern of
#: overfitting patches (gi.model.plausible: a deletion, an early exit, ...), per anti-pattern.
ANTI_PATTERN_ODDS = 0.25


@dataclass(frozen=True)
class Neighbour:
    """One edit of the walk: what makes it, and its score (see the module's docstring)."""

    edit: Edit
    operator: str
    score: float


def walk(
    program: Program,
    operators: Sequence[Operator],
    context: MutationContext,
    priors: Mapping[str, float] | None = None,
) -> Iterator[Neighbour]:
    """Every edit the enumerating `operators` can make to `program`, best first. `priors`
    weighs operators (by name; 1 for those it does not name, 0 leaves one out). The same edit
    listed by two operators comes once, for the first that yields it."""
    priors = priors or {}
    pending: list[tuple[float, int, int, Site]] = []
    for index, operator in enumerate(operators):
        prior = priors.get(operator.name, 1.0)
        if prior <= 0:
            continue
        sites = operator_sites(operator, program, context)
        on_line = Counter((site.location.file, site.line) for site in sites)
        for site in sites:  # the operator's share of a line, split among its sites there
            weight = context.weight(site) * prior / on_line[site.location.file, site.line]
            pending.append((weight, len(pending), index, site))
    pending.sort(key=lambda entry: (-entry[0], entry[1]))
    ready: list[tuple[float, int, Edit, str]] = []
    yielded: set[Edit] = set()
    made = 0
    for bound, _, index, site in pending:
        while ready and -ready[0][0] >= bound:
            neighbour = _pop(ready, yielded)
            if neighbour is not None:
                yield neighbour
        operator = operators[index]
        edits = list(edits_at(operator, program, site, context))
        total = sum(1 / rank for rank in range(1, len(edits) + 1))
        for rank, edit in enumerate(edits, start=1):  # Zipf: the operator's first edits are likelier
            score = bound / (rank * total) * ANTI_PATTERN_ODDS ** len(anti_patterns(program, Patch((edit,))))
            heapq.heappush(ready, (-score, made, edit, operator.name))
            made += 1
    while ready:
        neighbour = _pop(ready, yielded)
        if neighbour is not None:
            yield neighbour


def _pop(ready: list[tuple[float, int, Edit, str]], yielded: set[Edit]) -> Neighbour | None:
    score, _, edit, name = heapq.heappop(ready)
    if edit in yielded:
        return None
    yielded.add(edit)
    return Neighbour(edit, name, -score)
