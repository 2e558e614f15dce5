"""A small named registry with "did you mean" errors, one per kind of component."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Generic, TypeVar

from gi.model.errors import RegistryError

T = TypeVar("T")


def suggest(name: str, valid: list[str]) -> str:
    """Return ' Did you mean 'x'?' for the closest valid name, or ''."""
    close = difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


class Registry(Generic[T]):
    """Maps names to components of one kind; unknown names raise `RegistryError`."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def add(self, name: str, item: T) -> T:
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._items[name] = item
        return item

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            valid = sorted(self._items)
            raise RegistryError(
                f"unknown {self.kind} {name!r}.{suggest(name, valid)} Valid names: {', '.join(valid)}"
            ) from None

    def remove(self, name: str) -> T:
        """Take a component out again (one a test or a plugin added)."""
        return self._items.pop(name)

    def names(self) -> list[str]:
        return sorted(self._items)

    def values(self) -> list[T]:
        """Every component, in the order they were added."""
        return list(self._items.values())

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))
