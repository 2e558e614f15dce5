"""tests.oracle_feedback: the behaviour oracle's counterexamples join the held-out tests during a
run (gi.engine.oracle)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gi.engine.held_out import HeldOut
from gi.engine.oracle import Oracle, unchecked_because
from gi.engine.recorded import Measurements
from gi.fitness.oracle.search import CHANGED
from gi.model.patch import apply
from gi.model.results import Evaluation
from gi.populations import Individual

#: Where a counterexample found during the run goes among the held-out tests (tests.oracle_feedback).
FEEDBACK_FILE = "gi_oracle/test_gi_oracle_{number}.py"


class OracleFeedback:
    """tests.oracle_feedback: after each generation, the oracle judges the front's new members
    (within tests.oracle_seconds a generation), and each counterexample pytest confirmed joins the
    held-out tests, so the held-out verdicts of the run (its generalisation gap, the front's) count
    it. The counterexamples are recorded (`oracle_counterexamples`): a resumed run has them too."""

    def __init__(self, oracle: Oracle, held_out: HeldOut, measurements: Measurements) -> None:
        self.oracle = oracle
        self.held_out = held_out
        self.measurements = measurements
        self.tests: list[str] = list(measurements.found("oracle_counterexamples") or [])
        self._install()

    def _install(self) -> None:
        self.held_out.extend(
            [(FEEDBACK_FILE.format(number=number), test) for number, test in enumerate(self.tests, start=1)]
        )

    def generation(
        self, new: Sequence[Individual], evaluations: Mapping[str, Evaluation], baseline: Evaluation
    ) -> None:
        """Judge the generation's new front members; add what was found to the held-out tests."""
        variants = [
            apply(self.oracle.program, member.patch)
            for member in new
            if member.tree_hash != self.oracle.original.tree_hash
            and member.tree_hash in evaluations
            and not unchecked_because(evaluations[member.tree_hash], baseline)
        ]
        if not variants:
            return
        verdicts = self.oracle.check(variants, seconds=self.oracle.seconds)
        found = [
            verdict.counterexample
            for verdict in verdicts.values()
            if verdict.verdict == CHANGED and verdict.confirmed and verdict.counterexample
        ]
        added = [test for test in dict.fromkeys(found) if test not in self.tests]
        if added:
            self.tests += added
            self.measurements.record("oracle_counterexamples", self.tests)
            self._install()
