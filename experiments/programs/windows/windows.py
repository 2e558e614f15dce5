"""Sums over sliding windows of a list (an example target for gi: repair).

The loop condition has a planted bug: `i < len(values) - width` stops one window early;
`i <= len(values) - width` is right.
"""


def window_sums(values, width):
    """The sums of every run of `width` consecutive values, from left to right."""
    sums = []
    i = 0
    while i < len(values) - width:
        sums.append(sum(values[i : i + width]))
        i += 1
    return sums


def largest_window(values, width):
    """The largest sum of `width` consecutive values, or None if the list is too short."""
    sums = window_sums(values, width)
    return max(sums) if sums else None
