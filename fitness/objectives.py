"""Objectives: named numbers with a direction, each owning the measure it reads.

An objective says what it measures (`measure`: a `gi.fitness.measures.Measure`, which says what
its value depends on and how gi computes it), its direction, and its worst value worth keeping
(`bound`, from the run's facts; without one, the original's value 10% and one worse): the
reference point of the hypervolume and the value of a variant that was not measured. The
engine iterates a run's objectives and caches each value by what its measure declares, so a
new objective is a registration here, not an edit of the engine.

A user's objective is a function named by dotted path in `objectives.minimize` (or
`maximize`), "module:function" importable from the config's folder: called with the variant
(its `sources`, file name to text) in gi's own process, returning a number; a variant it
raises on, or returns no number for, gets the worst value.

Direction is settled here and only here: DEAP weights are -1.0 for minimise and +1.0 for
maximise, and `minimised` turns any value into the "smaller is better" form used for
hypervolume and reference points.
"""

from __future__ import annotations

import enum
import hashlib
import importlib
import importlib.util
import math
import numbers
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from gi.fitness.measures import MEASURES, Basis, Measure
from gi.model.patch import Variant
from gi.model.program import compiler_warnings_ignored
from gi.model.registry import Registry


class Direction(enum.StrEnum):
    MINIMIZE = "minimize"
    MAXIMIZE = "maximize"


@dataclass(frozen=True)
class Bounds:
    """What an objective's worst value worth keeping may depend on."""

    #: Training tests the original's run collects.
    test_count: int
    #: The longest patch the search keeps (search.max_edits).
    max_edits: int
    #: The original program's measures.
    baseline: Mapping[str, float]


@dataclass(frozen=True)
class Objective:
    """One objective: its name, direction, what it means, the measure it reads and its bound."""

    name: str
    direction: Direction
    description: str
    #: What the objective's value is: a measure of the variant, under the objective's name.
    measure: Measure
    #: Its worst value worth keeping, in minimised form; None: unbounded (see `reference`).
    bound: Callable[[Bounds], float] | None = None
    #: The other measures of the original that `bound` reads (`Bounds.baseline`).
    reads: tuple[str, ...] = ()

    @property
    def basis(self) -> Basis:
        """What the objective's value depends on (and is cached by)."""
        return self.measure.basis

    @property
    def weight(self) -> float:
        """DEAP's weight: negative to minimise, positive to maximise."""
        return -1.0 if self.direction is Direction.MINIMIZE else 1.0

    def minimised(self, value: float) -> float:
        """The value in "smaller is better" form."""
        return value if self.direction is Direction.MINIMIZE else -value

    def from_minimised(self, value: float) -> float:
        return value if self.direction is Direction.MINIMIZE else -value

    def reference(self, bounds: Bounds) -> float:
        """The reference point's coordinate, in minimised form: worse than any variant worth
        keeping. Bounded objectives take their bound; the others the original's value 10% and
        one worse, so that a variant no better than the original adds no hypervolume there."""
        if self.bound is not None:
            return self.bound(bounds)
        base = self.minimised(bounds.baseline[self.name])
        return base + abs(base) * 0.1 + 1.0


def _installed_objective(name: str, item: object) -> Objective:
    """An installed package's objective (entry point `gi.objectives`), as OBJECTIVES holds it;
    ValueError says what is wrong with it. Its measure is gi's (a registered one) or computed in
    gi's process, as a user's function is."""
    if not isinstance(item, Objective):
        raise ValueError(f"not an objective but {type(item).__name__}: give a gi.fitness.Objective and its Measure")
    if item.name != name or item.measure.name != name:
        raise ValueError(f"the objective and its measure must be named {name!r} (they are {item.name!r},"
                         f" {item.measure.name!r})")  # fmt: skip
    known = MEASURES.get(name) if name in MEASURES else None
    if known is not None and known is not item.measure:
        raise ValueError(f"gi has a measure {name!r} of its own")
    if known is None and item.measure.compute is None:
        raise ValueError("its measure has no compute(variant): gi takes an installed objective's measure itself")
    return item


