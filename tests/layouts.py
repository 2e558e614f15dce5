"""Real projects laid out as their maintainers lay them out, for tests of how gi runs their tests."""

from __future__ import annotations

from pathlib import Path

SHOP = '''\
"""Prices."""

import warnings


def price(quantity, unit=2):
    """The price of `quantity` items."""
    if quantity < 0:
        warnings.warn("a negative quantity", UserWarning)
        return 0
    return quantity * unit


def discount(total):
    """10% off from 100 on."""
    return total * 0.9 if total >= 100 else total
'''

SHOP_TESTS = """\
import pytest

from shop.prices import discount, price


def test_price():
    assert price(3) == 6


def test_unit():
    assert price(3, unit=5) == 15


def test_discount():
    assert discount(200) == 180


def test_no_discount():
    assert discount(50) == 50


def test_negative_warns():
    with pytest.warns(UserWarning):
        assert price(-1) == 0
"""

#: pytest settings that turn every warning into an error and add options of their own, and
#: coverage.py settings of the project's own (a parallel data file, relative paths, a source).
STRICT_SETTINGS = """\
[project]
name = "shop"
version = "1.0"

[tool.pytest.ini_options]
testpaths = ["tests"]
addopts = "--color=yes -ra"
filterwarnings = ["error"]

[tool.coverage.run]
parallel = true
relative_files = true
branch = true
source = ["shop", "tests"]
"""


def strict_src_layout(folder: Path) -> Path:
    """A src-layout project (src/shop/) whose pytest settings turn warnings into errors."""
    (folder / "src" / "shop").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "src" / "shop" / "__init__.py").write_text('"""A shop."""\n')
    (folder / "src" / "shop" / "prices.py").write_text(SHOP)
    (folder / "tests" / "test_prices.py").write_text(SHOP_TESTS)
    (folder / "pyproject.toml").write_text(STRICT_SETTINGS)
    return folder
