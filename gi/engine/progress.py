"""What a run reports to a display after each evaluation and each generation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Progress:
    """What the engine reports to a display after each evaluation and each generation."""

    generation: int = 0
    generations: int = 0
    evaluations: int = 0
    cache_hits: int = 0
    #: Evaluations of this session a time limit decided (the whole run's, or one test's).
    timed_out: int = 0
    done_in_generation: int = 0
    batch_size: int = 0
    best: dict[str, float] = field(default_factory=dict)
    hypervolume: float = 0.0
    front_size: int = 0
    warnings: list[str] = field(default_factory=list)
    #: What the run is doing before its first generation ("" once the search runs).
    phase: str = ""

    def warn(self, warning: str) -> None:
        """Add a warning of the run, once."""
        if warning not in self.warnings:
            self.warnings.append(warning)


#: Called with the progress after each evaluation (False) and each generation (True).
ProgressCallback = Callable[[Progress, bool], None]
