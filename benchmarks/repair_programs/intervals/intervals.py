"""Intervals on a line: overlap, merge, coverage and clamping (a benchmark program for repair)."""


def overlaps(first, second):
    """Do the half-open intervals `first` and `second` (start, end) share a point?"""
    return first[0] < second[1] and second[0] < first[1]


def length(start, end):
    """The length of [start, end), 0 when it is empty."""
    return max(0, end - start)


def merge(intervals):
    """The union of the intervals as sorted, disjoint [start, end] pairs."""
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def covered(intervals):
    """How much of the line the intervals cover together."""
    total = 0
    for start, end in merge(intervals):
        total += length(start, end)
    return total


def clamp(value, low, high):
    """`value` limited to [low, high]."""
    if value < low:
        return low
    if value > high:
        return high
    return value


def gaps(intervals):
    """The uncovered stretches between the merged intervals."""
    merged = merge(intervals)
    found = []
    for index in range(1, len(merged)):
        found.append((merged[index - 1][1], merged[index][0]))
    return found
