"""Counting and trimming words (a benchmark program for repair)."""


def first_word(text):
    """The first word of `text`, or None when it has none."""
    parts = text.split()
    if not parts:
        return None
    return parts[0]


def truncate(text, width):
    """`text` cut to at most `width` characters, ending in '...' when cut."""
    if len(text) <= width:
        return text
    return text[: width - 3] + "..."


def count_vowels(text):
    """How many vowels `text` has."""
    count = 0
    for char in text.lower():
        if char in "aeiou":
            count += 1
    return count


def longest(words):
    """The longest word (the first of equals), '' for none."""
    best = ""
    for word in words:
        if len(word) > len(best):
            best = word
    return best


def tally(words):
    """How often each word occurs (ignoring case), and how many words there are."""
    counts = {}
    total = 0
    for raw in words:
        word = raw.lower()
        if word in counts:
            counts[word] += 1
            total += 1
        else:
            counts[word] = 1
            total += 1
    return counts, total


def pad(text, width, fill):
    """`text` padded on the right with `fill` to `width` characters."""
    missing = max(0, width - len(text))
    return text + fill * missing
