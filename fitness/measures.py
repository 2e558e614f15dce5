"""The measures: raw numbers taken of a variant, each saying what its value depends on.

What a value depends on (`Basis`) is how long it may be reused: the engine keys its caches by
it, so a measure of the program is taken once per program, one of the patch for every
candidate, one of the text once per text, and a runtime ratio only against the timing of the
original it was measured with. Measures gi's process takes from the source alone carry their
`compute`; those the evaluator takes in the sandbox (tests, runtime) carry none.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gi.fitness import complexity, size, style
from gi.model.patch import Variant
from gi.model.program import compiler_warnings_ignored
from gi.model.registry import Registry
from gi.model.textcache import TextCache


class Basis(enum.StrEnum):
    """What a measured value depends on, and so what it is cached by."""

    #: The program (its syntax tree, comments and layout aside): one value for every patch
    #: that makes it, cached by tree hash.
    PROGRAM = "program"
    #: The patch (two patches can make one program: Replace(S, I) and [Delete S, Insert I]):
    #: taken for every candidate.
    PATCH = "patch"
    #: The files' text, comments and layout included: cached by the text.
    TEXT = "text"
    #: The program and the run's timing of the original it was measured against (a ratio):
    #: reused only under the same timing of the original.
    TIMING = "timing"


@dataclass(frozen=True)
class Measure:
    """One raw number of a variant: its name in `Evaluation.measures`, what it depends on, and
    how gi's process computes it (None: the evaluator measures it in the sandbox)."""

    name: str
    basis: Basis
    description: str
    #: None for this variant: not taken (the variant counts as worst there).
    compute: Callable[[Variant], float | None] | None = None

    @property
    def static(self) -> bool:
        """Whether gi computes it from the source alone, in its own process."""
        return self.compute is not None

    def take(self, variant: Variant) -> float | None:
        """The measure's value of the variant, computed in gi's process (the measure is static).

        A measure from outside gi (a plugin's, a user's) may parse the variant with `ast.parse`:
        it runs under gi's one lock on the compiler, as gi's own parses do, since on CPython 3.11
        two threads building syntax trees at once may fail with "SystemError: AST constructor
        recursion depth mismatch" (CPython issue 106905), and breeding runs in a thread of its own.
        """
        assert self.compute is not None
        with compiler_warnings_ignored():
            return self.compute(variant)


#: Each measure of one file's text, by the SHA-256 of the file's name and text (never the text
#: itself: thousands of large texts as keys would hold hundreds of MB). One cache a measure, so a
#: run takes only the measures its objectives read (radon's maintainability index and
#: pycodestyle cost several times the cyclomatic complexity a run of "complexity" needs).
_FILE_VALUES: dict[str, TextCache[float]] = {}


def _per_file(name: str, measure: Callable[[Mapping[str, str]], float]) -> Callable[[str, str], float]:
    """`measure` of one file's text, cached by the text (and the file's name)."""
    cache = _FILE_VALUES.setdefault(name, TextCache(4096))

    def of_file(file: str, text: str) -> float:
        def compute() -> float:
            with compiler_warnings_ignored():
                return measure({file: text})

        return cache.get(text, compute, file)

    return of_file


_cyclomatic = _per_file("complexity", complexity.cyclomatic)
_halstead = _per_file("halstead_volume", complexity.halstead_volume)
_violations = _per_file("style", style.violations)
_maintainability_index = _per_file("maintainability", complexity.maintainability)


def _line_count(file: str, text: str) -> float:
    return float(text.count("\n") + 1)  # cheaper than the cache's hash of the text


def _summed(of_file: Callable[[str, str], float]) -> Callable[[Variant], float]:
    """The sum of a per-file measure over the variant's editable files."""
    return lambda variant: sum(of_file(file, variant.sources[file]) for file in variant.program.files)


def _maintainability(variant: Variant) -> float:
    files = variant.program.files
    return sum(_maintainability_index(file, variant.sources[file]) for file in files) / len(files) if files else 100.0


def _size(variant: Variant) -> float:
    return float(variant.effective_size)


def _diff_lines(variant: Variant) -> float:
    return size.diff_lines(variant.diff())


MEASURES: Registry[Measure] = Registry("measure")
for _measure in (
    Measure("failed_tests", Basis.PROGRAM, "training tests that do not pass (the sandbox's test run)"),
    Measure("passed_tests", Basis.PROGRAM, "training tests that pass (the sandbox's test run)"),
    Measure(
        "complexity", Basis.PROGRAM, "total cyclomatic complexity of the edited files (radon)", _summed(_cyclomatic)
    ),
    Measure("halstead_volume", Basis.PROGRAM, "total Halstead volume of the edited files (radon)", _summed(_halstead)),
    Measure("size", Basis.PATCH, "edits of the patch that take effect", _size),
    Measure("diff_lines", Basis.PATCH, "lines the patch adds or removes", _diff_lines),
    Measure("style", Basis.TEXT, "PEP 8 violations in the edited files (pycodestyle)", _summed(_violations)),
    Measure("maintainability", Basis.TEXT, "mean maintainability index of the edited files (radon)", _maintainability),
    Measure("source_lines", Basis.TEXT, "lines of the edited files", _summed(_line_count)),
    Measure("runtime", Basis.TIMING, "workload time over the original's, measured with pyperf (the sandbox)"),
):
    MEASURES.add(_measure.name, _measure)
