from bsearch import index_of


def test_every_position():
    items = list(range(0, 40, 3))
    for position, value in enumerate(items):
        assert index_of(items, value) == position


def test_absent_values():
    items = list(range(0, 40, 3))
    for value in range(-2, 42):
        if value not in items:
            assert index_of(items, value) == -1
