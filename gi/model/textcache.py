"""A bounded cache of what was computed from a text, keyed by the text's hash.

Measures of a file's text (complexity, style) and the tamper guard's reading of it are asked
for again and again as variants share files. `functools.lru_cache` on the text would keep up to
thousands of whole file texts as keys, hundreds of MB for large files; this keeps 32 bytes of
SHA-256 a key and drops the least recently used entries past its size.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class TextCache(Generic[T]):
    """Values computed from texts, by the SHA-256 of (name, text); at most `size` of them."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[bytes, T] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str, compute: Callable[[], T], name: str = "") -> T:
        """The value for `text` (and `name`, a file's, when the value depends on it), computed by
        `compute` the first time (outside the lock: two threads may compute the same text once each)."""
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass") + b"\0")
        digest.update(text.encode("utf-8", "surrogatepass"))
        key = digest.digest()
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        value = compute()
        with self._lock:
            self._entries[key] = value
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)
