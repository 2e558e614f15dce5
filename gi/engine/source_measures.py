"""Measures read from a variant's source alone: complexity and Halstead volume of the program,
and of the patch and text its size, diff lines, style and maintainability.

Program measures are cached with the evaluation by tree hash (by the engine), and per file's
text here; text measures per file's text; both keyed by the SHA-256 of the file's name and text
(gi.model.textcache), never by the text itself.
"""

from __future__ import annotations

from fitness import complexity, size, style
from gi.model.patch import Variant
from gi.model.program import compiler_warnings_ignored
from gi.model.textcache import TextCache

#: Measures of one file's text, by the hash of the file's name and text.
_PROGRAM_MEASURES: TextCache[tuple[float, float]] = TextCache(4096)
_TEXT_MEASURES: TextCache[tuple[float, float, float]] = TextCache(4096)


def program_measures(variant: Variant) -> dict[str, float]:
    """Measures of the program (its syntax tree): cyclomatic complexity and Halstead volume.
    Cached with the evaluation by tree hash, and per file's text here."""
    files = [_program_file_measures(file, variant.sources[file]) for file in variant.program.files]
    return {"complexity": sum(m[0] for m in files), "halstead_volume": sum(m[1] for m in files)}


def _program_file_measures(file: str, text: str) -> tuple[float, float]:
    def measure() -> tuple[float, float]:
        with compiler_warnings_ignored():  # radon parses the text
            return complexity.cyclomatic({file: text}), complexity.halstead_volume({file: text})

    return _PROGRAM_MEASURES.get(text, measure, file)


def _text_measures(file: str, text: str) -> tuple[float, float, float]:
    """Style violations, maintainability index and lines of one file's text."""

    def measure() -> tuple[float, float, float]:
        with compiler_warnings_ignored():
            lines = float(text.count("\n") + 1)
            return style.violations({file: text}), complexity.maintainability({file: text}), lines

    return _TEXT_MEASURES.get(text, measure, file)


def variant_measures(variant: Variant) -> dict[str, float]:
    """Measures of this patch and this text, not of the program: patch size and diff lines
    (two patches can make one program: Replace(S, I) and [Delete S, Insert I]), style and the
    maintainability index (comments and layout count there). Recomputed for every candidate,
    never taken from the cache by tree hash; text measures are cached per file's text."""
    texts = [_text_measures(file, variant.sources[file]) for file in variant.program.files]
    return {
        "size": float(variant.effective_size),
        "diff_lines": size.diff_lines(variant.diff()),
        "style": sum(text[0] for text in texts),
        "maintainability": sum(text[1] for text in texts) / len(texts) if texts else 100.0,
        "source_lines": sum(text[2] for text in texts),
    }


def static_measures(variant: Variant) -> dict[str, float]:
    """Every measure read from the source alone."""
    return {**program_measures(variant), **variant_measures(variant)}
