"""The protocol every mutation operator follows, its registry, and weighted site choice.

An operator looks at the original program (and the patch so far) and proposes one edit,
or None when it finds no legal place. Classic syntax operators and the language-model
operator come through the same door (`Operator`, with hooks for what some operators need:
a share of the mutations, state to resume, usage to report), so the engine treats them alike
and never names one; `BaseOperator` gives every hook a default that does nothing.

An operator may also enumerate (the optional `Enumerating` hook): list the sites it works on
and every edit it could make at one of them, in a fixed order, so that a search can walk the
one-edit neighbourhood of a program in order of suspiciousness instead of sampling it. Every
edit `propose` can return at a site is among those `neighbourhood` lists there; an operator
without the hook (the language model's) lists nothing.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

import libcst as cst
import libcst.metadata
import numpy as np

from gi.model.edits import Edit
from gi.model.patch import Patch, Variant
from gi.model.program import Program
from gi.model.registry import Registry
from gi.model.sites import Location, Site, SiteKind


@dataclass(frozen=True)
class Feedback:
    """What the search measured on the variant a patch makes: for prompts that learn from it."""

    objectives: Mapping[str, float]
    #: The failing training tests' output (never held-out tests), empty when all pass.
    failures: str = ""


@dataclass(frozen=True)
class FunctionSpan:
    """A function of the original program: its qualified name ("Class.method") and its lines."""

    name: str
    first: int
    last: int


_SPANS: weakref.WeakKeyDictionary[Program, dict[Location, FunctionSpan]] = weakref.WeakKeyDictionary()


def function_spans(program: Program) -> dict[Location, FunctionSpan]:
    """Every function site's qualified name and lines (from `def` to its last line), by
    location; worked out once per program."""
    spans = _SPANS.get(program)
    if spans is None:
        spans = {}
        positions: dict[str, Mapping[cst.CSTNode, libcst.metadata.CodeRange]] = {}
        for site in program.sites_of(SiteKind.FUNCTION):
            file = site.location.file
            if file not in positions:
                wrapper = libcst.metadata.MetadataWrapper(program.modules[file], unsafe_skip_copy=True)
                positions[file] = wrapper.resolve(libcst.metadata.PositionProvider)
            node = program.node(site.location)
            assert isinstance(node, cst.FunctionDef)
            name = f"{site.function}.{node.name.value}" if site.function else node.name.value
            spans[site.location] = FunctionSpan(name, site.line, positions[file][node].end.line)
        _SPANS[program] = spans
    return spans


class UnboundContextError(RuntimeError):
    """A context was asked about a function site or an exclusion before `bind` gave it the program."""


@dataclass(frozen=True)
class MutationContext:
    """What the search tells operators beyond the program and the patch: where to edit.

    `site_weights` maps a function's qualified name ("Class.method"; "" for module level)
    to a weight (other functions weigh `default_weight`); the engine fills it from a profile
    of the workload. `line_weights` maps (file, line) to a weight (other lines weigh
    `line_floor`); the engine fills it from fault localisation. A statement or expression
    weighs its enclosing function's weight times its line's; a function site its own
    weight times the highest weight of a line in it.

    No site inside a function named in `excluded_functions` (qualified names), nor that
    function's own site, nor a statement holding it, is ever chosen: the engine excludes
    the workload's entry point, whose edits would only fake a speed-up.

    With `executed_lines` (per file, the lines the training tests executed on the original,
    coverage of the original) no site is chosen none of whose lines ran, as mutation testing
    skips lines no test executes: no test could judge an edit there. A function, and a
    statement that defines a function or class, needs a line of its body run by a test
    (`tested_lines`): its header runs when the module is imported.

    Function sites and exclusions need the program: `bind` it first (the search does).
    """

    site_weights: Mapping[str, float] = field(default_factory=dict)
    default_weight: float = 1.0
    line_weights: Mapping[tuple[str, int], float] = field(default_factory=dict)
    line_floor: float = 0.0
    #: Looks up what the search measured on a variant (None: not measured).
    feedback: Callable[[Variant], Feedback | None] | None = None
    excluded_functions: frozenset[str] = frozenset()
    #: Per file, the lines the training tests executed (None: every site may be edited), and
    #: those among them that ran inside a test (not only at import).
    executed_lines: Mapping[str, frozenset[int]] | None = None
    tested_lines: Mapping[str, frozenset[int]] = field(default_factory=dict)
    #: The weights of an operator's modes here (the model's rewrite, diff, crossover), when they
    #: differ from its own: an island's (gi/algorithms/islands.py).
    modes: Mapping[str, float] | None = None
    #: Set by `bind`: each function site's weight, and where the excluded functions are.
    function_weights: Mapping[Location, float] | None = None
    excluded_locations: tuple[Location, ...] = ()
    #: Set by `bind`: the sites none of whose lines the training tests execute (never chosen).
    unexecuted: frozenset[Location] = frozenset()
    #: `site_table`'s answers, by the identity of the tuple of sites (kept with it).
    _tables: dict[int, tuple[tuple[Site, ...], list[int], np.ndarray]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def bind(self, program: Program) -> MutationContext:
        """This context, with the weights of `program`'s function sites and the locations of
        its excluded functions worked out."""
        weights: dict[Location, float] = {}
        for location, span in function_spans(program).items():
            weight = self.site_weights.get(span.name, self.default_weight)
            if self.line_weights:
                lines = [(location.file, line) for line in range(span.first, span.last + 1)]
                found = [self.line_weights[key] for key in lines if key in self.line_weights]
                weight *= max(found) if found else self.line_floor
            weights[location] = weight
        excluded = tuple(
            location for location, span in function_spans(program).items() if span.name in self.excluded_functions
        )
        unexecuted = frozenset(unexecuted_sites(program, self.executed_lines, self.tested_lines))
        return dataclasses.replace(self, function_weights=weights, excluded_locations=excluded, unexecuted=unexecuted)

    def weight(self, site: Site) -> float:
        """How strongly the search prefers editing at `site` over other sites."""
        if site.kind is SiteKind.FUNCTION:
            if self.function_weights is not None:
                return self.function_weights[site.location]
            if self.site_weights or self.line_weights:
                raise UnboundContextError("a function site's weight needs the program: bind the context first")
            return self.default_weight
        weight = self.site_weights.get(site.function, self.default_weight)
        if self.line_weights:
            weight *= self.line_weights.get((site.location.file, site.line), self.line_floor)
        return weight

    def site_table(self, sites: tuple[Site, ...] | list[Site]) -> tuple[list[int], np.ndarray]:
        """The positions of the `sites` this context allows, and their weights (NaN where a
        weight needs `bind`): the same at every proposal, so worked out once per tuple of sites
        (a program's site tuples live as long as it). Every proposal of a search asks it."""
        entry = self._tables.get(id(sites))
        if entry is not None and entry[0] is sites:
            return entry[1], entry[2]
        if self.excluded_locations or self.unexecuted or ((self.excluded_functions or self.executed_lines) and sites):
            allowed = [position for position, site in enumerate(sites) if self.allows(site)]
        else:
            allowed = list(range(len(sites)))
        if self.site_weights or self.line_weights or self.function_weights is not None:
            weights = np.array([self._weight_or_nan(sites[position]) for position in allowed], dtype=float)
        else:  # every site weighs the default
            weights = np.full(len(allowed), self.default_weight, dtype=float)
        if isinstance(sites, tuple):
            if len(self._tables) >= 64:  # a few tuples a program; a new program each search
                self._tables.clear()
            self._tables[id(sites)] = (sites, allowed, weights)
        return allowed, weights

    def _weight_or_nan(self, site: Site) -> float:
        try:
            return self.weight(site)
        except UnboundContextError:
            return float("nan")  # raised again if the site is ever a candidate

    def allows(self, site: Site) -> bool:
        """False for a site inside an excluded function, its own site, or a statement holding it,
        and for a site none of whose lines the training tests execute."""
        if (self.excluded_functions or self.executed_lines is not None) and self.function_weights is None:
            raise UnboundContextError("excluding functions or unexecuted sites needs the program: bind first")
        if site.location in self.unexecuted:
            return False
        return not any(
            function.contains(site.location) or site.location.contains(function) for function in self.excluded_locations
        )


def unexecuted_sites(
    program: Program, executed: Mapping[str, frozenset[int]] | None, tested: Mapping[str, frozenset[int]]
) -> set[Location]:
    """The locations of the sites none of whose lines ran (`executed`, per file; None: every
    site ran). A function, or a statement defining one or a class, needs a line run inside a
    test (`tested`) other than its first: its header runs at import, its body only when used."""
    if executed is None:
        return set()
    found: set[Location] = set()
    for site in program.sites:
        file = site.location.file
        last = max(site.line, site.last_line)
        defines = site.kind is SiteKind.FUNCTION or (
            site.kind is SiteKind.STATEMENT and isinstance(program.node(site.location), (cst.FunctionDef, cst.ClassDef))
        )
        lines = tested.get(file, frozenset()) if defines else executed.get(file, frozenset())
        first = site.line + 1 if defines else site.line
        if not any(line in lines for line in range(first, last + 1)):
            found.add(site.location)
    return found


@dataclass(frozen=True)
class OperatorUsage:
    """What an operator that asks something outside gi (a language model) spent, and what became
    of its tries beyond the counts every operator has: for the run's accounting and report."""

    requests: int = 0
    tokens: int = 0
    cost: float = 0.0
    #: Seconds spent waiting on the outside (the variation counts each operator's whole time).
    seconds: float = 0.0
    #: Counts by column of tries that became no proposal, beyond "no_site" (a model's replies
    #: that did not parse, were the wrong kind of code, or changed nothing).
    outcomes: Mapping[str, float] = field(default_factory=dict)
    #: The same, per label the operator gives its offspring ("llm.diff"): the accounting's rows.
    parts: Mapping[str, OperatorUsage] = field(default_factory=dict)


class Deferred(Protocol):
    """A proposal made in two steps (`Operator.prepare`, then `Operator.finish`).

    A deferred whose answer comes on its own (a model's reply) may also have the optional
    `Arriving` hook, so that a search can take the proposals whose answers are in first."""

    @property
    def label(self) -> str:
        """How the search names the offspring it makes (the operator, maybe a mode after a dot)."""
        ...


class Arriving(Protocol):
    """The optional hook of a deferred proposal whose answer arrives by itself (read by name with
    `arrival`: a deferred need not subclass this)."""

    @property
    def arrival(self) -> Future[Any] | None:
        """Done once the answer is in, so that `finish` waits for nothing; None: in already."""
        ...


def arrival(deferred: Deferred) -> Future[Any] | None:
    """What is done once `deferred`'s answer is in, or None: a deferred without the `Arriving`
    hook counts as in (its `finish` may still wait)."""
    found = getattr(deferred, "arrival", None)
    return found if isinstance(found, Future) else None


@dataclass(frozen=True)
class Ready:
    """A proposal whose edit was there at once (an operator that does not wait)."""

    label: str
    edit: Edit | None


@dataclass(frozen=True)
class Member:
    """A member of the archive or the population, as an operator that learns from them sees it."""

    id: str
    patch: Patch
    #: The measured objective values by name (None for a broken variant).
    objectives: Mapping[str, float] | None
    #: The same values each turned into one to minimise, in the objectives' order.
    minimised: tuple[float, ...]


@dataclass(frozen=True)
class Outcome:
    """What became of one offspring of the generation, for the operator that made its new edits."""

    #: The offspring's label ("uniform+replace:llm.diff") and its new edits.
    label: str
    edits: tuple[Edit, ...]
    evaluated: bool
    #: It passed every training test (held-out tests never reach an operator).
    passing: bool
    entered_archive: bool
    #: It entered the archive, passes, and beats the original in an objective other than patch size.
    improved: bool = False
    #: The failing training tests' output when it did not pass.
    failures: str = ""
    #: Evaluations the run had made when it was evaluated (in the order the batch was bred).
    evaluations: int = 0


class Operator(Protocol):
    """A mutation operator: `propose` one edit for `patch`, or None; and the hooks the engine
    calls on every operator (`BaseOperator` gives each a default that does nothing)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def waits(self) -> bool:
        """Whether proposing waits on something outside gi (a model server), so that the run
        breeds in a thread of its own and evaluates what is bred meanwhile."""
        ...

    @property
    def writes_code(self) -> bool:
        """Whether its edits carry code the original program does not have (a model's), so
        that the run judges its variants with canaries and re-runs such front members."""
        ...

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None: ...

    def share(self) -> float | None:
        """The share of a generation's new edits this operator makes (drawn before the others,
        while its budget for the generation lasts), or None: one of the operators drawn
        uniformly for the rest."""
        ...

    def state(self) -> Any:
        """What a resumed run needs to continue as this one would have (JSON), or None."""
        ...

    def restore(self, state: Any) -> None:
        """Continue from `state()` saved by an interrupted run."""
        ...

    def replaying(self, recorded: Any) -> None:
        """Start a replay of the run whose operator saved `recorded` (its last `state()`): take
        from it what makes the replay count as the run did (the model's session, whose replies
        count as the requests they were)."""
        ...

    def usage(self) -> OperatorUsage | None:
        """What the operator spent outside gi, or None for an operator that asks nothing outside."""
        ...

    def stopped(self) -> str | None:
        """Why the operator proposes nothing more for the rest of the run, or None."""
        ...

    def warnings(self) -> list[str]:
        """What the run should tell the user about this operator: at its start, and after each
        generation (each sentence once; the model's overseer says here when it re-planned)."""
        ...

    def note_duplicate(self, edit: Edit) -> None:
        """The search already had the program `edit` made (a fruitless proposal)."""
        ...

    def report(self, accounting: Mapping[str, Mapping[str, float]]) -> dict[str, Any] | None:
        """What summary.json says of this operator under its name (its settings, usage and
        verdict), given its rows of the run's accounting (its name's, and those of its labels,
        such as "llm.diff"); None: nothing beyond the rows."""
        ...

    def prepare(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Deferred | None:
        """The first step of a proposal that waits: every random choice now (so the search does
        not depend on how fast the outside answers), the answer later, in `finish`; None when
        there is nothing to propose. The variation calls it for an operator that `waits`."""
        ...

    def finish(self, deferred: Deferred, program: Program, patch: Patch) -> tuple[Edit, ...]:
        """The second step: the edits the proposal makes to `patch` (the one `prepare` was
        given), waiting for the outside if need be; () for none."""
        ...

    def suspend(self, deferred: Deferred) -> Any:
        """What a checkpoint keeps (JSON) of a proposal still awaited, so that a search need not
        wait for it before checkpointing; None: it cannot be kept (the search waits for it)."""
        ...

    def resume(self, saved: Any, program: Program, patch: Patch) -> Deferred | None:
        """The proposal `suspend` kept, awaited again in a resumed run (its random choices and
        counts are in the restored state: none is made again); None: it is lost."""
        ...

    def learn(self, outcomes: Sequence[Outcome], members: Sequence[Member]) -> None:
        """After each generation: what became of the offspring of this operator's edits, and the
        archive and population as they stand (for prompts, bandits and overseers)."""
        ...


class OfflineMissError(Exception):
    """--offline (or a replay), and an operator's cache has no reply for what it would ask outside gi."""


@dataclass(frozen=True)
class RunFacts:
    """What a run tells an operator it builds from a config section of the operator's own."""

    #: What the run's objectives ask for: "faster", "simpler" or "repair".
    goal: str
    #: Where replies from outside are kept, so that a replay asks nothing again.
    cache: Path
    #: Never ask outside: take replies from the cache, and stop with an error on a miss.
    offline: bool
    #: The run's seed (experiment.seed): replies kept from outside are the run's draws, so a run
    #: of another seed draws its own rather than repeat this one's.
    seed: int | None = None


#: Builds an operator from its config section (as a mapping), its share of mutations and the run's facts.
OperatorFactory = Callable[[Mapping[str, Any], float, RunFacts], Operator]

#: Operators built from a config section of their own, by name: "llm" from `[llm]`, with the share
#: `mutators.llm` gives it. The engine builds whichever a config asks for, never naming one.
CONFIGURED: Registry[OperatorFactory] = Registry("configured operator")


class BaseOperator:
    """The hooks of `Operator`, each doing nothing: classic operators subclass this and write
    only `name`, `description` and `propose`."""

    waits: bool = False
    writes_code: bool = False

    def share(self) -> float | None:
        return None

    def state(self) -> Any:
        return None

    def restore(self, state: Any) -> None:
        """Nothing to restore."""

    def replaying(self, recorded: Any) -> None:
        """Nothing to take from the recorded run."""

    def usage(self) -> OperatorUsage | None:
        return None

    def stopped(self) -> str | None:
        return None

    def warnings(self) -> list[str]:
        return []

    def note_duplicate(self, edit: Edit) -> None:
        """Nothing to learn from a duplicate."""

    def report(self, accounting: Mapping[str, Mapping[str, float]]) -> dict[str, Any] | None:
        return None

    def prepare(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Deferred | None:
        """Propose at once (an operator that does not wait)."""
        name = self.name  # type: ignore[attr-defined]
        return Ready(name, self.propose(program, patch, rng, context))  # type: ignore[attr-defined]

    def finish(self, deferred: Deferred, program: Program, patch: Patch) -> tuple[Edit, ...]:
        edit = deferred.edit if isinstance(deferred, Ready) else None
        return () if edit is None else (edit,)

    def suspend(self, deferred: Deferred) -> Any:
        """Nothing is kept: an operator that waits keeps its proposals itself."""
        return None

    def resume(self, saved: Any, program: Program, patch: Patch) -> Deferred | None:
        return None

    def learn(self, outcomes: Sequence[Outcome], members: Sequence[Member]) -> None:
        """Nothing to learn."""


class Enumerating(Protocol):
    """The optional hook of an operator that can list its edits instead of sampling one."""

    def sites(self, program: Program, context: MutationContext) -> Sequence[Site]:
        """The sites the operator may edit that the context allows (with a weight above 0), in
        the program's order: every target of an edit it can make (an operator whose options
        at a site are costly to work out lists it, and finds none there when asked)."""
        ...

    def neighbourhood(self, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
        """Every edit the operator could make at `site` (one of `sites`), each program once,
        in a fixed order: the edits its proposals favour (nearby ingredients) first."""
        ...


def operator_sites(operator: Operator, program: Program, context: MutationContext) -> tuple[Site, ...]:
    """The sites `operator` can list edits at (none for an operator that cannot enumerate)."""
    hook = getattr(operator, "sites", None)
    return tuple(hook(program, context)) if callable(hook) else ()


def edits_at(operator: Operator, program: Program, site: Site, context: MutationContext) -> Iterator[Edit]:
    """Every edit `operator` could make at `site`, in its order (none if it cannot enumerate)."""
    hook = getattr(operator, "neighbourhood", None)
    return iter(hook(program, site, context)) if callable(hook) else iter(())


def _installed_operator(name: str, item: object) -> Operator:
    """An installed package's operator (entry point `gi.operators`), as OPERATORS holds it;
    ValueError says what it lacks."""
    missing = [hook for hook in _HOOKS if not hasattr(item, hook)]
    if missing:
        raise ValueError(
            f"not an operator: it lacks {', '.join(missing)} (subclass gi.mutators.BaseOperator and write"
            " name, description and propose)"
        )
    if getattr(item, "name", None) != name:
        raise ValueError(f"the operator's name is {getattr(item, 'name', None)!r}, not {name!r}")
    return cast(Operator, item)


#: What an operator has: the members of `Operator`.
_HOOKS = tuple(member for member in dir(Operator) if not member.startswith("_"))

#: Every mutation operator a config can name: gi's, and those installed packages declare in the
#: entry-point group `gi.operators`.
OPERATORS: Registry[Operator] = Registry("operator", "gi.operators", _installed_operator)


def register(operator: Operator) -> Operator:
    """Add an operator to the registry under its name."""
    return OPERATORS.add(operator.name, operator)


def choose_site(
    sites: tuple[Site, ...] | list[Site],
    rng: np.random.Generator,
    context: MutationContext,
    accept: Callable[[Site], bool] | None = None,
) -> Site | None:
    """Pick one site, weighted by the context, among those the context and `accept` allow."""
    allowed, weights = context.site_table(sites)
    if accept is not None:
        kept = [index for index, position in enumerate(allowed) if accept(sites[position])]
        allowed, weights = [allowed[index] for index in kept], weights[kept]
    if not allowed:
        return None
    if np.isnan(weights).any():
        raise UnboundContextError("a function site's weight needs the program: bind the context first")
    total = weights.sum()
    if total <= 0:
        return None
    return sites[allowed[int(rng.choice(len(allowed), p=weights / total))]]


def allowed_sites(
    sites: tuple[Site, ...] | list[Site], context: MutationContext, accept: Callable[[Site], bool] | None = None
) -> list[Site]:
    """The `sites` `choose_site` can pick (those the context allows with a weight above 0, and
    `accept` allows), in their order: what an enumerating operator lists."""
    allowed, weights = context.site_table(sites)
    if np.isnan(weights).any():
        raise UnboundContextError("a function site's weight needs the program: bind the context first")
    return [
        sites[position]
        for position, weight in zip(allowed, weights, strict=True)
        if weight > 0 and (accept is None or accept(sites[position]))
    ]


def statement_sites(program: Program) -> tuple[Site, ...]:
    return program.sites_of(SiteKind.STATEMENT)
