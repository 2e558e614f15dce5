"""Remove repeated values while keeping first-seen order (an example target for gi: speed).

The hot loop asks twice whether a value was seen: once of a set (constant time) and once of
the result list (a linear scan, so the whole function is quadratic). The second is redundant.
"""


def dedupe(values):
    """The values without repeats, in the order they first appear."""
    seen = set()
    result = []
    for value in values:
        if value in seen:
            continue
        if value in result:
            continue
        seen.add(value)
        result.append(value)
    return result


def count_distinct(values):
    """How many different values there are."""
    return len(dedupe(values))
