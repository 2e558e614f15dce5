"""Which operator makes the next edit: uniformly, or by its recent success (adaptive).

Adaptive operator selection is probability matching (Thierens 2005) over a sliding window:
each operator's quality is its share of successes among its last uses in the window (an
offspring whose new edit it made entered the Pareto archive, or dominates a parent), shrunk
towards the window's mean rate so an operator with few uses is neither favoured nor starved;
its probability is a floor (FLOOR of its prior, so every operator keeps being tried) plus the
rest in proportion to its prior times its quality. The priors are the shares the operators
would have without adaptation: equal, or an operator's own share (the language model's
`mutators.llm`), so the model is one operator like the others, starting where the config put
it and moving with its success. The window holds the last WINDOW credits, so the shares
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

    def __init__(
        self, names: Sequence[str], *, adaptive: bool = False, priors: Mapping[str, float] | None = None
    ) -> None:
        self.names = tuple(names)
        self.adaptive = adaptive
        weights = np.array([(priors or {}).get(name, 1.0) for name in self.names], dtype=float)
        self.priors: np.ndarray = weights / weights.sum()
        self._window: deque[tuple[str, bool]] = deque(maxlen=WINDOW)

    def choose(self, rng: np.random.Generator, allowed: Sequence[bool] | None = None) -> int:
        """The index of the operator to draw from next (among the `allowed`, if given)."""
        if not self.adaptive:
            return int(rng.integers(len(self.names)))
        chances = self.probabilities()
        if allowed is not None:
            permitted = np.asarray(allowed, dtype=float)
            chances = chances * permitted
            # An operator whose prior is 0 (the model's share is the whole) may still be the
            # only one allowed (the model's uses are spent): then the allowed ones alike.
            chances = chances / chances.sum() if chances.sum() > 0 else permitted / permitted.sum()
        return int(rng.choice(len(self.names), p=chances))

    def credit(self, name: str, success: bool) -> None:
        """Note one use of the operator `name` and whether its offspring succeeded."""
        if self.adaptive and name in self.names:
            self._window.append((name, success))

    def probabilities(self) -> np.ndarray:
        """Each operator's chance to be drawn next, in `names` order."""
        if not self.adaptive or not self._window:
            return self.priors
        uses = dict.fromkeys(self.names, 0)
        wins = dict.fromkeys(self.names, 0)
        for name, success in self._window:
            uses[name] += 1
            wins[name] += success
        mean = sum(wins.values()) / len(self._window)
        quality = np.array([(wins[n] + PRIOR_USES * mean) / (uses[n] + PRIOR_USES) for n in self.names])
        weighted = self.priors * quality
        if weighted.sum() <= 0:
            return self.priors
        probabilities: np.ndarray = FLOOR * self.priors + (1 - FLOOR) * weighted / weighted.sum()
        return probabilities

    def shares(self) -> dict[str, float]:
        """The chance of each operator (by name), rounded for a summary."""
        return {name: round(float(p), 4) for name, p in zip(self.names, self.probabilities(), strict=True)}

    def state(self) -> dict[str, Any]:
        return {"window": [[name, success] for name, success in self._window]}

    def restore(self, state: Mapping[str, Any]) -> None:
        self._window = deque(((str(n), bool(s)) for n, s in state.get("window", [])), maxlen=WINDOW)
