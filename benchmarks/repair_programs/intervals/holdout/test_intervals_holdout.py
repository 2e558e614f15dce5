from intervals import clamp, covered, gaps, length, merge, overlaps


def test_touching_do_not_overlap():
    assert not overlaps((1, 3), (3, 5))


def test_empty_length():
    assert length(5, 2) == 0


def test_merge_touching():
    assert merge([(1, 3), (3, 5)]) == [[1, 5]]


def test_clamp_high():
    assert clamp(12, 0, 10) == 10


def test_covered_nothing():
    assert covered([]) == 0


def test_no_gaps():
    assert gaps([(1, 4), (2, 3)]) == []
