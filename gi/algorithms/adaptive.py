"""Which operator makes the next edit: uniformly, or by its recent success (adaptive).

Adaptive operator selection is probability matching (Thierens 2005) over a sliding window:
each operator's quality is its share of successes among its last uses in the window (an
offspring whose new edit it made entered the Pareto archive, or dominates a parent), shrunk
towards the window's mean rate so an operator with few uses is neither favoured nor starved;
its probability is a floor (FLOOR spread evenly, so every operator keeps being tried) plus the
rest in proportion to its quality. The window holds the last WINDOW credits, so the shares
follow the search as it moves (from the suspicious lines' one-edit fixes to what combines).

Uniform selection draws exactly as gi always did (`rng.integers`), so a run without adaptive
selection is unchanged. The window is JSON (`state`/`restore`): a resumed run and a replay
draw the same operators.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

#: The share of draws spread evenly over the operators, whatever their success.
FLOOR = 0.3
#: Credits (operator, success) the window keeps: the most recent.
WINDOW = 200
#: Pseudo-uses at the window's mean rate that each operator's rate is shrunk with.
PRIOR_USES = 2.0


class OperatorSelection:
    """Chooses an operator by index: uniformly, or adaptively by recent success."""

    def __init__(self, names: Sequence[str], *, adaptive: bool = False) -> None:
        self.names = tuple(names)
        self.adaptive = adaptive
        self._window: deque[tuple[str, bool]] = deque(maxlen=WINDOW)

    def choose(self, rng: np.random.Generator) -> int:
        """The index of the operator to draw from next."""
        if not self.adaptive:
            return int(rng.integers(len(self.names)))
        return int(rng.choice(len(self.names), p=self.probabilities()))

    def credit(self, name: str, success: bool) -> None:
        """Note one use of the operator `name` and whether its offspring succeeded."""
        if self.adaptive and name in self.names:
            self._window.append((name, success))

    def probabilities(self) -> np.ndarray:
        """Each operator's chance to be drawn next, in `names` order."""
        count = len(self.names)
        if not self.adaptive or not self._window:
            return np.full(count, 1 / count)
        uses = dict.fromkeys(self.names, 0)
        wins = dict.fromkeys(self.names, 0)
        for name, success in self._window:
            uses[name] += 1
            wins[name] += success
        mean = sum(wins.values()) / len(self._window)
        quality = np.array([(wins[n] + PRIOR_USES * mean) / (uses[n] + PRIOR_USES) for n in self.names])
        if quality.sum() <= 0:
            return np.full(count, 1 / count)
        probabilities: np.ndarray = FLOOR / count + (1 - FLOOR) * quality / quality.sum()
        return probabilities

    def shares(self) -> dict[str, float]:
        """The chance of each operator (by name), rounded for a summary."""
        return {name: round(float(p), 4) for name, p in zip(self.names, self.probabilities(), strict=True)}

    def state(self) -> dict[str, Any]:
        return {"window": [[name, success] for name, success in self._window]}

    def restore(self, state: Mapping[str, Any]) -> None:
        self._window = deque(((str(n), bool(s)) for n, s in state.get("window", [])), maxlen=WINDOW)
