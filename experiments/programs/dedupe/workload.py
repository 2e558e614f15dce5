"""The workload gi times: deduplicate a list with many distinct values (not editable by gi)."""

from dedupe import dedupe

VALUES = [(i * 7919) % 3001 for i in range(6000)]


def run():
    return dedupe(VALUES)
