"""The behaviour oracle of a run: each front member's changed functions, called on inputs the tests
never tried, against the original (gi.fitness.oracle).

The original's training tests are recorded (`record_calls`: the measurement `oracle_calls`);
with the original's coverage at hand, only those that run a function to check are (the
measurement `oracle_calls:<hash of their ids>`), and only until the functions to check have
their calls. For each front member, the functions its patch changes (directly or through what
they use; in a repair, less those the failing tests reach, which the repair is meant to change)
are called on calls Hypothesis draws; in a repair, the public functions the failing tests reach
are called on the calls the passing tests made of them, where the original was right, and then on
drawn calls for crashes alone (an error of the language, CRASHES, where the original does not
crash: whatever a repair's right result is, that is not it). A member is judged by `Judge`
(gi/engine/oracle_judge.py): each call is made in two sandboxed processes, one of the original's
copy and one of the member's (`OracleWorker`, gi/engine/oracle_process.py, running
fitness/sandboxed/oracle_worker.py); the first difference is shrunk, written as a pytest test,
and confirmed: the test must pass on the original and fail on the member when pytest runs it in
fresh copies, under gi's signed report. The verdicts are recorded
(`oracle:<tree hash>`), so a resumed or rewritten run keeps them; the time they take is bounded
by tests.oracle_seconds over the front.
"""

from __future__ import annotations

import ast
import json
import time
from collections.abc import Sequence
from contextlib import ExitStack
from hashlib import sha256
from typing import Any

from gi.engine.evaluation import Evaluator
from gi.engine.oracle_judge import CRASHED, DRAWN, MIN_SECONDS, REPLAYED, SPENT, Judge
from gi.engine.oracle_process import OracleWorker
from gi.engine.recorded import Measurements, as_is
from gi.fitness.oracle.changes import changed_functions
from gi.fitness.oracle.inputs import FunctionProfile
from gi.fitness.oracle.record import Recording, RecordingError
from gi.fitness.oracle.search import CHANGED, NOT_CHECKED, SAME, Behaviour, not_checked
from gi.fitness.outcomes import regressions
from gi.fitness.selection import OUTSIDE_TESTS
from gi.fitness.tests import NOT_FAILING
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program, parse_quietly
from gi.model.results import Evaluation

#: The longest list of test ids (as JSON) the recording is given; past it, every test is recorded.
MAX_RECORDED_IDS = 100_000


