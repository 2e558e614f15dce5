import pytest
from roman import from_roman, is_roman, to_roman

KNOWN = {1: "I", 4: "IV", 9: "IX", 14: "XIV", 40: "XL", 90: "XC", 400: "CD", 1994: "MCMXCIV", 2024: "MMXXIV",
         3999: "MMMCMXCIX"}  # fmt: skip


@pytest.mark.parametrize(("number", "numeral"), sorted(KNOWN.items()))
def test_known_values(number, numeral):
    assert to_roman(number) == numeral
    assert from_roman(numeral) == number


@pytest.mark.parametrize("start", range(1, 4000, 200))
def test_round_trip(start):
    for number in range(start, min(start + 200, 4000)):
        for _ in range(20):
            assert from_roman(to_roman(number)) == number


@pytest.mark.parametrize("number", [0, -1, 4000, 10**6])
def test_out_of_range(number):
    with pytest.raises(ValueError):
        to_roman(number)


@pytest.mark.parametrize("value", [1.5, "12", None, True])
def test_not_an_integer(value):
    with pytest.raises(TypeError):
        to_roman(value)


@pytest.mark.parametrize("text", ["", "IIII", "VX", "IC", "MMMM", "ABC", "XM"])
def test_not_canonical(text):
    assert not is_roman(text)


def test_lower_case():
    assert from_roman("mcmxciv") == 1994
