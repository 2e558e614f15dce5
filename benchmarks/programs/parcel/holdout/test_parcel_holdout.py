from parcel import total


def test_total():
    assert total([(0.2, 20, 10, 0.5), (1, 50, 30, 10)]) == 4.05


def test_no_parcels():
    assert total([]) == 0.0
