from batching import batched_total


def test_long_list():
    values = list(range(1001))
    assert batched_total(values) == sum(values)


def test_negative_values():
    assert batched_total([-3, 5, -2, 7]) == 7
