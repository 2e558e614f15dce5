"""Totals computed batch by batch (an example target for gi: speed from a constant).

The batch size of 1 makes the loop do one slice and one sum() call per value; larger
batches give the same totals with fewer, cheaper iterations.
"""

BATCH_SIZE = 1


def batched_total(values):
    """The sum of the values, added up one batch at a time."""
    total = 0
    for start in range(0, len(values), BATCH_SIZE):
        total += sum(values[start : start + BATCH_SIZE])
    return total


def mean(values):
    """The arithmetic mean, 0 for no values."""
    return batched_total(values) / len(values) if values else 0
