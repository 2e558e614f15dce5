from words import count_vowels, first_word, longest, pad, tally, truncate


def test_first_word_of_one():
    assert first_word("one") == "one"


def test_truncate_exact():
    assert truncate("abcdefgh", 8) == "abcdefgh"
    assert truncate("abcdefghi", 8) == "abcde..."


def test_no_vowels():
    assert count_vowels("xyz") == 0


def test_longest_of_none():
    assert longest([]) == ""


def test_tally_distinct():
    assert tally(["x", "y"]) == ({"x": 1, "y": 1}, 2)


def test_pad_long_text():
    assert pad("abcdef", 3, ".") == "abcdef"
