"""Roman numerals: conversion both ways and validation (1 to 3999)."""

NUMERALS = [
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
]
VALUES = {"M": 1000, "D": 500, "C": 100, "L": 50, "X": 10, "V": 5, "I": 1}


def to_roman(number):
    """The Roman numeral of an integer from 1 to 3999."""
    if not isinstance(number, int) or isinstance(number, bool):
        raise TypeError("an integer is required")
    if number < 1 or number > 3999:
        raise ValueError("out of range (1 to 3999)")
    parts = []
    for value, numeral in NUMERALS:
        while number >= value:
            parts.append(numeral)
            number -= value
    return "".join(parts)


def from_roman(text):
    """The integer a Roman numeral stands for; ValueError for anything but a canonical numeral."""
    if not isinstance(text, str) or not text:
        raise ValueError("a numeral is required")
    total = 0
    previous = 0
    for letter in reversed(text.upper()):
        if letter not in VALUES:
            raise ValueError(f"not a Roman numeral: {text!r}")
        value = VALUES[letter]
        if value < previous:
            total -= value
        else:
            total += value
            previous = value
    if total < 1 or total > 3999 or to_roman(total) != text.upper():
        raise ValueError(f"not a canonical Roman numeral: {text!r}")
    return total


def is_roman(text):
    """Whether `text` is a canonical Roman numeral."""
    try:
        from_roman(text)
    except ValueError:
        return False
    return True
