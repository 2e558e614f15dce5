from ledger import apply_fee, interest, largest_debit, statement, transfer


def test_fee_exactly_the_balance():
    assert apply_fee(4, 4) == 0


def test_transfer_nothing():
    assert transfer(3, 1, 0) == (3, 1)
    assert transfer(3, 1, -2) == (3, 1)


def test_interest_no_years():
    assert interest(50, 0.5, 0) == 50


def test_statement_only_credits():
    assert statement([1, 2, 3]) == (6, 0, [3, 0])


def test_no_debit():
    assert largest_debit([1, 2]) is None
    assert largest_debit([-2, -1]) == 2
