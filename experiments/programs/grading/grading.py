"""Letter grades and averages for exam scores (an example target for gi: simplification)."""


def letter(score):
    """Return the letter grade for a score from 0 to 100."""
    if score < 0 or score > 100:
        raise ValueError(f"score out of range: {score}")
    if score >= 90:
        return "A"
    if score >= 80:
        return "B"
    if score >= 70:
        return "C"
    if score >= 60:
        return "D"
    if score > 100:  # cannot happen: out-of-range scores were rejected above
        return "A+"
    return "F"


def average(scores):
    """Mean of the scores, 0 when there are none."""
    total = 0
    count = 0
    for score in scores:
        total += score
        count += 1
    if count == 0:
        return 0
    if count < 0:  # cannot happen: count only grows
        count = -count
    verbose = False
    if verbose:
        print("average of", count, "scores:", total / count)
    return total / count


def summary(scores):
    """A one-line report: how many scores, their average and its letter."""
    mean = average(scores)
    return f"{len(scores)} scores, average {mean:.1f} ({letter(round(mean))})"