#: Every objective a config can name: gi's, and those installed packages declare in the
#: entry-point group `gi.objectives`.
OBJECTIVES: Registry[Objective] = Registry("objective", "gi.objectives", _installed_objective)
for _objective in (
    Objective(
        "failed_tests", Direction.MINIMIZE,
        "training tests that do not pass (a test the original skips does not count)", MEASURES.get("failed_tests"),
        lambda bounds: float(bounds.test_count + 1),
    ),
    Objective(
        "passed_tests", Direction.MAXIMIZE, "training tests that pass", MEASURES.get("passed_tests"),
        lambda bounds: 1.0,  # minimised: -passed, worst -0
    ),
    Objective(
        "complexity", Direction.MINIMIZE, "total cyclomatic complexity of the edited files (radon)",
        MEASURES.get("complexity"),
    ),
    Objective(
        "maintainability", Direction.MAXIMIZE, "mean maintainability index of the edited files (radon)",
        MEASURES.get("maintainability"), lambda bounds: 1.0,  # minimised: -MI, worst -0
    ),
    Objective(
        "halstead_volume", Direction.MINIMIZE, "total Halstead volume of the edited files (radon)",
        MEASURES.get("halstead_volume"),
    ),
    Objective(
        "style", Direction.MINIMIZE, "PEP 8 violations in the edited files (pycodestyle, lines up to 100)",
        MEASURES.get("style"),
    ),
    Objective(
        "size", Direction.MINIMIZE, "edits of the patch that take effect", MEASURES.get("size"),
        lambda bounds: float(bounds.max_edits + 1),
    ),
    Objective(
        "diff_lines", Direction.MINIMIZE, "lines the patch adds or removes", MEASURES.get("diff_lines"),
        lambda bounds: float(max(1.0, bounds.baseline.get("source_lines", 0.0)) * 2 + 1), ("source_lines",),
    ),
    Objective(
        "runtime", Direction.MINIMIZE,
        "the workload's time over the original's (screening timings with pyperf; the original is 1)",
        MEASURES.get("runtime"),
    ),
):  # fmt: skip
    OBJECTIVES.add(_objective.name, _objective)


def measures_read(objectives: Sequence[Objective]) -> frozenset[str]:
    """The measures a run on these objectives takes: each objective's own and those its bound
    reads of the original. gi computes no other (radon's maintainability index and pycodestyle,
    taken of every variant, cost more than the cyclomatic complexity a run of "complexity" reads)."""
    return frozenset(name for objective in objectives for name in (objective.measure.name, *objective.reads))


# --- a user's objective ---------------------------------------------------------------------------


def is_user_objective(name: str) -> bool:
    """Whether a config's objective name is a user's function ("module:function")."""
    return ":" in name


class UserFunction:
    """A user's objective function, called in gi's process on a variant. A call that raises or
    gives no finite number gives None (the variant takes the objective's worst value); the
    last such problem is kept, to be said where the original gets no value."""

    def __init__(self, name: str, function: Callable[[Variant], object]) -> None:
        self.name = name
        self.function = function
        self.problem: str | None = None
        self._lock = threading.Lock()

    def __call__(self, variant: Variant) -> float | None:
        try:
            with compiler_warnings_ignored():  # it may parse the variant: see `Measure.take`
                value = self.function(variant)
        except Exception as error:  # the user's code on a variant: a result, never a crash
            self._fails(f"raised {type(error).__name__}: {error}")
            return None
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
            self._fails(f"returned {value!r}, not a finite number")
            return None
        return float(value)

    def _fails(self, problem: str) -> None:
        with self._lock:
            self.problem = problem


