from dedupe import dedupe


def test_long_list_with_repeats():
    values = [i % 17 for i in range(200)]
    assert dedupe(values) == list(range(17))


def test_no_repeats():
    assert dedupe(list(range(50))) == list(range(50))
