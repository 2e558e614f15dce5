"""Calls like a passing test's: in a repair, the original is a reference only where its passing
tests vouch for it. PATCH-SIM (Xiong et al. 2018) tells generated tests apart by how like the
passing and the failing tests' executions theirs are; gi takes its strictest form. A drawn call
of a function counts as like a passing test's when, on the original, it runs exactly the lines
of the function that a call some passing training test made ran, and not the lines of any call
a failing one made. On such a call a repair should do what the original does; other calls are
passed over (the original may be wrong there: that is what the repair is for).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gi.fitness.oracle.inputs import FunctionProfile, recorded_calls
from gi.fitness.oracle.search import Ask
from gi.fitness.oracle.values import Call, Outcome

#: A call's path: the function's source lines it ran on the original, in order of their numbers.
ExecutionPath = tuple[int, ...]


@dataclass(frozen=True)
class Paths:
    """The paths of the recorded calls of one function on the original."""

    passing: frozenset[ExecutionPath]
    failing: frozenset[ExecutionPath]

    def like_passing(self, path: ExecutionPath) -> bool:
        return path in self.passing and path not in self.failing


def path_of(outcome: Outcome) -> ExecutionPath | None:
    """The path a traced call's outcome carries (None: it ran out of time, or could not be made)."""
    path = outcome.get("path")
    return tuple(int(line) for line in path) if isinstance(path, list) else None


def learn_paths(profile: FunctionProfile, traced: Callable[[Call], Outcome]) -> Paths | None:
    """The paths of the function's recorded calls, each made again on the original by `traced`;
    None when no passing call has one, or when a failing call's is not known (it cannot be made
    again, or it ran out of time): a drawn call could then be like it unseen."""
    failing_recorded = [call for index, call in enumerate(profile.calls) if index in profile.failing_calls]
    failing_calls = recorded_calls(profile, failing_recorded)
    if len(failing_calls) < len(failing_recorded):
        return None
    failing: set[ExecutionPath] = set()
    for call in failing_calls:
        path = path_of(traced(call))
        if path is None:
            return None
        failing.add(path)
    passing = {path_of(traced(call)) for call in recorded_calls(profile, profile.passing_calls)}
    passing.discard(None)
    found = frozenset(path for path in passing if path is not None)
    return Paths(found, frozenset(failing)) if found - failing else None


def like_passing(paths: Paths, traced: Callable[[Call], Outcome], variant: Callable[[Call], Outcome]) -> Ask:
    """An `Ask` that makes a call on the variant only when the original's path on it is like a
    passing test's call's (the path left out of the original's outcome), and passes over others."""

    def ask(call: Call) -> tuple[Outcome, Outcome] | None:
        original = traced(call)
        path = path_of(original)
        if path is None or not paths.like_passing(path):
            return None
        plain: Mapping[str, Any] = {key: value for key, value in original.items() if key != "path"}
        return plain, variant(call)

    return ask
