"""Which training tests can judge an edit: the original's coverage, per test.

Mutation-testing tools never mutate a line no test executes (mutmut's
`mutate_only_covered_lines`, cosmic-ray's filters) and run, for each mutant, the tests that
reach the mutated code first (mutmut records which tests call each function). gi does both
from one run of the training tests on the original under coverage.py, with a context per test
(`gi.fitness.faults.covered_test_run`):

- `Coverage.executed(file, first, last)`: whether any line of a span ran, in a test or while
  the modules were imported (the empty context); a line the project marks `# pragma: no
  cover` (coverage.py's own exclusion, blocks included) counts as never run, as coverage.py
  reports it;
- `Coverage.tests_for(lines)`: the tests that executed any of the lines, or None when one of
  them ran outside any test (at import: every test depends on it);
- `Coverage.selected(lines, training)`: the training tests that can see an edit of the lines
  (pytest-testmon's and mutmut's selection): those that executed one, and every test whose
  coverage was not measured; None when every test must run.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from coverage.config import DEFAULT_EXCLUDE
from coverage.misc import join_regex
from coverage.parser import PythonParser

from gi.model.patch import Patch
from gi.model.program import Program
from gi.model.sites import Location

#: The context coverage.py gives lines run outside any test (collection, imports).
OUTSIDE_TESTS = ""


@functools.lru_cache(maxsize=256)
def excluded_lines(text: str) -> frozenset[int]:
    """The lines coverage.py excludes from a file by default (`# pragma: no cover` and the
    blocks it heads)."""
    parser = PythonParser(text=text, exclude=join_regex(DEFAULT_EXCLUDE))
    try:
        parser.parse_source()
    except Exception:  # coverage.py's NotPython and the like: nothing is excluded then
        return frozenset()
    return frozenset(parser.excluded)


@dataclass(frozen=True)
class Coverage:
    """The original's coverage by its training tests: per file, per line, the tests (node ids)
    that executed it, OUTSIDE_TESTS for a line run outside any test."""

    lines: Mapping[str, Mapping[int, frozenset[str]]]
    #: Per file, the lines the project excludes from coverage (see `excluded_lines`).
    excluded: Mapping[str, frozenset[int]] = field(default_factory=dict)
    #: The tests whose coverage was measured: they ran to their end under coverage.py (one that
    #: executed no line of the editable files among them). None: not recorded (an older run's
    #: record), those some line names.
    measured: frozenset[str] | None = None

    @classmethod
    def of(
        cls,
        raw: Mapping[str, Mapping[int, Iterable[str]]],
        sources: Mapping[str, str],
        measured: Iterable[str] | None = None,
    ) -> Coverage:
        """From `gi.fitness.faults.LineCoverage`, the editable files' texts and the tests that
        ran to their end in the coverage run."""
        lines = {file: {line: frozenset(tests) for line, tests in by_line.items()} for file, by_line in raw.items()}
        excluded = {file: excluded_lines(text) for file, text in sources.items()}
        return cls(lines, excluded, None if measured is None else frozenset(measured))

    def executed(self, file: str, first: int, last: int) -> bool:
        """Whether any line from `first` to `last` ran, and is not excluded from coverage."""
        by_line = self.lines.get(file, {})
        excluded = self.excluded.get(file, frozenset())
        return any(line in by_line and line not in excluded for line in range(first, last + 1))

    def executed_lines(self) -> dict[str, frozenset[int]]:
        """Per file, the lines that ran (in a test or at import), less those excluded."""
        return {file: frozenset(by_line) - self.excluded.get(file, frozenset()) for file, by_line in self.lines.items()}

    def tested_lines(self) -> dict[str, frozenset[int]]:
        """Per file, the lines a test ran (not only the import), less those excluded."""
        excluded = self.excluded
        return {
            file: frozenset(line for line, tests in by_line.items() if tests - {OUTSIDE_TESTS})
            - excluded.get(file, frozenset())
            for file, by_line in self.lines.items()
        }

    def tests_for(self, lines: Iterable[tuple[str, int]]) -> frozenset[str] | None:
        """The tests that executed any of `lines` ((file, line) pairs), or None when one ran
        outside any test, so that every test may see the change."""
        found: set[str] = set()
        for file, line in lines:
            tests = self.lines.get(file, {}).get(line, frozenset())
            if OUTSIDE_TESTS in tests:
                return None
            found |= tests
        return frozenset(found)

    def selected(self, lines: Iterable[tuple[str, int]], training: Iterable[str]) -> frozenset[str] | None:
        """The `training` tests that can see a change of `lines`: those that executed one of
        them, and those whose coverage is unknown (not measured: they may execute anything).
        None when one of the lines ran outside any test (at import: what every test imports)."""
        covering = self.tests_for(lines)
        if covering is None:
            return None
        measured = self.measured
        if measured is None:
            measured = frozenset(
                test for by_line in self.lines.values() for tests in by_line.values() for test in tests
            )
        return frozenset(test for test in training if test in covering or test not in measured)

    def to_json(self) -> dict[str, dict[str, list[str]]]:
        return {
            file: {str(line): sorted(tests) for line, tests in by_line.items()} for file, by_line in self.lines.items()
        }

    @classmethod
    def from_json(
        cls,
        data: Mapping[str, Mapping[str, Sequence[str]]],
        sources: Mapping[str, str],
        measured: Iterable[str] | None = None,
    ) -> Coverage:
        return cls.of({file: {int(line): tests for line, tests in by_line.items()} for file, by_line in data.items()},
                      sources, measured)  # fmt: skip


@functools.lru_cache(maxsize=256)
def statement_lines(text: str) -> frozenset[int] | None:
    """The lines of a file where coverage.py can see a statement run (a docstring is none);
    None when coverage.py cannot parse the file."""
    parser = PythonParser(text=text)
    try:
        parser.parse_source()
    except Exception:  # coverage.py's NotPython and the like
        return None
    return frozenset(parser.statements)


class EditedLines:
    """The lines of the original program a patch's edits change: over the whole span of each
    site an edit replaces, removes, rewrites or inserts before (a part of a site, such as one
    side of an operation, over the span of the smallest site holding it).

    A statement coverage.py never sees run (a docstring) tells nothing of who reaches its place,
    yet what an edit puts there runs whenever the block gets there: its lines are those of the
    next statement of its block that coverage.py does see (a docstring swapped with a `return`
    makes the function return before anything else)."""

    def __init__(self, program: Program) -> None:
        spans: dict[Location, tuple[int, int]] = {}
        for site in program.sites:
            first, last = spans.get(site.location, (site.line, site.line))
            spans[site.location] = (min(first, site.line), max(last, site.last_line, site.line))
        self.spans = spans
        self.statements = {file: statement_lines(text) for file, text in program.sources.items()}

    def of(self, patch: Patch) -> list[tuple[str, int]] | None:
        """(file, line) pairs; None when an edit names a place no site holds, or a place no
        statement coverage.py sees is reached after (which tests reach it is not known)."""
        lines: list[tuple[str, int]] = []
        for edit in patch.edits:
            for location in {edit.target, *edit.positions(), *edit.removes(), *edit.rewrites(), *edit.supersedes()}:
                span = self._reached(location)
                if span is None:
                    return None
                lines += [(location.file, line) for line in range(span[0], span[1] + 1)]
        return lines

    def _reached(self, location: Location) -> tuple[int, int] | None:
        """The span whose coverage says who reaches `location`: its site's, or when coverage.py
        sees no statement there, the next statement's of the same block."""
        found = self._site(location)
        while found is not None:
            site, span = found
            statements = self.statements.get(site.file)
            if statements is None or any(line in statements for line in range(span[0], span[1] + 1)):
                return span
            indexed = re.fullmatch(r"(.*)\[(\d+)\]", site.path)
            if indexed is None:
                return None
            following = Location(site.file, f"{indexed.group(1)}[{int(indexed.group(2)) + 1}]")
            found = (following, self.spans[following]) if following in self.spans else None
        return None

    def _site(self, location: Location) -> tuple[Location, tuple[int, int]] | None:
        """The smallest site holding `location`, with its span."""
        path = location.path
        while path:
            site = Location(location.file, path)
            span = self.spans.get(site)
            if span is not None:
                return site, span
            path = re.sub(r"(\.[A-Za-z_]\w*|\[\d+\])$", "", path) if re.search(r"[.\[]", path) else ""
        return None


def first_tests(covering: frozenset[str] | None, order: Sequence[str]) -> tuple[str, ...]:
    """The order a variant's training tests run in: those in `covering` (the tests that execute
    an edited line) first, each group in `order`; `order` unchanged when every test may see the
    change (None)."""
    if covering is None:
        return tuple(order)
    return (*(test for test in order if test in covering), *(test for test in order if test not in covering))
