import pytest

import grading


def test_rejects_negative_scores():
    with pytest.raises(ValueError):
        grading.letter(-5)


def test_rejects_scores_over_100():
    with pytest.raises(ValueError):
        grading.letter(101)


def test_average_of_one():
    assert grading.average([42]) == 42
