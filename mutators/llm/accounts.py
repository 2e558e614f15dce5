"""The model operator's accounts: what its replies came to per mode and per model, the
improvements its offspring made and what the first ones took, and the reports built on them
(the accounting's rows, summary.json's `llm`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gi.mutators.base import OperatorUsage, Outcome
from gi.mutators.llm.client import Reply, Sample, Usage
from gi.mutators.llm.models import Models
from gi.mutators.llm.proposals import Made
from gi.mutators.llm.stats import Counts, LLMStats

#: The columns of the run's accounting a mode's rejected replies fill (see `Counts`).
OUTCOME_COLUMNS = ("unparseable", "not_applied", "wrong_kind", "tampering", "no_ops", "not_novel", "reviewer",
                   "failed_tests", "retries", "reviews")  # fmt: skip


class Accounts:
    """Counts per mode and model (`stats`), offspring that entered the archive (`successes`)
    and improved on the original (`improvements`) per mode, and the first improvement of the
    run and of each mode with what it took."""

    def __init__(self) -> None:
        self.stats = LLMStats()
        self.successes: dict[str, int] = {}
        self.improvements: dict[str, int] = {}
        self.first_improvement: dict[str, Any] | None = None
        self.firsts: dict[str, dict[str, Any]] = {}

    def state(self) -> dict[str, Any]:
        return {
            "stats": self.stats.to_json(),
            "successes": dict(self.successes),
            "improvements": dict(self.improvements),
            "first_improvement": self.first_improvement,
            "firsts": dict(self.firsts),
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        self.stats = LLMStats.from_json(state.get("stats", {}))
        self.successes = dict(state.get("successes", {}))
        self.improvements = dict(state.get("improvements", {}))
        self.first_improvement = state.get("first_improvement")
        self.firsts = dict(state.get("firsts", {}))

    @staticmethod
    def take(reply: Reply, counts: Sequence[Counts]) -> Sample | None:
        """A reply's sample, counted; None when the request failed (the client counted that)."""
        try:
            sample = reply.result()
        except reply.client.api_error:
            return None
        cost = reply.client.cost_of(sample.prompt_tokens, sample.completion_tokens) if not sample.cached else 0.0
        for each in counts:
            each.replies += 1
            each.prompt_tokens += sample.prompt_tokens
            each.completion_tokens += sample.completion_tokens
            each.cost += cost
        return sample

    def entered(self, made: Made, outcome: Outcome) -> None:
        """An offspring of `made` entered the archive: a success of its mode, and an
        improvement (the first of the run and of its mode, with what it took) if it improved."""
        if outcome.improved:
            self.improvements[made.mode] = self.improvements.get(made.mode, 0) + 1
            requests, tokens, cost = made.spent
            first = {"mode": made.mode, "model": made.model, "evaluations": outcome.evaluations,
                     "requests": requests, "tokens": tokens, "cost": round(cost, 6)}  # fmt: skip
            self.firsts.setdefault(made.mode, first)
            if self.first_improvement is None:
                self.first_improvement = first
        self.successes[made.mode] = self.successes.get(made.mode, 0) + 1

    def usage(self, name: str, total: Usage) -> OperatorUsage:
        """Every model's spending (`total`), and per mode (the accounting's rows "llm.rewrite",
        ...) what its replies came to besides proposals."""
        parts = {
            f"{name}.{mode}": OperatorUsage(
                tokens=counts.prompt_tokens + counts.completion_tokens,
                cost=counts.cost,
                outcomes={kind: getattr(counts, kind) for kind in OUTCOME_COLUMNS},
            )
            for mode, counts in self.stats.modes.items()
        }
        return OperatorUsage(total.requests, total.tokens, total.cost, total.seconds, parts=parts)

    def report(
        self, name: str, goal: str, models: Models, notes: Sequence[str], accounting: Mapping[str, Mapping[str, float]]
    ) -> dict[str, Any]:
        """summary.json's `llm`: the model's settings (the key's variable name, never its value),
        usage and verdict; per mode and per model, what became of the proposals (`parse_rate`:
        replies whose code could be read; `apply_rate`: of those, the ones whose change fitted;
        `pass_rate`: evaluated offspring that passed every training test); the improvements, what
        each cost, and what the first one took."""
        settings, usage, stats = models.first.settings, models.first.budget.usage, self.stats
        rows = [row for label, row in accounting.items() if label.split(".")[0] == name]
        evaluated, passing = sum(r.get("evaluated", 0) for r in rows), sum(r.get("passing", 0) for r in rows)
        improvements = sum(self.improvements.values())
        modes = {}
        for mode, counts in stats.modes.items():
            row = accounting.get(f"{name}.{mode}", {})
            modes[mode] = {**counts.to_json(), **{key: row.get(key, 0) for key in ("evaluated", "passing", "front")},
                           "pass_rate": _rate(row.get("passing", 0), row.get("evaluated", 0)),
                           "improvements": self.improvements.get(mode, 0),
                           "first_improvement": self.firsts.get(mode)}  # fmt: skip
        per_model = {
            arm.name: {
                **stats.models.get(arm.name, Counts()).to_json(),
                "requests": arm.client.usage.requests - arm.client.usage.replayed,
                "successes": arm.successes,
                "weight": arm.weight,
            }
            for arm in models
        }
        return {
            "base_url": settings.base_url, "model": settings.model, "api": settings.api,
            "api_key_env": settings.api_key_env, "goal": goal,
            # A replay's requests are the recorded run's, answered from the cache: it sends none.
            "requests": usage.requests - usage.replayed, "cache_hits": usage.cache_hits + usage.replayed,
            "failures": usage.failures, "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens, "cost": round(usage.cost, 6),
            "seconds": round(usage.seconds, 3), "proposals": stats.proposals, "edits": stats.edits,
            "replies": stats.replies,
            "parse_rate": None if stats.parse_rate is None else round(stats.parse_rate, 4),
            "apply_rate": None if stats.total.apply_rate is None else round(stats.total.apply_rate, 4),
            "pass_rate": _rate(passing, evaluated),
            "improvements": improvements,
            "tokens_per_improvement": round(usage.tokens / improvements) if improvements else None,
            "cost_per_improvement": round(usage.cost / improvements, 6) if improvements else None,
            "first_improvement": self.first_improvement,
            "modes": modes, "models": per_model, "model_choice": models.choice,
            "stopped": usage.stopped, "notes": list(notes),
            "errors": usage.errors[:10], "rejected": stats.rejected[:20],
        }  # fmt: skip


def _rate(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None
