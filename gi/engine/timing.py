"""The original program's timings during a run: the engine's side of the runtime objective.

The evaluator scores a variant's runtime against `Evaluator.baseline_timing`; this module
keeps that baseline honest and uses the workload for the rest of the run:

    start          the original's output (for check_output) and first timing; its loop count
                   is kept for the run
    remeasure      the original again each generation (drift), so ratios use the nearest baseline
    hot_functions  cProfile of the workload on the original -> a weight for each function
    speedup        the rigorous re-measurement of a front member (speedup_over: against a
                   member whose patch is part of its own)

Each is a recorded measurement (gi.engine.recorded): a resumed run and a replay take the recorded value.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from gi.config import Config
from gi.engine.evaluation import Evaluator
from gi.engine.recorded import Measurements, as_is
from gi.fitness.objectives import Constraint
from gi.fitness.oracle.record import RecordingError
from gi.fitness.runtime import RIGOROUS, SCREENING, ForgedTimingError, Timing, Workload, WorkloadError, loops_for
from gi.model.errors import ProgramError
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program, function_nodes, parse_quietly

#: Calls of the editable functions the behaviour check replays at most (the first the training
#: tests make): each timed process replays them too.
BEHAVIOUR_CASES = 100
#: How far apart (the slowest over the fastest) the original's screening processes may take
#: before a run warns that screening ratios are noise: further apart than the gains a search of
#: a few percent at a time needs to see (docs/guides/faster-code.md).
NOISY_SPREAD = 1.3
#: A speed-up beyond this is flagged as implausible rather than celebrated: more likely the
#: workload stopped doing its work than the code became that much faster.
IMPLAUSIBLE_SPEEDUP = 1000.0

#: The weight of a function the workload never enters (the hottest weighs 1): low, not zero,
#: so a cold function can still be edited.
COLD_WEIGHT = 0.02


def workload_settings(config: Config) -> dict[str, Any]:
    """The evaluator's workload settings from the [workload] section, if any."""
    section = config.workload
    if section is None:
        return {}
    return {
        "workload": Workload(call=section.call, command=tuple(section.command or ())),
        "check_output": section.check_output,
        "time_failing": config.objectives.constraint is not Constraint.TRAIN_PASS,
        "workload_timeout": section.timeout,
        "screening": dataclasses.replace(SCREENING, processes=section.screening_processes),
        "rigorous": dataclasses.replace(RIGOROUS, processes=section.rigorous_processes),
    }


def workload_functions(program: Program, call: str | None, elsewhere: str = "") -> frozenset[str]:
    """The functions of the editable files the search must never edit: the workload's entry
    point when it lives in an editable file, and the functions only it calls (directly or
    through each other). Editing those changes what is timed, not how fast the code is: a
    constant edit that turns `range(6000)` into `range(0)` inside the workload is no speed-up.

    A function some other code calls (other editable code, or `elsewhere`: the tests' text)
    stays editable; calls are matched by name, so a clash keeps a function editable.
    """
    if call is None:
        return frozenset()
    module, _, entry = call.partition(":")
    path = module.replace(".", "/")
    file = next((f for f in (f"{path}.py", f"{path}/__init__.py") if f in program.files), None)
    if file is None:
        return frozenset()
    calls: dict[str, set[str]] = {}  # qualified function (or "<module>" of a file) -> names it calls
    for source_file in program.files:
        tree = parse_quietly(program.sources[source_file], source_file)
        functions: dict[str, ast.AST] = dict(function_nodes(tree))
        for qualified, node in functions.items():
            calls[qualified] = _called_names(node)
        nested = {id(inner) for node in functions.values() for inner in ast.walk(node)}
        top = [node for node in ast.walk(tree) if id(node) not in nested]
        calls[f"<module {source_file}>"] = {name for node in top for name in _called_names(node, shallow=True)}
    excluded = {entry}
    changed = True
    while changed:
        changed = False
        for candidate in calls:
            if candidate in excluded or candidate.startswith("<"):
                continue
            name = candidate.rpartition(".")[2]
            callers = {caller for caller, names in calls.items() if name in names and caller != candidate}
            if callers and callers <= excluded and not re.search(rf"\b{re.escape(name)}\b", elsewhere):
                excluded.add(candidate)
                changed = True
    return frozenset(excluded)


def _called_names(node: ast.AST, *, shallow: bool = False) -> set[str]:
    """The names `node` calls or refers to as `f(...)`, `obj.f(...)` (or, shallow, only its own)."""
    walked = [node] if shallow else ast.walk(node)
    names = set()
    for inner in walked:
        if isinstance(inner, ast.Call):
            function = inner.func
            if isinstance(function, ast.Name):
                names.add(function.id)
            elif isinstance(function, ast.Attribute):
                names.add(function.attr)
        elif isinstance(inner, ast.Name):
            names.add(inner.id)  # passed as a value (map(f, ...), a callback): a use all the same
    return names


