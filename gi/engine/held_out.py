"""Held-out tests during the run: the generalisation gap over time.

After every generation, the front's new members (the archive's feasible members whose
programs were not on it after the previous generation) also run the held-out tests, and the
generation records how many were checked and how many overfit (`gi.fitness.outcomes.overfits`, the
one definition). The original program is never counted: it cannot overfit, and it is on the
front of every run that minimises patch size, so counting it would only dilute the rate. A
generation that checked no program records a rate of null (nothing was measured), not 0.
The outcomes go to the run store, never to the search: selection reads only the training
evaluations, so a run with held-out tests selects exactly what the same run without them
selects. The final front reuses these outcomes (a cache by tree hash). The original's held-out
run is cold (the reference); the others run in warm workers that hold the held-out tests when
the training tests run warm and a warm run of the original agrees with the cold one
(`HeldOut.check_warm`), cold otherwise.

Held-out tests are tests.holdout's paths, the tests tests.holdout_fraction splits off the
training tests (`held_out_split`), and the checks tests.differential generates
(`gi.fitness.differential`); `configure_held_out` sets the last two up on the original, the
split from the test ids pytest collects on the cold path (the reference, whatever the engine).

No variant may read a held-out test while it is trained (a model that reads the test file
could answer the held-out tests from a table of their expected values). So a suite of
FILES_TO_SPLIT test files or more is split by whole files, which stay out of every training
copy; a smaller one is split by test function within its files, and the training copies get
those files without the held-out functions (`without_tests`: their lines blanked, so line
numbers stay). summary.json's `holdout_split.by` says which ("files" or "tests").
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from gi.config import Config
from gi.engine.evaluation import Evaluator
from gi.engine.recorded import Measurements, as_is
from gi.engine.run_folder import gap_rate
from gi.engine.warm import disagreement
from gi.fitness.differential import TEST_FILE as DIFFERENTIAL_FILE
from gi.fitness.differential import checks_module
from gi.fitness.oracle.record import RecordingError
from gi.fitness.outcomes import merge_retry, overfits, per_test_limits
from gi.fitness.pytest_diagnosis import cannot_run
from gi.fitness.tests import TestRun
from gi.model.errors import ConfigError, ProgramError
from gi.model.patch import Patch, Variant, apply
from gi.model.program import parse_quietly
from gi.model.results import Evaluation
from gi.populations import Individual

#: Mixed with the run's seed for the split of test ids, so the split has a stream of its own.
SPLIT_STREAM = 13
#: A suite of this many test files or more is split by whole files.
FILES_TO_SPLIT = 5


def _function(test: str) -> str:
    """A test id's function: "tests/a.py::TestX::test_y[1]" -> "tests/a.py::TestX::test_y"."""
    return test.partition("[")[0]


def defined_tests(text: str) -> set[str]:
    """The test functions a test file defines where `without_tests` can take them out: "name"
    at its top, "Class::name" in its classes (nested too)."""
    try:
        tree = parse_quietly(text)
    except (SyntaxError, ValueError):
        return set()
    found: set[str] = set()

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.add(prefix + node.name)
            elif isinstance(node, ast.ClassDef):
                walk(node.body, f"{prefix}{node.name}::")

    walk(tree.body, "")
    return found


