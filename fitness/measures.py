"""The measures: raw numbers taken of a variant, each saying what its value depends on.

What a value depends on (`Basis`) is how long it may be reused: the engine keys its caches by
it, so a measure of the program is taken once per program, one of the patch for every
candidate, one of the text once per text, and a runtime ratio only against the timing of the
original it was measured with. Measures gi's process takes from the source alone carry their
`compute`; those the evaluator takes in the sandbox (tests, runtime) carry none.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from fitness import complexity, size, style
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


#: Measures of one file's text, by the SHA-256 of its name and text (never the text itself:
#: thousands of large texts as keys would hold hundreds of MB).
_PROGRAM_FILES: TextCache[tuple[float, float]] = TextCache(4096)
_TEXT_FILES: TextCache[tuple[float, float, float]] = TextCache(4096)


def _program_file(file: str, text: str) -> tuple[float, float]:
    """Cyclomatic complexity and Halstead volume of one file's text (radon parses it)."""

    def measure() -> tuple[float, float]:
        with compiler_warnings_ignored():
            return complexity.cyclomatic({file: text}), complexity.halstead_volume({file: text})

    return _PROGRAM_FILES.get(text, measure, file)


def _text_file(file: str, text: str) -> tuple[float, float, float]:
    """Style violations, maintainability index and lines of one file's text."""

    def measure() -> tuple[float, float, float]:
        with compiler_warnings_ignored():
            lines = float(text.count("\n") + 1)
            return style.violations({file: text}), complexity.maintainability({file: text}), lines

    return _TEXT_FILES.get(text, measure, file)


def _complexity(variant: Variant) -> float:
    return sum(_program_file(file, variant.sources[file])[0] for file in variant.program.files)


def _halstead_volume(variant: Variant) -> float:
    return sum(_program_file(file, variant.sources[file])[1] for file in variant.program.files)


def _style(variant: Variant) -> float:
    return sum(_text_file(file, variant.sources[file])[0] for file in variant.program.files)


def _maintainability(variant: Variant) -> float:
    texts = [_text_file(file, variant.sources[file]) for file in variant.program.files]
    return sum(text[1] for text in texts) / len(texts) if texts else 100.0


def _source_lines(variant: Variant) -> float:
    return sum(_text_file(file, variant.sources[file])[2] for file in variant.program.files)


def _size(variant: Variant) -> float:
    return float(variant.effective_size)


def _diff_lines(variant: Variant) -> float:
    return size.diff_lines(variant.diff())


MEASURES: Registry[Measure] = Registry("measure")
for _measure in (
    Measure("failed_tests", Basis.PROGRAM, "training tests that do not pass (the sandbox's test run)"),
    Measure("passed_tests", Basis.PROGRAM, "training tests that pass (the sandbox's test run)"),
    Measure("complexity", Basis.PROGRAM, "total cyclomatic complexity of the edited files (radon)", _complexity),
    Measure("halstead_volume", Basis.PROGRAM, "total Halstead volume of the edited files (radon)", _halstead_volume),
    Measure("size", Basis.PATCH, "edits of the patch that take effect", _size),
    Measure("diff_lines", Basis.PATCH, "lines the patch adds or removes", _diff_lines),
    Measure("style", Basis.TEXT, "PEP 8 violations in the edited files (pycodestyle)", _style),
    Measure("maintainability", Basis.TEXT, "mean maintainability index of the edited files (radon)", _maintainability),
    Measure("source_lines", Basis.TEXT, "lines of the edited files", _source_lines),
    Measure("runtime", Basis.TIMING, "workload time over the original's, measured with pyperf (the sandbox)"),
):
    MEASURES.add(_measure.name, _measure)
