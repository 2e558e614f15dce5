import pytest
from parcel import postage, size_class


def test_size_classes():
    assert size_class(20, 10, 0.5) == "letter"
    assert size_class(50, 30, 10) == "small"
    assert size_class(80, 30, 10) == "large"


def test_sides_in_any_order():
    assert size_class(0.5, 20, 10) == "letter"
    assert size_class(10, 30, 50) == "small"


def test_postage_by_class():
    assert postage(0.2, 20, 10, 0.5) == 0.85
    assert postage(1, 50, 30, 10) == 3.2
    assert postage(0.5, 80, 30, 10) == 7.9


def test_heavy_parcels():
    assert postage(2.5, 50, 30, 10) == 5.4
    assert postage(1.5, 20, 10, 0.5) == 4.3


def test_rejects_bad_parcels():
    with pytest.raises(ValueError):
        size_class(0, 10, 10)
    with pytest.raises(ValueError):
        postage(-1, 10, 10, 10)
