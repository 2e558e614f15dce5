"""The behaviour oracle's judgement of one front member (`Judge`, for gi.engine.oracle): the
functions to check called in two sandboxed processes, the original's and the member's
(`OracleWorker`), each as `Oracle.targets` says: on the calls the passing training tests made, on
drawn calls, or on drawn calls for crashes alone; the first difference shrunk, written as a
pytest test, and confirmed by pytest in fresh copies of both programs."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import replace

from gi.engine.evaluation import Evaluator
from gi.engine.oracle_process import OracleError, OracleWorker
from gi.fitness.oracle.inputs import FunctionProfile, UnmakeableError
from gi.fitness.oracle.search import (
    CHANGED,
    NOT_CHECKED,
    SAME,
    Behaviour,
    Difference,
    expected_errors,
    not_checked,
    replay_difference,
    search_difference,
)
from gi.fitness.oracle.values import Call, Outcome, call_source, counterexample, crash_counterexample, describe
from gi.fitness.tests import NOT_FAILING
from gi.model.patch import Variant

#: Where a counterexample goes in a copy of the program.
COUNTEREXAMPLE_FILE = "gi_oracle/test_gi_counterexample.py"
#: Differences whose counterexample gi tries to confirm with pytest, smallest first.
CONFIRMATIONS = 2
#: A member left less time than this is not checked, and why.
MIN_SECONDS = 0.5
SPENT = "the oracle's time (tests.oracle_seconds) was spent on the members before"

#: How a function is checked (`Oracle.targets`): on the calls the passing training tests made of
#: it, for crashes alone on drawn calls, or on drawn calls.
REPLAYED, CRASHED, DRAWN = "replayed", "crashed", "drawn"
#: What a verdict's why starts with, by how the difference was found.
WHERE = {
    REPLAYED: "a call a passing training test makes: ",
    CRASHED: "a crash where the original does not crash, in a function the failing tests reach: ",
    DRAWN: "",
}
#: What a "same" verdict says was not found, by how it was looked for.
SEARCHED = {
    REPLAYED: "no difference in {tried} calls of {names}",
    DRAWN: "no difference in {tried} calls of {names}",
    CRASHED: "no crash in {tried} drawn calls of {names} (the failing tests reach it: only a crash is wrong there)",
}


class Judge:
    """Judges front members against the original, in sandboxed processes; what went wrong with
    a worker goes to `warnings`."""

    def __init__(self, evaluator: Evaluator, original: Variant, modules: Sequence[str], seed: int,
                 warnings: list[str]) -> None:  # fmt: skip
        self.evaluator = evaluator
        self.original = original
        self.modules = sorted(set(modules))
        self.seed = seed
        self.warnings = warnings

    def member(
        self,
        variant: Variant,
        targets: Sequence[tuple[str, FunctionProfile]],
        unchecked: Sequence[str],
        original: list[OracleWorker],
        stack: ExitStack,
        seconds: float,
    ) -> Behaviour:
        """The member's verdict, in `seconds`: each of `targets` checked as it says (`Oracle.targets`),
        on calls made in `original` (the original's worker, started into `stack` when empty, so
        the members of one check share it) and in a worker of the member's own; `unchecked` says
        why the functions left out are."""
        started = time.monotonic()
        deadline = started + seconds
        skipped = list(unchecked)
        if targets and seconds < MIN_SECONDS:
            return not_checked(SPENT)
        if not targets:
            why = "; ".join(skipped) if skipped else "the patch changes no public top-level function"
            return not_checked(why)
        tried: dict[str, int] = {REPLAYED: 0, CRASHED: 0, DRAWN: 0}
        checked: dict[str, list[str]] = {REPLAYED: [], CRASHED: [], DRAWN: []}
        unmakeable: list[str] = []
        unconfirmed: Behaviour | None = None
        try:
            if not original:
                original.append(stack.enter_context(self._worker(self.original)))
            with self._worker(variant) as mine:

                def ask(call: Call) -> tuple[Outcome, Outcome]:
                    return original[0].call(call), mine.call(call)

                for index, (how, profile) in enumerate(targets):
                    share = (deadline - time.monotonic()) / (len(targets) - index)
                    seed = (self.seed * 1_000_003 + int(variant.tree_hash[:12], 16)) % 2**32
                    try:
                        until = time.monotonic() + share
                        if how == REPLAYED:
                            search = replay_difference(profile, ask, deadline=until)
                        elif how == DRAWN:
                            search = search_difference(profile, ask, seed=seed, deadline=until)
                        else:  # what the failing tests' own calls raise on the variant is no crash
                            expected = expected_errors(profile, ask, deadline=until)
                            search = search_difference(profile, ask, seed=seed, deadline=until, crashes_only=True,
                                                       expected=expected)  # fmt: skip
                    except UnmakeableError as error:
                        unmakeable.append(f"{profile.key.partition(':')[2]}: {error}")
                        continue
                    tried[how] += search.tried
                    checked[how].append(profile.key)
                    if search.difference is not None:
                        found = sorted(search.found.values(), key=lambda difference: len(difference.call.key()))
                        functions = tuple(dict.fromkeys(key for keys in checked.values() for key in keys))
                        verdict = self._confirmed(variant, profile, [search.difference, *found], sum(tried.values()),
                                                  functions)  # fmt: skip
                        if verdict is not None:
                            verdict = replace(verdict, why=f"{WHERE[how]}{verdict.why}")
                        if verdict is not None and verdict.verdict == CHANGED:
                            return _timed(verdict, started)
                        unconfirmed = unconfirmed or verdict
                    if search.cut_short:
                        skipped.append(f"{profile.key.partition(':')[2]}: the time ran out after {search.tried} calls")
        except OracleError as error:
            self.warnings.append(f"tests.oracle: {error}")
            return not_checked(str(error), time.monotonic() - started)
        skipped += unmakeable
        if unconfirmed is not None:
            return _timed(unconfirmed, started)
        functions = tuple(dict.fromkeys(key for keys in checked.values() for key in keys))
        if not functions:
            return not_checked("; ".join(skipped), time.monotonic() - started)
        said = []
        for how in (REPLAYED, DRAWN, CRASHED):
            if checked[how]:
                names = ", ".join(key.partition(":")[2] for key in checked[how])
                said.append(SEARCHED[how].format(tried=tried[how], names=names))
        why = "; ".join(said) + (f" ({'; '.join(skipped)})" if skipped else "")
        return Behaviour(SAME, sum(tried.values()), None, why, functions, time.monotonic() - started)

    @contextmanager
    def _worker(self, variant: Variant) -> Iterator[OracleWorker]:
        with self.evaluator.oracle_copy(variant) as sandbox:
            worker = OracleWorker(sandbox, self.evaluator.settings.pytest, self.modules)
            try:
                yield worker
            finally:
                worker.stop()

    def _confirmed(
        self,
        variant: Variant,
        profile: FunctionProfile,
        differences: Sequence[Difference],
        tried: int,
        checked: Sequence[str],
    ) -> Behaviour | None:
        """The verdict "changed" with the first of `differences` whose counterexample pytest
        confirms (or, when gi cannot write it as a test, with the difference in words); when
        pytest confirms none, "not checked" and why (a result that depends on state or chance),
        or None when each was a call that only ran out of the oracle's time on the variant (a
        loaded machine, not a change)."""
        seen: set[str] = set()
        unconfirmed: Behaviour | None = None
        for difference in differences:
            if difference.call.key() in seen or len(seen) >= CONFIRMATIONS:
                continue
            seen.add(difference.call.key())
            module = difference.call.module
            if difference.crash:
                test = crash_counterexample(difference.call, difference.original, import_from=module)
            else:
                test = counterexample(difference.call, profile.positional_names, difference.original,
                                      difference.variant, import_from=module)  # fmt: skip
            said = _words(difference)
            if test is None:
                unconfirmed = unconfirmed or Behaviour(CHANGED, tried, None, said + " (gi cannot write it as a test)",
                                                       tuple(checked), confirmed=None)  # fmt: skip
                continue
            confirmed = self._passes(self.original, test) and not self._passes(variant, test)
            if confirmed:
                return Behaviour(CHANGED, tried, test, said, tuple(checked), confirmed=True)
            if "timed_out" not in difference.variant:
                unconfirmed = unconfirmed or Behaviour(
                    NOT_CHECKED,
                    tried,
                    test,
                    f"{said} in the oracle's processes, but pytest did not confirm it (a result that depends on"
                    " earlier calls or on chance?)",
                    tuple(checked),
                    confirmed=False,
                )
        return unconfirmed

    def _passes(self, variant: Variant, test: str) -> bool:
        run = self.evaluator.test_file(variant, COUNTEREXAMPLE_FILE, test)
        return bool(run.outcomes) and not run.forged and all(o in NOT_FAILING for o in run.outcomes.values())


def _words(difference: Difference) -> str:
    call = call_source(difference.call) or difference.call.name
    return f"{call} {describe(difference.original)} on the original, {describe(difference.variant)} on the variant"


def _timed(behaviour: Behaviour, started: float) -> Behaviour:
    return replace(behaviour, seconds=time.monotonic() - started)
