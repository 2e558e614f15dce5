"""Several models for one operator: chosen by weight, or by a bandit on success per cost.

AlphaEvolve mixes a fast model and a strong one; ShinkaEvolve picks among several with a
bandit under a money cap. Here each model is a client (its own server, name and prices) on
the run's shared pool and budget. `weighted` draws a model in proportion to its weight;
`bandit` draws each model's chance of success from a Beta posterior (Thompson sampling: its
replies whose offspring entered the archive against those that did not) and divides it by the
model's cost per request relative to the cheapest (money when every model is priced, tokens
otherwise), so a model ten times the price must be ten times as likely to help. Under a money
cap a model whose typical request costs more than is left is not chosen while a cheaper one is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from gi.mutators.llm.client import LLMClient, Usage

Choice = Literal["weighted", "bandit"]


@dataclass
class Arm:
    """One model and what became of its replies."""

    client: LLMClient
    weight: float = 1.0
    #: Replies taken, and those whose offspring entered the archive.
    trials: int = 0
    successes: int = 0

    @property
    def name(self) -> str:
        return self.client.settings.model

    @property
    def priced(self) -> bool:
        return bool(self.client.settings.price_prompt or self.client.settings.price_completion)

    def cost_per_request(self, money: bool) -> float | None:
        """Mean money (or tokens) per request; None before any request."""
        usage = self.client.usage
        if not usage.requests:
            return None
        return (usage.cost if money else float(usage.tokens)) / usage.requests


class Models:
    """The operator's models and the rule that picks one for each request."""

    def __init__(self, clients: Sequence[LLMClient], weights: Sequence[float] | None = None,
                 choice: Choice = "weighted") -> None:  # fmt: skip
        if not clients:
            raise ValueError("the language-model operator needs at least one model")
        weights = list(weights) if weights is not None else [1.0] * len(clients)
        if len(weights) != len(clients) or any(w < 0 for w in weights) or not sum(weights):
            raise ValueError(f"model weights must be one non-negative number per model, not all 0: {weights}")
        names = [client.settings.model for client in clients]
        if len(set(names)) != len(names):
            raise ValueError(f"two models of the operator have the same name: {names}")
        self.arms = [Arm(client, weight) for client, weight in zip(clients, weights, strict=True)]
        self.choice = choice

    @property
    def first(self) -> LLMClient:
        return self.arms[0].client

    def __iter__(self) -> Any:
        return iter(self.arms)

    def arm(self, name: str) -> Arm | None:
        return next((arm for arm in self.arms if arm.name == name), None)

    def choose(self, rng: np.random.Generator) -> Arm:
        """The model for the next request (with one model, nothing is drawn from `rng`)."""
        if len(self.arms) == 1:
            return self.arms[0]
        if self.choice == "weighted":
            weights = np.array([arm.weight for arm in self.arms], dtype=float)
            return self.arms[int(rng.choice(len(self.arms), p=weights / weights.sum()))]
        return self._bandit(rng)

    def _bandit(self, rng: np.random.Generator) -> Arm:
        money = all(arm.priced for arm in self.arms)  # else every model's cost is its tokens
        costs = [arm.cost_per_request(money) for arm in self.arms]
        known = [cost for cost in costs if cost]
        cheapest = min(known) if known else 1.0
        budget = self.first.budget
        left = None if budget.max_cost is None else budget.max_cost - budget.usage.cost
        scores = []
        for arm, cost in zip(self.arms, costs, strict=True):
            chance = rng.beta(1 + arm.successes, 1 + arm.trials - arm.successes)
            relative = (cost / cheapest) if cost else 1.0
            affordable = left is None or cost is None or not money or cost <= left
            scores.append(chance / relative if affordable and arm.weight > 0 else -1.0)
        return self.arms[int(np.argmax(scores))]

    def state(self) -> dict[str, dict[str, Any]]:
        """Per model: its bandit counts and usage (JSON)."""
        return {arm.name: {"trials": arm.trials, "successes": arm.successes, "usage": arm.client.usage.to_json()}
                for arm in self.arms}  # fmt: skip

    def restore(self, state: Mapping[str, Mapping[str, Any]]) -> None:
        for arm in self.arms:
            saved = state.get(arm.name)
            if saved is None:
                continue
            arm.trials, arm.successes = int(saved.get("trials", 0)), int(saved.get("successes", 0))
            arm.client.usage = Usage.from_json(saved.get("usage", {}))
