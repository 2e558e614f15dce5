"""Binary search in a sorted list (an example target for gi: repair).

The loop condition has a planted bug: `lo < hi` misses the last candidate; `lo <= hi` is right.
"""


def index_of(items, target):
    """Position of `target` in the sorted list `items`, or -1 if it is absent."""
    lo, hi = 0, len(items) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if items[mid] == target:
            return mid
        if items[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1


def contains(items, target):
    """True if `target` is in the sorted list `items`."""
    return index_of(items, target) >= 0
