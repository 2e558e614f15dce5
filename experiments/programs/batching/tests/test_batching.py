from batching import batched_total, mean


def test_total():
    assert batched_total([1, 2, 3, 4, 5]) == 15


def test_empty():
    assert batched_total([]) == 0


def test_mean():
    assert mean([2, 4, 6]) == 4
    assert mean([]) == 0
