"""The workload gi times: add up a long list batch by batch (not editable by gi)."""

from batching import batched_total

VALUES = list(range(20000))


def run():
    return batched_total(VALUES)