class OriginalTiming:
    """Times the original for one run and re-measures the front; a no-op without [workload]."""

    def __init__(self, config: Config, program: Program, evaluator: Evaluator, measurements: Measurements) -> None:
        self.config = config
        self.program = program
        self.evaluator = evaluator
        self.measurements = measurements
        #: What the run should say about its timings.
        self.warnings: list[str] = []

    @property
    def active(self) -> bool:
        """Whether variants are being timed (a workload, and the original timed)."""
        return self.config.workload is not None and self.evaluator.baseline_timing is not None

    def start(self, original: Variant) -> None:
        """The original's output and first timing; the loop count found then is kept for the run.
        The training tests' calls of editable functions are recorded for the behaviour check to
        replay, and the first timing's processes make the check too: only if they answer as the
        untimed check does is a variant that answers otherwise when timed scored as tampered."""
        if self.config.workload is None:
            return
        try:
            output = None
            if self.config.workload.check_output:
                if self.config.workload.call is not None:
                    self.evaluator.behaviour_cases = self._behaviour_cases(original)
                output = self.measurements.get("output:original", lambda: self._stable_output(original),
                                               encode=as_is, decode=as_is)  # fmt: skip
                if output is None:
                    self.warnings.append(
                        "workload.check_output: the original's workload gives different results from run to run"
                        " (randomness? time?), so behaviour is not checked; seed it to have it checked"
                    )
                self.evaluator.baseline_output = output
            timing = self._timing("timing:0", original, loops=None, untimed=output)
        except WorkloadError as error:
            raise ProgramError(f"{self.config.source}: [workload] on the original program: {error}") from None
        self.evaluator.baseline_timing = timing

    def _behaviour_cases(self, original: Variant) -> tuple[tuple[str, str, str], ...]:
        """The training tests' calls of the editable functions with literal arguments, recorded
        on the original (the first BEHAVIOUR_CASES), for the behaviour check to replay."""

        def record() -> list[list[str]]:
            try:
                return [case[:3] for case in self.evaluator.differential_cases(original, {})[:BEHAVIOUR_CASES]]
            except RecordingError as error:
                self.warnings.append(f"workload.check_output: no calls to replay in the behaviour check ({error})")
                return []

        cases = self.measurements.get("behaviour-cases", record, encode=as_is, decode=as_is)
        return tuple((str(module), str(name), str(arguments)) for module, name, arguments in cases)

    def _stable_output(self, original: Variant) -> str | None:
        """The workload's result on the original, or None when two runs of it disagree."""
        first = self.evaluator.output(original)
        return first if first == self.evaluator.output(original) else None

    def _timing(self, key: str, original: Variant, *, loops: int | None, untimed: str | None = None) -> Timing:
        """The original's screening timing recorded under `key` ("timing:<generation>", or
        "study-timing"); raises WorkloadError. Failures are recorded too (the run went on with
        the previous baseline), but the first timing's: without it the run cannot start. With
        `untimed` (the original's behaviour check), the timed processes make the check too, and
        whether they answered alike decides `Evaluator.timed_check`."""

        def measure() -> dict[str, Any]:
            try:
                if untimed is not None and self.config.workload is not None and self.config.workload.call:
                    timing, why = self.evaluator.audited_timing(original, untimed, loops=loops)
                    found = {"process_means": list(timing.process_means), "loops": timing.loops, "answered": why}
                    return found
                timing = self.evaluator.timing(original, loops=loops)
            except WorkloadError as error:
                if key == "timing:0":
                    raise  # nothing to record
                return {"error": str(error)}
            return {"process_means": list(timing.process_means), "loops": timing.loops}

        recorded = self.measurements.get(key, measure, encode=as_is, decode=as_is)
        if "error" in recorded:
            raise WorkloadError(recorded["error"])
        if "answered" in recorded:
            self.evaluator.timed_check = not recorded["answered"]
            if recorded["answered"]:
                self.warnings.append(
                    "workload.check_output: the original answers otherwise in its timed processes than untimed"
                    f" ({recorded['answered']}), so variants are not checked for it"
                )
        return Timing(tuple(recorded["process_means"]), int(recorded["loops"]))

    @property
    def drift(self) -> list[dict[str, float]]:
        """The original's screening timings of the run, {"generation", "seconds"} (summary.json
        runtime_drift): its median each generation it was measured."""
        timings = self.measurements.store.measurements("timing:")
        return [
            {"generation": int(key.partition(":")[2]), "seconds": float(np.median(value["process_means"]))}
            for key, value in sorted(timings.items(), key=lambda item: int(item[0].partition(":")[2]))
            if "error" not in value
        ]

    def noise(self) -> str:
        """`screening_noise` of the original's screening timings in this run."""
        return screening_noise(self.measurements.store.measurements("timing:"))

    def remeasure(self, generation: int) -> None:
        """Time the original again, so this generation's ratios do not inherit the machine's drift."""
        self._retime(f"timing:{generation}")

    def restudy(self) -> None:
        """Time the original again for the studies of a finished run (minimisation, ablation),
        which measure their programs themselves: their ratios are to an original timed beside
        them, not to the one generation 0 timed. Recorded once for the run, as `study-timing`."""
        self._retime("study-timing")

    def _retime(self, key: str) -> None:
        """Make a new timing of the original (under `key`) the baseline; on a failure, keep the
        previous one and go on."""
        if not self.active:
            return
        assert self.evaluator.baseline_timing is not None
        original = apply(self.program, Patch())
        try:
            timing = self._timing(key, original, loops=self.evaluator.baseline_timing.loops)
        except WorkloadError:
            return
        self.evaluator.baseline_timing = timing

    def hot_functions(self) -> dict[str, float]:
        """Weight of each function of the program: its share of the workload's time (cumulative,
        from cProfile, relative to the hottest), at least COLD_WEIGHT so cold code is not ruled
        out. Empty (every site weighs the same) unless profiling is on."""
        workload = self.config.workload
        wanted = workload.profile if workload is not None else False
        if (
            workload is None
            or wanted is False
            or (wanted == "auto" and "runtime" not in self.config.objectives.names())
        ):
            return {}
        try:
            spent = self.measurements.get(
                "profile",
                lambda: self.evaluator.profile(apply(self.program, Patch())),
                encode=lambda spent: [[file, line, seconds] for (file, line), seconds in sorted(spent.items())],
                decode=lambda rows: {(file, int(line)): float(seconds) for file, line, seconds in rows},
            )
        except WorkloadError as error:
            raise ProgramError(f"{self.config.source}: profiling the [workload] on the original: {error}") from None
        names = self.program.functions()
        hottest = max((seconds for key, seconds in spent.items() if key in names), default=0.0)
        if hottest <= 0:
            return {}
        weights = dict.fromkeys(names.values(), COLD_WEIGHT)
        for key, seconds in spent.items():
            if key in names:
                weights[names[key]] = max(COLD_WEIGHT, seconds / hottest)
        return weights

    def speedup(self, original: Variant, member: Variant) -> dict[str, Any]:
        """The rigorous re-measurement of a front member against the original, as summary.json
        gives it ({"error": ...} when the workload fails on it)."""
        return self._rigorous(original, member, f"speedup:{member.tree_hash}")

    def speedup_over(self, smaller: Variant, member: Variant) -> dict[str, Any]:
        """The rigorous speed-up of a front member over another whose patch is part of its own,
        timed side by side in one session: whether its other edits make it faster at all."""
        return self._rigorous(smaller, member, f"speedup:{member.tree_hash}:over:{smaller.tree_hash}")

    def _rigorous(self, base: Variant, member: Variant, key: str) -> dict[str, Any]:
        def measure() -> dict[str, Any]:
            assert self.evaluator.baseline_timing is not None
            loops = loops_for(self.evaluator.baseline_timing, self.evaluator.settings.rigorous)
            try:
                result = self.evaluator.rigorous(base, member, loops=loops, seed=self.config.experiment.seed)
            except ForgedTimingError as error:
                return {"error": str(error), "tampered": True}
            except WorkloadError as error:
                return {"error": str(error)}
            if result.value > IMPLAUSIBLE_SPEEDUP:
                return {**result.to_json(), "implausible": True}
            return result.to_json()

        return self.measurements.get(key, measure, encode=as_is, decode=as_is)


