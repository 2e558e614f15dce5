"""A small named registry with "did you mean" errors, one per kind of component.

A registry with an entry-point group (`gi.operators`, `gi.objectives`, `gi.algorithms`) also
holds the components installed packages declare there, as pytest finds its plugins by
`pytest11`: each entry point's name is the name a config uses, its object the component (a
class is made with no arguments). They are loaded when the registry is first read, and each
remembers where it came from (`origin`): "gi", or the distribution and its version.
"""

from __future__ import annotations

import difflib
import re
import threading
from collections.abc import Callable, Iterator
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar

from gi.model.errors import PluginError, RegistryError

T = TypeVar("T")

#: Where gi's own components come from.
BUILT_IN = "gi"
#: The names an installed package may give a component: what a config can write in a list of names.
PLUGIN_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def suggest(name: str, valid: list[str]) -> str:
    """Return ' Did you mean 'x'?' for the closest valid name, or ''."""
    close = difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


class Registry(Generic[T]):
    """Maps names to components of one kind; unknown names raise `RegistryError`.

    With `group`, the components installed packages declare in that entry-point group are
    added at the first read, each passed through `accept(name, object)`, which returns the
    component or raises ValueError saying what is wrong with it (a `PluginError` names the
    distribution and the entry point). A class an entry point names is made with no
    arguments, unless the components are classes (`classes`: the algorithms)."""

    def __init__(
        self,
        kind: str,
        group: str | None = None,
        accept: Callable[[str, object], T] | None = None,
        *,
        classes: bool = False,
    ) -> None:
        self.kind = kind
        self.group = group
        self._accept = accept
        self._classes = classes
        self._items: dict[str, T] = {}
        self._origins: dict[str, str] = {}
        self._lock = threading.RLock()
        self._started = self._done = group is None
        #: Why the group's components could not all be added (raised at every read).
        self._broken: PluginError | None = None

    def add(self, name: str, item: T, origin: str = BUILT_IN) -> T:
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._items[name] = item
        self._origins[name] = origin
        return item

    def get(self, name: str) -> T:
        self._plugins()
        try:
            return self._items[name]
        except KeyError:
            valid = sorted(self._items)
            raise RegistryError(
                f"unknown {self.kind} {name!r}.{suggest(name, valid)} Valid names: {', '.join(valid)}"
            ) from None

    def remove(self, name: str) -> T:
        """Take a component out again (one a test or a plugin added)."""
        self._plugins()
        self._origins.pop(name, None)
        return self._items.pop(name)

    def names(self, *, built_in: bool = False) -> list[str]:
        """Every name, sorted; with `built_in`, gi's own only (not an installed package's)."""
        self._plugins()
        return sorted(name for name in self._items if not built_in or self._origins[name] == BUILT_IN)

    def values(self) -> list[T]:
        """Every component, in the order they were added (gi's own first)."""
        self._plugins()
        return list(self._items.values())

    def origin(self, name: str) -> str:
        """Where the component comes from: "gi", or "<distribution> <version>"."""
        self.get(name)
        return self._origins[name]

    def __contains__(self, name: object) -> bool:
        self._plugins()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def _plugins(self) -> None:
        """Add the components of the entry-point group, once (a plugin that reads the registry
        while it is imported finds gi's own); a PluginError is raised again at every read."""
        if not self._done:
            with self._lock:
                if not self._started:
                    self._started = True
                    try:
                        assert self.group is not None
                        for entry in sorted(entry_points(group=self.group), key=lambda e: e.name):
                            self._load(entry)
                    except PluginError as error:
                        self._broken = error
                    finally:
                        self._done = True
        if self._broken is not None:
            raise self._broken

    def _load(self, entry: EntryPoint) -> None:
        distribution = entry.dist
        origin = f"{distribution.name} {distribution.version}" if distribution is not None else "an installed package"
        where = f"{origin}: entry point {entry.name} = {entry.value!r} in {self.group}"
        if entry.name in self._items:
            raise PluginError(f"{where}: {self.origin(entry.name)} already gives the {self.kind} {entry.name!r}")
        if not PLUGIN_NAME.match(entry.name):
            raise PluginError(f"{where}: a {self.kind}'s name is a letter, then letters, digits and _")
        try:
            found = entry.load()
            item = found() if isinstance(found, type) and not self._classes else found
        except Exception as error:  # the package's code: whatever it raises is its problem
            raise PluginError(f"{where}: cannot load it ({type(error).__name__}: {error})") from None
        try:
            accepted = item if self._accept is None else self._accept(entry.name, item)
        except ValueError as error:
            raise PluginError(f"{where}: {error}") from None
        self.add(entry.name, accepted, origin)