def load_function(spec: str, folder: Path) -> Callable[[Variant], object]:
    """The function "module:function" (a dotted attribute path after the colon): the module from
    `folder` when it is there (it wins over an installed module of the same name), else an
    importable one; ValueError says what is wrong in one line."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"{spec!r} is not 'module:function'")
    sys.path.insert(0, str(folder))
    try:
        module = _import_from(folder, module_name)
    except Exception as error:  # the user's module: any error in it is the config's problem
        raise ValueError(f"cannot import {module_name!r} from {folder} ({type(error).__name__}: {error})") from None
    finally:
        sys.path.remove(str(folder))
    found: object = module
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise ValueError(f"{module_name} has no {attribute!r}")
        found = getattr(found, part)
    if not callable(found):
        raise ValueError(f"{spec} is not a function")
    return found


def _import_from(folder: Path, module_name: str) -> ModuleType:
    """`module_name` as the file or package in `folder` holds it, imported under a private name of
    its own (so neither a module of that name imported before, nor a later import of the bare name,
    can be confused with it); an importable module when `folder` has none of that name."""
    top, _, rest = module_name.partition(".")
    package = folder / top / "__init__.py"
    location = package if package.is_file() else folder / f"{top}.py"
    if not location.is_file():
        return importlib.import_module(module_name)
    digest = hashlib.sha256(str(location.resolve()).encode()).hexdigest()[:12]
    private = f"_gi_config_{digest}_{top}"
    if private not in sys.modules:
        search = [str(location.parent)] if location == package else None
        module_spec = importlib.util.spec_from_file_location(private, location, submodule_search_locations=search)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[private] = module
        try:
            module_spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[private]
            raise
    return importlib.import_module(f"{private}.{rest}" if rest else private)


def user_objective(spec: str, direction: Direction, folder: Path) -> Objective:
    """The objective a config names by a function's dotted path, with its measure (text of the
    variant's files) computed by that function; unbounded (see `Objective.reference`)."""
    function = UserFunction(spec, load_function(spec, folder))
    description = f"{spec}(variant), the user's function, run in gi's process on the variant's text"
    return Objective(spec, direction, description, Measure(spec, Basis.TEXT, description, function))


def recorded_objective(name: str, direction: str) -> Objective:
    """An objective as a run folder records it (name and direction), for reading its figures:
    the registered one, or a user's without its function."""
    if name in OBJECTIVES:
        return OBJECTIVES.get(name)
    return Objective(name, Direction(direction), "a user's objective", Measure(name, Basis.TEXT, "a user's function"))


# --- values and constraints ---------------------------------------------------------------------


class Constraint(enum.StrEnum):
    """What makes a variant feasible. Infeasible variants lose to feasible ones (Deb's rule)."""

    TRAIN_PASS = "train_pass"  # every training test passes
    NONE = "none"  # any variant that runs; for repair, where the original fails tests


def violation(constraint: Constraint, measures: Mapping[str, float], *, ok: bool, test_count: int) -> float:
    """How far a variant is from feasible (0 when feasible); a broken variant is worst of all."""
    if not ok:
        return float(test_count + 1)
    # A workload that fails, or returns other than the original did, breaks the behaviour.
    broken_workload = measures.get("workload_failed", 0.0) + measures.get("output_differs", 0.0)
    if constraint is Constraint.TRAIN_PASS:
        return float(measures.get("failed_tests", test_count + 1)) + broken_workload
    return broken_workload


def reference_point(
    objectives: Sequence[Objective], baseline: Mapping[str, float], *, test_count: int, max_edits: int
) -> tuple[float, ...]:
    """A point, in minimised form, worse than any variant worth keeping; taken from the baseline
    by each objective (`Objective.reference`)."""
    bounds = Bounds(test_count, max_edits, baseline)
    return tuple(objective.reference(bounds) for objective in objectives)


def objective_values(
    objectives: Sequence[Objective], measures: Mapping[str, float], worst: Sequence[float]
) -> tuple[float, ...]:
    """The objective vector of a variant; a measure not taken (a variant that failed the tests
    is not timed) counts as the worst value, given in each objective's own direction."""
    return tuple(
        float(measures[objective.name]) if objective.name in measures else bad
        for objective, bad in zip(objectives, worst, strict=True)
    )
