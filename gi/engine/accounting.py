"""Per-operator accounting: what each operator proposed and what became of it.

Classic and language-model operators are counted alike: edits proposed, tries that found
no site, offspring that repeated a program, offspring whose new edit changed nothing (took no
effect, or made the program it was added to), programs evaluated, those passing every
training test, those on the final front, and seconds spent proposing; an operator that asks
outside gi adds what its `usage()` says: the model, one row per mode ("llm.diff"), its replies
that did not parse, did not apply, were the wrong kind of code, reached for the test machinery,
changed nothing, were no news or were refused by the reviewer (none of which became a proposal:
they count among the tries without a site), the offspring whose tests failed, and its tokens
and cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gi.algorithms.variation import operator_of_label
from gi.mutators import Operator

COLUMNS = ("proposals", "no_site", "duplicates", "unchanged", "unparseable", "not_applied", "wrong_kind",
           "tampering", "no_ops", "not_novel", "reviewer", "failed_tests", "evaluated", "passing", "front", "tokens",
           "cost", "seconds")  # fmt: skip


def count_by_operator(
    proposals: Mapping[str, Mapping[str, float]],
    lineage: Iterable[tuple[str, str, bool, dict[str, Any] | None]],
    front: Iterable[str],
    operators: Sequence[Operator],
) -> dict[str, dict[str, float]]:
    """One row per operator (and per crossover that made offspring without a new edit)."""
    table: dict[str, dict[str, float]] = {}

    def row(name: str) -> dict[str, float]:
        return table.setdefault(name, dict.fromkeys(COLUMNS, 0))

    for name, counts in proposals.items():
        for key, value in counts.items():
            row(name)[key] = row(name).get(key, 0) + value
    on_front = set(front)
    for identifier, label, evaluated_here, evaluation in lineage:
        if label == "original":
            continue
        entry = row(operator_of_label(label))
        if evaluated_here and evaluation is not None:
            entry["evaluated"] += 1
            ok = evaluation["status"] == "ok" and evaluation["measures"].get("failed_tests", 1) == 0
            entry["passing"] += ok
        entry["front"] += identifier in on_front
    for operator in operators:  # what those that ask outside gi spent (the language model)
        usage = operator.usage()
        if usage is None:
            continue
        for name, part in (usage.parts or {operator.name: usage}).items():  # the model: one row a mode
            entry = row(name)
            entry.update(part.outcomes)
            entry["tokens"] = part.tokens
            entry["cost"] = round(part.cost, 6)
    for entry in table.values():
        entry["seconds"] = round(entry["seconds"], 3)
    return dict(sorted(table.items()))
