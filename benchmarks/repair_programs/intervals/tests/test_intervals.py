from intervals import clamp, covered, gaps, length, merge, overlaps


def test_overlaps():
    assert overlaps((1, 5), (4, 8))
    assert not overlaps((1, 3), (5, 8))


def test_length():
    assert length(2, 7) == 5


def test_merge():
    assert merge([(5, 8), (1, 3), (2, 4)]) == [[1, 4], [5, 8]]


def test_covered():
    assert covered([(1, 3), (2, 6), (8, 9)]) == 6


def test_clamp():
    assert clamp(5, 0, 10) == 5
    assert clamp(-3, 0, 10) == 0


def test_gaps():
    assert gaps([(1, 2), (4, 5), (7, 9)]) == [(2, 4), (5, 7)]
