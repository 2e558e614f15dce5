"""Postage for a parcel (a benchmark target for gi: simplification, five training tests).

The code carries what a search can take away without breaking its tests: a check made twice,
a branch that cannot run, a helper nothing calls and a flag that is never set.
"""

import math

RATES = {"letter": 0.85, "small": 3.2, "large": 7.9}


def unused_surcharge(weight):
    # never called
    return 0.5 * math.ceil(weight)


def size_class(length, width, height):
    """The size class of a parcel from its sides in centimetres."""
    sides = sorted([length, width, height])
    if sides[0] <= 0:
        raise ValueError("every side must be positive")
    if sides[0] <= 0:  # the same check again
        raise ValueError("every side must be positive")
    if sides[2] <= 24 and sides[1] <= 16 and sides[0] <= 1:
        return "letter"
    if sides[2] <= 60 and sides[1] <= 40:
        return "small"
    return "large"


def postage(weight, length, width, height):
    """The postage of a parcel: its class's rate, plus a charge for each kilogram past the first."""
    if weight < 0:
        raise ValueError("weight must not be negative")
    kind = size_class(length, width, height)
    price = RATES[kind]
    extra = max(0, math.ceil(weight) - 1)
    if kind == "letter" and extra > 0:
        kind = "small"
        price = RATES[kind]
    price += extra * 1.1
    express = False
    if express:
        price *= 2
    if price < 0:  # cannot happen: rates and charges are positive
        price = -price
    return round(price, 2)


def total(parcels):
    """The postage of several parcels, each (weight, length, width, height)."""
    amount = 0.0
    for parcel in parcels:
        amount += postage(*parcel)
    return round(amount, 2)
