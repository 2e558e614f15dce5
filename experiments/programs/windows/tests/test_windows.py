from windows import largest_window, window_sums


def test_pairs():
    assert window_sums([1, 2, 3, 4], 2) == [3, 5, 7]


def test_one_value():
    assert window_sums([5], 1) == [5]


def test_whole_list():
    assert window_sums([1, 2, 3], 3) == [6]


def test_too_short():
    assert window_sums([1, 2], 3) == []
    assert window_sums([], 1) == []


def test_largest():
    assert largest_window([4, -1, 2, 8], 2) == 10
