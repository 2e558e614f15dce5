from ledger import apply_fee, interest, largest_debit, statement, transfer


def test_fee():
    assert apply_fee(10, 3) == 7


def test_fee_never_below_zero():
    assert apply_fee(2, 5) == 0


def test_transfer():
    assert transfer(10, 5, 4) == (6, 9)


def test_transfer_at_most_the_balance():
    assert transfer(3, 0, 10) == (0, 3)


def test_interest():
    assert interest(100, 0.1, 2) == 121.0


def test_statement():
    assert statement([5, -3, 2, -1]) == (7, 4, [2, 2])


def test_largest_debit():
    assert largest_debit([5, -3, -7, 2]) == 7
