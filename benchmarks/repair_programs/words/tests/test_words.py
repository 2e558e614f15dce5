from words import count_vowels, first_word, longest, pad, tally, truncate


def test_first_word():
    assert first_word("hello big world") == "hello"


def test_no_first_word():
    assert first_word("   ") is None


def test_truncate():
    assert truncate("abcdefghij", 8) == "abcde..."
    assert truncate("short", 8) == "short"


def test_vowels():
    assert count_vowels("Education") == 5


def test_longest():
    assert longest(["a", "abc", "ab", "xyz"]) == "abc"


def test_tally():
    assert tally(["a", "B", "b", "c"]) == ({"a": 1, "b": 2, "c": 1}, 4)


def test_pad():
    assert pad("ab", 5, ".") == "ab..."
