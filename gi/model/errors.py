"""The error hierarchy: every error gi raises on bad input derives from `GIError`.

Errors carry one line that names the file, key or line at fault, the rule, and a fix; the
command line prints that line and exits non-zero instead of showing a traceback.
"""

from __future__ import annotations


class GIError(Exception):
    """Root of gi's errors; `str(error)` is the one line shown to the user."""

    exit_code = 1


class UsageError(GIError, ValueError):
    """The command line asks for something that cannot be: a negative seed, an unknown front member."""

    exit_code = 2


class ConfigError(GIError, ValueError):
    """An experiment config is invalid: unknown key, wrong type or bad value."""

    exit_code = 2


class ProgramError(GIError, ValueError):
    """The target program cannot be loaded: missing files, no matches, unparseable source."""

    exit_code = 2


class EditError(GIError, ValueError):
    """An edit or patch read from JSON is malformed or does not fit the program."""


class StoreError(GIError):
    """A run folder or its store is missing, from another experiment, or corrupt."""

    exit_code = 2


class SuiteError(GIError):
    """A test suite cannot judge a run: e.g. `gi validate --tests` with a suite the original
    passes none of, under which no program could be found to overfit."""

    exit_code = 2


class LLMError(GIError):
    """The language model cannot serve a run: e.g. --offline and a reply is not in the cache."""

    exit_code = 2


class RegistryError(GIError, KeyError):
    """A component (operator, objective, algorithm) was asked for by an unknown name."""

    exit_code = 2

    def __str__(self) -> str:  # KeyError would wrap the message in quotes
        return str(self.args[0]) if self.args else ""


class EvaluationError(GIError):
    """gi itself could not evaluate a variant: the disk is full, open files ran out, or one of
    gi's measures failed. Nothing is scored for the variant (its code did not cause this); the
    run stops, and resumes from its last evaluation."""

    exit_code = 3


class PluginError(GIError):
    """An installed package's component (an entry point in gi.operators, gi.objectives or
    gi.algorithms) cannot be loaded, or is not what its group holds."""

    exit_code = 2
