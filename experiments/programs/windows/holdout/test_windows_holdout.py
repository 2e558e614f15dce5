from windows import largest_window, window_sums


def test_width_one_gives_the_values_back():
    values = [3, 1, 4, 1, 5, 9, 2, 6]
    assert window_sums(values, 1) == values


def test_every_window_of_a_longer_list():
    values = list(range(20))
    assert window_sums(values, 5) == [sum(values[i : i + 5]) for i in range(16)]


def test_largest_at_the_end():
    assert largest_window([1, 1, 1, 9, 9], 2) == 18


def test_largest_of_a_short_list():
    assert largest_window([1], 2) is None
