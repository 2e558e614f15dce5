"""A small ledger: fees, transfers, interest and statements (a benchmark program for repair)."""


def apply_fee(balance, fee):
    """The balance after a fee, never below zero."""
    return max(0, balance - fee)


def transfer(source, target, amount):
    """Move up to `amount` from `source` to `target` (both balances); the new pair."""
    if amount <= 0:
        return source, target
    moved = min(amount, source)
    return source - moved, target + moved


def interest(balance, rate, years):
    """The balance after `years` of compound interest at `rate`, rounded to cents."""
    total = balance
    for _ in range(years):
        total = total * (1 + rate)
    return round(total, 2)


def statement(entries):
    """Credits, debits (as a positive number) and how many entries of each there are."""
    credits = 0
    debits = 0
    count = [0, 0]
    for amount in entries:
        if amount >= 0:
            credits += amount
            count[0] += 1
        else:
            debits -= amount
            count[1] += 1
    return credits, debits, count


def largest_debit(entries):
    """The largest debit as a positive number, or None when there is none."""
    largest = None
    for amount in entries:
        if amount < 0 and (largest is None or -amount > largest):
            largest = -amount
    return largest
