from bsearch import contains, index_of


def test_middle():
    assert index_of([1, 3, 5, 7, 9], 5) == 2


def test_single_element():
    assert index_of([4], 4) == 0


def test_last():
    assert index_of([1, 2, 3, 4], 4) == 3


def test_first():
    assert index_of([1, 2, 3, 4, 5, 6], 1) == 0


def test_absent():
    assert index_of([1, 3, 5], 4) == -1
    assert index_of([], 4) == -1


def test_contains():
    assert contains([2, 4, 6, 8], 8)
    assert not contains([2, 4, 6, 8], 5)
