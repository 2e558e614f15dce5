import grading


def test_letters():
    assert grading.letter(95) == "A"
    assert grading.letter(85) == "B"
    assert grading.letter(75) == "C"
    assert grading.letter(65) == "D"
    assert grading.letter(10) == "F"


def test_boundaries():
    assert grading.letter(90) == "A"
    assert grading.letter(60) == "D"
    assert grading.letter(59) == "F"


def test_average():
    assert grading.average([80, 90, 100]) == 90
    assert grading.average([]) == 0


def test_summary():
    assert grading.summary([70, 80]) == "2 scores, average 75.0 (C)"