def riders(
    patches: Sequence[Patch],
    faster: Callable[[int, int], bool],
    better_elsewhere: Callable[[int, int], bool],
) -> dict[int, int]:
    """The front members whose extra edits ride along on timing noise: for each member `i` (by
    index) that some member `j` whose edits are a part of its own (the original's none among
    them) does as well as, the first such `j`. `i` does as well as `j` when `i` is not
    significantly faster than `j` (`faster(i, j)`, from a rigorous session of the two side
    by side) and no better on any objective that is not timed (`better_elsewhere(i, j)`): a
    patch that adds edits must earn them."""
    found: dict[int, int] = {}
    for i, patch in enumerate(patches):
        edits = set(patch.edits)
        smaller = [j for j, other in enumerate(patches) if j != i and set(other.edits) < edits]
        for j in sorted(smaller, key=lambda j: len(patches[j].edits)):
            if not faster(i, j) and not better_elsewhere(i, j):
                found[i] = j
                break
    return found


def screening_noise(timings: Mapping[str, Any]) -> str:
    """A warning when the original's screening processes in `timings` (recorded measurements,
    every generation's) took times further apart than NOISY_SPREAD, or "": a variant's screening
    ratio is then as uncertain, and the search may have missed a gain smaller than that."""
    means = [mean for value in timings.values() if "error" not in value for mean in value["process_means"]]
    if len(means) < 2 or max(means) <= NOISY_SPREAD * min(means):
        return ""
    return (
        f"workload: the original's screening processes took {min(means) * 1e3:.3g} to {max(means) * 1e3:.3g} ms"
        f" a call ({len(means)} processes, {max(means) / min(means):.2f}x apart): a variant's screening ratio"
        " is as uncertain on this machine, so the search may have missed smaller gains. The front's"
        " rigorous re-measurement says what is faster; workload.screening_processes, or a quieter"
        " machine, gives screening more power"
    )