class Oracle:
    """The behaviour oracle of one run (or study): the original's recorded calls, its worker, and
    each checked member's verdict."""

    def __init__(
        self,
        evaluator: Evaluator,
        measurements: Measurements | None,
        *,
        seconds: float,
        repairing: bool,
        seed: int = 0,
    ) -> None:
        """`repairing`: the original fails training tests, so the functions the failing tests
        reach are meant to change: they are checked only on the passing tests' calls, and for
        crashes (`targets`). `measurements`: where verdicts are
        recorded and found again (None: kept for this object's life)."""
        self.evaluator = evaluator
        self.program: Program = evaluator.program
        self.measurements = measurements
        self.seconds = seconds
        self.repairing = repairing
        self.seed = seed
        self.original = apply(self.program, Patch())
        self.verdicts: dict[str, Behaviour] = {}
        self.warnings: list[str] = []
        self.judge = Judge(evaluator, self.original, list(self.modules.values()), seed, self.warnings)
        #: Seconds the checks made so far took, of `seconds`, and the recording's (one run of the
        #: training tests under a hook, bounded by 3 x tests.timeout, not charged to the budget).
        self.spent = 0.0
        self.recording_seconds = 0.0
        self._recording: Recording | None = None
        self._recordings: dict[str, Recording] = {}
        self._reach: frozenset[str] | None = None
        self._changed: dict[tuple[str, frozenset[str]], dict[str, str]] = {}

    @property
    def modules(self) -> dict[str, str]:
        """Each editable file's module name."""
        return {file: module for module, file in self.evaluator.settings.pytest.modules}

    def recording(self, tests: Sequence[str] | None = None, watch: Sequence[str] | None = None) -> Recording:
        """The original's training tests' calls, of every test or only of `tests` (node ids),
        recorded once, then read from the store; with `watch` (functions, "module:name"), only
        until each of them has its calls."""
        if tests is None and watch is None:
            key = "oracle_calls"
        elif watch is None:
            key = f"oracle_calls:{sha256(json.dumps(sorted(tests or ())).encode()).hexdigest()[:16]}"
        else:
            which = {"tests": None if tests is None else sorted(tests), "watch": sorted(watch)}
            key = f"oracle_calls:{sha256(json.dumps(which, sort_keys=True).encode()).hexdigest()[:16]}"
        if key not in self._recordings:

            def record() -> dict[str, Any]:
                started = time.monotonic()
                try:
                    return self.evaluator.record_calls(self.original, only=tests, watch=watch)
                finally:
                    self.recording_seconds += time.monotonic() - started

            found = (
                record()
                if self.measurements is None
                else self.measurements.get(key, record, encode=as_is, decode=as_is)
            )
            self._recordings[key] = Recording.from_json(found)
        self._recording = self._recordings[key]
        return self._recording

    def functions_to_check(self, variants: Sequence[Variant]) -> set[str]:
        """The functions ("module:name") the oracle checks on `variants`. Raises RecordingError."""
        meant = self._meant()
        wanted: set[str] = set()
        for variant in variants:
            wanted |= set(self._changes(variant, meant))
            wanted |= set(self._kept(variant))
        return wanted

    def tests_to_record(self, variants: Sequence[Variant]) -> list[str] | None:
        """The training tests that ran a line of a function the oracle checks on `variants`, by
        the original's coverage (only they call it, so only they give it inputs); None when there
        is no coverage, or when their ids are too long to pass (every test is recorded)."""
        coverage = self.evaluator.coverage
        if coverage is None:
            return None
        wanted = self.functions_to_check(variants)
        tests: set[str] = set()
        for file, module in self.modules.items():
            lines = coverage.lines.get(file, {})
            for node in parse_quietly(self.original.sources[file]).body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and f"{module}:{node.name}" in wanted:
                    for line in range(node.body[0].lineno, (node.end_lineno or node.lineno) + 1):
                        tests |= lines.get(line, frozenset())
        tests.discard(OUTSIDE_TESTS)
        return sorted(tests) if len(json.dumps(sorted(tests))) <= MAX_RECORDED_IDS else None

    def check(self, variants: Sequence[Variant], seconds: float | None = None) -> dict[str, Behaviour]:
        """The verdict of each variant (by tree hash): what is left of the budget (or `seconds`)
        is shared over those not judged yet; verdicts recorded earlier are taken as they are."""
        started, recorded_before = time.monotonic(), self.recording_seconds
        budget = self.seconds - self.spent if seconds is None else seconds
        missing = []
        for variant in {v.tree_hash: v for v in variants}.values():
            known = self._known(variant.tree_hash)
            if known is not None:
                self.verdicts[variant.tree_hash] = known
            elif variant.tree_hash == self.original.tree_hash:
                self.verdicts[variant.tree_hash] = not_checked("the original program")
            else:
                missing.append(variant)
        try:
            for variant in list(missing):
                if why := self._nothing_to_check(variant):
                    self._keep(variant.tree_hash, not_checked(why))
                    missing.remove(variant)
            if budget < MIN_SECONDS:
                for variant in missing:
                    self._keep(variant.tree_hash, not_checked(SPENT))
                missing = []
            recording = self._recording_for(missing) if missing else None
        except RecordingError as error:
            why = f"the training tests' calls could not be recorded ({error})"
            self.warnings.append(f"tests.oracle: {why}")
            for variant in missing:
                self._keep(variant.tree_hash, not_checked(why))
            missing, recording = [], None
        if recording is not None:
            begun = time.monotonic()  # the recording is not charged to the budget
            with ExitStack() as stack:
                original: list[OracleWorker] = []
                for index, variant in enumerate(missing):
                    share = (budget - (time.monotonic() - begun)) / (len(missing) - index)
                    targets, unchecked = self.targets(variant, recording), self.unchecked(variant, recording)
                    verdict = self.judge.member(variant, targets, unchecked, original, stack, share)
                    self._keep(variant.tree_hash, verdict)
        self.spent += time.monotonic() - started - (self.recording_seconds - recorded_before)
        return {variant.tree_hash: self.verdicts[variant.tree_hash] for variant in variants}

    def _recording_for(self, variants: Sequence[Variant]) -> Recording:
        """The recording the checks of `variants` need: the tests that run their changed
        functions, until the functions their patches edit have their calls (those that only use
        an edited one are checked on drawn calls after them, and one the tests seldom call would
        keep the hook on to the end). A repair without coverage has recorded every test whole to
        learn the failing tests' reach, and reads that. Raises RecordingError."""
        tests = self.tests_to_record(variants)
        if self.repairing and tests is None:
            return self.recording()
        meant = self._meant()
        edited: set[str] = set()
        for variant in variants:
            changed = self._changes(variant, meant)
            edited |= {key for key, why in changed.items() if not why.startswith("uses ")} | set(self._kept(variant))
        return self.recording(tests, sorted(edited) or None)

    def _meant(self) -> frozenset[str]:
        """The functions a repair is meant to change, those its failing tests reach (none outside
        a repair): from the recording once it is made, else from the original's coverage by the
        training tests, else the recording is made. Raises RecordingError."""
        if self._reach is None:
            if not self.repairing:
                self._reach = frozenset()
            else:
                reach = self._reach_from_coverage() if self._recording is None else None
                self._reach = reach if reach is not None else self.recording().failing_reach
        return self._reach

    def _reach_from_coverage(self) -> frozenset[str] | None:
        """The top-level functions ("module:name") with a line a failing training test ran, by the
        original's coverage (None when the run has none)."""
        coverage, outcomes = self.evaluator.coverage, self.evaluator.baseline_tests
        if coverage is None or outcomes is None:
            return None
        failing = {test for test, outcome in outcomes.items() if outcome not in NOT_FAILING}
        reached = set()
        for file, module in self.modules.items():
            lines = {line for line, tests in coverage.lines.get(file, {}).items() if tests & failing}
            for node in parse_quietly(self.original.sources[file]).body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    last = node.end_lineno or node.lineno
                    if any(node.lineno <= line <= last for line in lines):
                        reached.add(f"{module}:{node.name}")
        return frozenset(reached)

    def _nothing_to_check(self, variant: Variant) -> str:
        """Why the oracle has nothing to check on a variant ("": it has). Raises RecordingError."""
        public = self._public_changes(variant)
        if not public:
            return "the patch changes no public top-level function"
        meant = self._meant()
        changed = self._changes(variant, meant)
        if any(not key.partition(":")[2].startswith("_") for key in changed) or self._kept(variant):
            return ""
        reached = [key.partition(":")[2] for key in public if key in meant]
        return (
            "; ".join(f"{name}: the failing tests reach it" for name in reached)
            or "it changes only what the failing tests reach"
        )

    def _known(self, tree_hash: str) -> Behaviour | None:
        if tree_hash in self.verdicts:
            return self.verdicts[tree_hash]
        if self.measurements is not None:
            found = self.measurements.found(f"oracle:{tree_hash}")
            if found is not None:
                return Behaviour.from_json(found)
        return None

    def _keep(self, tree_hash: str, behaviour: Behaviour) -> None:
        """Keep a verdict, and record it but when only the budget kept it from being made (a
        run judged again with more time judges that member)."""
        self.verdicts[tree_hash] = behaviour
        if self.measurements is not None and behaviour.why != SPENT:
            self.measurements.record(f"oracle:{tree_hash}", behaviour.to_json())

    def _changes(self, variant: Variant, meant: frozenset[str] = frozenset()) -> dict[str, str]:
        """`changed_functions` of a variant (the functions `meant` to change left out), worked out
        once per variant: each check of a member asks for it several times."""
        key = (variant.tree_hash, meant)
        if key not in self._changed:
            self._changed[key] = changed_functions(self.original.sources, variant.sources, self.modules, meant)
        return self._changed[key]

    def _public_changes(self, variant: Variant) -> list[str]:
        """The public top-level functions the variant changes (known without the recording)."""
        changed = self._changes(variant)
        return [key for key in changed if not key.partition(":")[2].startswith("_")]

    def _kept(self, variant: Variant) -> list[str]:
        """In a repair, the public functions the variant changes that the failing tests reach: on
        the calls the passing tests make of them, the original's behaviour was right (those tests
        pass), so a repair keeps it there."""
        if not self.repairing:
            return []
        meant = self._meant()
        return [key for key in self._public_changes(variant) if key in meant]

    def targets(self, variant: Variant, recording: Recording) -> list[tuple[str, FunctionProfile]]:
        """How each function the oracle checks on a variant is checked, in the order it is:
        REPLAYED, on the passing training tests' calls of a function a repair's failing tests
        reach (`_kept`); DRAWN, every other function the patch changes, on drawn calls, those it
        edits first; CRASHED, each function the failing tests reach, on drawn calls, for crashes
        alone (the weakest check, last)."""
        meant = self._meant()
        changed = self._changes(variant, meant)
        kept, crashed = [], []
        for key in self._kept(variant):
            profile = recording.functions.get(key)
            if profile is not None:
                crashed.append((CRASHED, profile))
                if profile.passing_calls:
                    kept.append((REPLAYED, profile))
        chosen: list[tuple[bool, FunctionProfile]] = []
        for key, why in changed.items():
            profile = recording.functions.get(key)
            if profile is not None and not key.partition(":")[2].startswith("_"):
                chosen.append((why != "edited", profile))
        drawn = [(DRAWN, profile) for _, profile in sorted(chosen, key=lambda item: item[0])]
        return [*kept, *drawn, *crashed]

    def unchecked(self, variant: Variant, recording: Recording) -> list[str]:
        """Why functions the variant changes are not checked: the recording, which lists every
        public function of the editable modules, has not got them."""
        keys = dict.fromkeys([*self._kept(variant), *self._changes(variant, self._meant())])
        names = [key.partition(":")[2] for key in keys if key not in recording.functions]
        return [f"{name}: not importable from its module" for name in names if not name.startswith("_")]

    def section(self, behaviours: Sequence[Behaviour | None], mode: str) -> dict[str, Any]:
        """summary.json's `oracle`: the mode, the budget, the time taken and the verdicts' counts."""
        judged = [behaviour for behaviour in behaviours if behaviour is not None]
        recording = self._recording
        return {
            "mode": mode,
            "budget_seconds": self.seconds,
            "seconds": round(self.spent + self.recording_seconds, 3),
            "recording_seconds": round(self.recording_seconds, 3),
            "same": sum(behaviour.verdict == SAME for behaviour in judged),
            "changed": sum(behaviour.verdict == CHANGED for behaviour in judged),
            "not_checked": sum(behaviour.verdict == NOT_CHECKED for behaviour in judged),
            "functions_recorded": len(recording.functions) if recording is not None else None,
            "tests_recorded": recording.passed + recording.failed if recording is not None else None,
        }


def unchecked_because(evaluation: Evaluation, baseline: Evaluation) -> str:
    """Why a program is not for the oracle ("": it is): one that fails a training test the
    original passes already behaves otherwise, and the training tests say where; one whose
    evaluation ran only the tests selected by coverage (tests.select) is not known to pass the
    others (its other outcomes are the original's), until every test confirmed it."""
    if not evaluation.ok or regressions(evaluation.tests, baseline.tests):
        return "it fails training tests the original passes"
    if evaluation.partial:
        return "only the training tests selected by coverage ran on it (no confirmation by every test)"
    return ""
