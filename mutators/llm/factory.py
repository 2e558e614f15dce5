"""The model operator a config's `[llm]` section asks for: its models, modes and loops."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gi.mutators.base import Operator, RunFacts
from gi.mutators.llm.client import Budget, LLMClient, LLMSettings, RequestPool
from gi.mutators.llm.models import Models
from gi.mutators.llm.operator import LLMOperator
from gi.mutators.llm.prompts import Prompts

#: The [llm] keys that shape the operator rather than a model's client.
OPERATOR_KEYS = frozenset({
    "goal", "cache", "prompts", "modes", "models", "model_choice", "feedback_retries", "reviewer", "inspirations",
    "novelty", "patience",
})  # fmt: skip


def operator_for_run(section: Mapping[str, Any], share: float, run: RunFacts) -> Operator:
    """The operator a run's `[llm]` section asks for, with its share of mutations; `goal =
    "auto"` takes the run's goal, and the reply cache and offline mode are the run's."""
    goal = run.goal if section.get("goal", "auto") == "auto" else str(section["goal"])
    return operator_from_section(section, goal, run.cache, run.offline, share=share, seed=run.seed)


def operator_from_section(
    section: Mapping[str, Any],
    goal: str,
    cache: Path,
    offline: bool,
    *,
    share: float = 0.0,
    seed: int | None = None,
) -> LLMOperator:
    """The operator of an `[llm]` section (its keys as a mapping, validated by the config):
    one client per model (the section's own model, or each of `models` with what it sets
    differently), all on one pool of `concurrency` requests and one budget; the reply cache keys
    its replies by the run's `seed`."""
    settings = LLMSettings(
        **{key: value for key, value in section.items() if key not in OPERATOR_KEYS},
        cache=cache,
        offline=offline,
        seed=seed,
    )
    pool = RequestPool(settings.concurrency)
    budget = Budget(settings.max_requests, settings.max_total_tokens, settings.max_cost)
    session = uuid.uuid4().hex  # a resumed run takes its saved session (LLMOperator.restore)
    entries = list(section.get("models") or [])
    if not entries:
        entries = [{"model": settings.model}]
    clients, weights = [], []
    for entry in entries:
        changes = {key: value for key, value in entry.items() if value is not None and key != "weight"}
        clients.append(LLMClient(dataclasses.replace(settings, **changes), pool=pool, budget=budget, session=session))
        weights.append(float(entry.get("weight", 1.0)))
    return LLMOperator(
        Models(clients, weights, section.get("model_choice", "weighted")),
        goal,
        Prompts(**dict(section.get("prompts") or {})),
        modes=section.get("modes"),
        feedback_retries=int(section.get("feedback_retries", 1)),
        reviewer=bool(section.get("reviewer", False)),
        inspirations=int(section.get("inspirations", 0)),
        novelty=float(section.get("novelty", 1.0)),
        patience=section.get("patience"),
        share=share,
    )