def without_tests(text: str, names: Iterable[str]) -> str:
    """A test file's `text` without the test functions `names` (as `defined_tests` names them):
    their lines, decorators included, blanked (line numbers stay), and `pass` in a class left
    with nothing else."""
    wanted = set(names)
    tree = parse_quietly(text)
    lines = text.splitlines(keepends=True)

    def blank(node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
        for number in range(first - 1, node.end_lineno or node.lineno):
            lines[number] = "\n" if lines[number].endswith("\n") else ""

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and prefix + node.name in wanted:
                blank(node)
            elif isinstance(node, ast.ClassDef):
                inner = f"{prefix}{node.name}::"
                walk(node.body, inner)
                defs = (ast.FunctionDef, ast.AsyncFunctionDef)
                kept = [item for item in node.body if not (isinstance(item, defs) and inner + item.name in wanted)]
                if not kept:
                    lines[node.body[0].lineno - 1] = " " * node.body[0].col_offset + "pass\n"

    walk(tree.body, "")
    return "".join(lines)


def held_out_split(ids: Iterable[str], fraction: float, seed: int, root: Path) -> dict[str, list[str] | str]:
    """The seeded split tests.holdout_fraction makes of the collected training test ids (files
    relative to `root`): {"train": ids, "holdout": ids, "by": "files" or "tests"}. Whole files
    when the suite has FILES_TO_SPLIT or more, held out until they hold the fraction of the ids
    (one file at least, one left); else test functions within the files, those `without_tests`
    can take out of a copy (one at least, one left). Raises ValueError when nothing can be held
    out unread."""
    ordered = sorted(set(ids))
    by_file: dict[str, list[str]] = {}
    for test in ordered:
        by_file.setdefault(test.partition("::")[0], []).append(test)
    rng = np.random.default_rng([seed, SPLIT_STREAM])
    if len(by_file) >= FILES_TO_SPLIT:
        files = sorted(by_file)
        held_files: list[str] = []
        for index in rng.permutation(len(files)).tolist():
            if held_files and len(held_files) + 1 == len(files):
                break
            if held_files and sum(len(by_file[file]) for file in held_files) >= fraction * len(ordered):
                break
            held_files.append(files[index])
        held = {test for file in held_files for test in by_file[file]}
        return {"train": [t for t in ordered if t not in held], "holdout": sorted(held), "by": "files"}
    functions = sorted({_function(test) for test in ordered})
    removable = []
    for file, tests in sorted(by_file.items()):
        try:
            defined = defined_tests((root / file).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
        removable += sorted({_function(t) for t in tests if _function(t).partition("::")[2] in defined})
    if len(functions) < 2 or not removable:
        raise ValueError(
            f"{len(functions)} test function(s), {len(removable)} of which a copy of its file could leave out"
        )
    count = min(len(functions) - 1, len(removable), max(1, round(fraction * len(functions))))
    chosen = {removable[index] for index in rng.choice(len(removable), size=count, replace=False).tolist()}
    held = {test for test in ordered if _function(test) in chosen}
    return {"train": [t for t in ordered if t not in held], "holdout": sorted(held), "by": "tests"}


def training_copies(root: Path, held: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """The test files that hold some of the `held` ids, as training copies get them: (path,
    text without those tests)."""
    names: dict[str, set[str]] = {}
    for test in held:
        file, _, name = _function(test).partition("::")
        names.setdefault(file, set()).add(name)
    return tuple((file, without_tests((root / file).read_text(encoding="utf-8"), wanted)) for file, wanted in
                 sorted(names.items()))  # fmt: skip


def configure_held_out(
    config: Config, evaluator: Evaluator, measurements: Measurements, original: Variant
) -> list[str]:
    """Set the evaluator's held-out side up as the config asks, beyond tests.holdout: the split
    of tests.holdout_fraction (test ids collected on the original) and the checks of
    tests.differential (recorded on the original). Both are recorded measurements, so a resumed
    run and a replay keep them. Returns warnings for the run."""
    warnings = []
    fraction = config.tests.holdout_fraction
    if fraction:
        root = evaluator.program.root

        def split_collected() -> dict[str, list[str] | str]:
            run = evaluator.collected(original)  # on the cold path: the reference, whatever the engine
            python = evaluator.settings.pytest.python
            if not run.outcomes and (problem := cannot_run(run, config.tests.train, python, config.tests.timeout)):
                raise ProgramError(f"{config.source}: the original's training tests cannot run: {problem}")
            collected = list(run.outcomes)
            if len(collected) < 2:
                raise ConfigError(
                    f"{config.source}: tests.holdout_fraction = {fraction:g}, but tests.train collects"
                    f" {len(collected)} test(s); a split needs at least 2"
                )
            try:
                return held_out_split(collected, fraction, config.experiment.seed, root)
            except ValueError as error:
                raise ConfigError(
                    f"{config.source}: tests.holdout_fraction = {fraction:g}: no test can be held out where no"
                    f" training run reads it ({error}); name a folder of held-out tests in tests.holdout instead"
                ) from None

        split = measurements.get("holdout_split", split_collected, encode=as_is, decode=as_is)
        held = tuple(split["holdout"])
        if split.get("by") == "files":
            files = tuple(sorted({test.partition("::")[0] for test in held}))
            evaluator.settings = dataclasses.replace(
                evaluator.settings, train=tuple(split["train"]), holdout=(*evaluator.settings.holdout, *files)
            )
        else:  # by tests within files: the training copies get those files without them
            evaluator.settings = dataclasses.replace(
                evaluator.settings, train=tuple(split["train"]), holdout_ids=held,
                training_files=training_copies(root, held),
            )  # fmt: skip
            evaluator.close()  # any warm worker started before holds the whole files: new ones will not
    if config.tests.differential:

        def record_cases() -> list[list[str]]:
            try:
                return evaluator.differential_cases(original, config.tests.differential_inputs)
            except RecordingError as error:
                raise ProgramError(f"{config.source}: tests.differential: {error}") from None

        cases = measurements.get("differential_cases", record_cases, encode=as_is, decode=as_is)
        if cases:
            evaluator.settings = dataclasses.replace(
                evaluator.settings,
                holdout=(*evaluator.settings.holdout, DIFFERENTIAL_FILE),
                holdout_files=((DIFFERENTIAL_FILE, checks_module(cases)),),
            )
        else:
            warnings.append(
                "tests.differential: the training tests call no public function of the editable files with literal"
                " arguments, and tests.differential_inputs lists none: there is no differential check"
            )
    return warnings


def front_members(members: Sequence[Individual]) -> list[Individual]:
    """What the report calls the front: the archive's feasible members, all of them if none is."""
    feasible = [member for member in members if member.fitness.feasible]
    return feasible or list(members)


class HeldOut:
    """The held-out tests of one run: the original's outcomes, and every program's, by tree hash."""

    def __init__(self, evaluator: Evaluator, measurements: Measurements | None, test_timeout: float) -> None:
        """`measurements`: where outcomes are recorded and found again, a replay's in the
        recorded run too (None: kept for this object's life, as for a suite `gi validate` brings)."""
        self.evaluator = evaluator
        self.measurements = measurements
        self.test_timeout = test_timeout
        self.runs: dict[str, tuple[dict[str, str], dict[str, float]]] = {}
        self.original = apply(evaluator.program, Patch())
        self._limits: dict[str, float] | None = None
        #: Names the held-out tests when tests were added during the run (`extend`), so runs of
        #: the former tests are not taken for runs of the new ones.
        self.suite = ""
        #: How the held-out tests run ("warm" or "cold") and why, once `check_warm` has decided.
        self.engine = ("cold", "no held-out test was there to run")
        self._engine_checked = False

    def extend(self, files: Sequence[tuple[str, str]]) -> None:
        """Add test files (path in a held-out copy, text) to the held-out tests: every program's
        held-out run, the original's included, is made again with them when next asked for."""
        settings = self.evaluator.settings
        known = {path for path, _ in settings.holdout_files}
        added = [(path, text) for path, text in files if path not in known]
        if not added:
            return
        self.evaluator.settings = dataclasses.replace(
            settings,
            holdout=(*settings.holdout, *(path for path, _ in added)),
            holdout_files=(*settings.holdout_files, *added),
        )
        digest = hashlib.sha256(json.dumps(sorted(self.evaluator.settings.holdout_files)).encode()).hexdigest()
        self.suite = digest[:12]
        self.runs.clear()
        self._limits = None
        self.evaluator.settings = dataclasses.replace(self.evaluator.settings, holdout_engine="cold")
        self._engine_checked = False  # the original runs cold again with the new tests, then warm is checked

    def _key(self, tree_hash: str) -> str:
        return f"holdout:{self.suite}:{tree_hash}" if self.suite else f"holdout:{tree_hash}"

    @property
    def baseline(self) -> dict[str, str]:
        """The original's held-out outcomes (run once, then read from the store)."""
        if not self._recorded(self.original.tree_hash):
            self._keep(self.original, self._measure(self.original, {}))
        return self.runs[self.original.tree_hash][0]

    def limits(self) -> dict[str, float]:
        """Each held-out test's time limit, from its time in the original's run."""
        if self._limits is None:
            self.baseline  # noqa: B018 (runs the original once)
            self._limits = per_test_limits(self.runs[self.original.tree_hash][1], self.test_timeout)
        return self._limits

    def check_warm(self) -> None:
        """Run the held-out tests in warm workers from now on, if the training tests run warm and
        a warm run of the original gives the held-out outcomes of its cold run (the reference);
        otherwise they stay cold. The verdict is recorded: a resumed run and a replay keep it."""
        evaluator = self.evaluator
        if self._engine_checked or not (evaluator.settings.holdout or evaluator.settings.holdout_ids):
            return  # decided, or nothing to run yet (the oracle's counterexamples may come)
        self._engine_checked = True
        if evaluator.settings.engine != "warm":
            self.engine = ("cold", "the training tests run cold")
            return
        cold, limits = self.baseline, self.limits()

        def agrees() -> dict[str, Any]:
            warm = evaluator.warm_holdout(self.original, limits)
            how = disagreement(cold, warm)
            return {"agrees": not how, "how": how}

        key = f"holdout_warm_check:{self.suite}" if self.suite else "holdout_warm_check"
        check = self.measurements.get(key, agrees, encode=as_is, decode=as_is) if self.measurements else agrees()
        if check["agrees"]:
            evaluator.settings = dataclasses.replace(evaluator.settings, holdout_engine="warm")
            self.engine = ("warm", "a warm run of the original gave the cold run's held-out outcomes")
        else:
            evaluator.close_holdout()
            self.engine = ("cold", f"the warm path gave the original other held-out outcomes ({check['how']})")

    def _measure(self, variant: Variant, limits: Mapping[str, float]) -> TestRun:
        """One held-out run; a test that timed out is run again before it counts. What a forged
        run says is not taken: each of its tests counts as an error (a variant that forges only
        where it is judged at the end must not pass for one that generalises)."""
        run = self.evaluator.holdout(variant, limits)
        if "timed_out" in run.outcomes.values() and not run.forged:
            run = merge_retry(run, self.evaluator.holdout(variant, limits))
        if run.forged:
            run = dataclasses.replace(run, outcomes=dict.fromkeys(run.outcomes, "error"))
        return run

    def _keep(self, variant: Variant, run: TestRun) -> None:
        self.runs[variant.tree_hash] = (dict(run.outcomes), dict(run.durations))
        if self.measurements is not None:
            self.measurements.record(
                self._key(variant.tree_hash), {"outcomes": run.outcomes, "durations": run.durations}
            )

    def _recorded(self, tree_hash: str) -> bool:
        """Whether the program's held-out run is known (found in the records, if not in memory)."""
        if tree_hash not in self.runs and self.measurements is not None:
            found = self.measurements.found(self._key(tree_hash))
            if found is not None:
                self.runs[tree_hash] = (found["outcomes"], found["durations"])
        return tree_hash in self.runs

    def outcomes(self, variants: Iterable[Variant]) -> list[dict[str, str]]:
        """The held-out outcomes of each variant; the programs not yet run are run in parallel."""
        variants = list(variants)
        limits = self.limits()
        missing = list({v.tree_hash: v for v in variants if not self._recorded(v.tree_hash)}.values())
        if missing:
            self.check_warm()
        with ThreadPoolExecutor(max_workers=max(1, self.evaluator.settings.workers)) as pool:
            runs = list(pool.map(lambda variant: self._measure(variant, limits), missing))
        for variant, run in zip(missing, runs, strict=True):
            self._keep(variant, run)
        return [self.runs[variant.tree_hash][0] for variant in variants]

    def generation(
        self,
        generation: int,
        new: Sequence[Individual],
        evaluations: Mapping[str, Evaluation],
        training_baseline: Mapping[str, str],
    ) -> dict[str, Any]:
        """Check the front's new members of one generation (the original aside); its record for the
        run store, with `rate` None when no member was checked."""
        new = [member for member in new if member.tree_hash != self.original.tree_hash]
        variants = [apply(self.evaluator.program, member.patch) for member in new]
        baseline = self.baseline
        flagged = [
            member.id
            for member, outcomes in zip(new, self.outcomes(variants), strict=True)
            if overfits(evaluations[member.tree_hash].tests, training_baseline, outcomes, baseline)
        ]
        return {
            "generation": generation,
            "checked": len(new),
            "overfit": len(flagged),
            "rate": round(len(flagged) / len(new), 4) if new else None,
            "members": [member.id for member in new],
            "overfitting": flagged,
        }


def generalisation_gap(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """summary.json's `generalisation_gap`: per generation, the front's new members checked on
    the held-out tests, how many overfit and their share (null when none was checked; a record
    from an older gi that wrote 0 then reads as null too)."""
    return [
        {**{key: record[key] for key in ("generation", "checked", "overfit")}, "rate": gap_rate(record)}
        for record in records
    ]
