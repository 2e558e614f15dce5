from dedupe import count_distinct, dedupe


def test_keeps_first_seen_order():
    assert dedupe([3, 1, 3, 2, 1]) == [3, 1, 2]


def test_empty():
    assert dedupe([]) == []


def test_strings():
    assert dedupe(["b", "a", "b"]) == ["b", "a"]


def test_count_distinct():
    assert count_distinct([1, 1, 2, 3, 3, 3]) == 3
