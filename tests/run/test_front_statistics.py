"""The front's speed-ups are a family of tests: their p-values are adjusted by Holm's method,
as `gi compare` adjusts its pairs (gi.reports.compare.holm), before any is called significant."""

from __future__ import annotations

from typing import Any

from gi.engine.summary import _correct_for_many


def member(p_value: float, low: float = 1.2, high: float = 1.5) -> dict[str, Any]:
    return {"speedup": {"value": 1.3, "low": low, "high": high, "p_value": p_value, "significant": p_value < 0.05}}


def test_speed_ups_that_each_pass_at_005_may_not_pass_together() -> None:
    front = [member(0.03), member(0.04), {"speedup": {"error": "the workload failed"}}, {}]
    _correct_for_many(front)
    assert [entry["speedup"]["p_holm"] for entry in front[:2]] == [0.06, 0.06]
    assert [entry["speedup"]["significant"] for entry in front[:2]] == [False, False]
    assert front[0]["speedup"]["p_value"] == 0.03, "the member's own p stays beside the adjusted one"
    assert front[2] == {"speedup": {"error": "the workload failed"}} and front[3] == {}


def test_a_strong_speed_up_stays_significant_and_an_interval_over_1_is_never() -> None:
    front = [member(0.001), member(0.01), member(0.001, low=0.95, high=1.4)]
    _correct_for_many(front)
    assert [entry["speedup"]["p_holm"] for entry in front] == [0.003, 0.01, 0.003]
    assert [entry["speedup"]["significant"] for entry in front] == [True, True, False]
