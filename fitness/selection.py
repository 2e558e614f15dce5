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
  them ran outside any test (at import: every test depends on it).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from coverage.config import DEFAULT_EXCLUDE
from coverage.misc import join_regex
from coverage.parser import PythonParser

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

    @classmethod
    def of(cls, raw: Mapping[str, Mapping[int, Iterable[str]]], sources: Mapping[str, str]) -> Coverage:
        """From `gi.fitness.faults.LineCoverage` and the editable files' texts."""
        lines = {file: {line: frozenset(tests) for line, tests in by_line.items()} for file, by_line in raw.items()}
        return cls(lines, {file: excluded_lines(text) for file, text in sources.items()})

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

    def to_json(self) -> dict[str, dict[str, list[str]]]:
        return {
            file: {str(line): sorted(tests) for line, tests in by_line.items()} for file, by_line in self.lines.items()
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Mapping[str, Sequence[str]]], sources: Mapping[str, str]) -> Coverage:
        return cls.of({file: {int(line): tests for line, tests in by_line.items()} for file, by_line in data.items()},
                      sources)  # fmt: skip


def first_tests(covering: frozenset[str] | None, order: Sequence[str]) -> tuple[str, ...]:
    """The order a variant's training tests run in: those in `covering` (the tests that execute
    an edited line) first, each group in `order`; `order` unchanged when every test may see the
    change (None)."""
    if covering is None:
        return tuple(order)
    return (*(test for test in order if test in covering), *(test for test in order if test not in covering))
