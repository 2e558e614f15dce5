"""The reply cache: every request and reply on disk, keyed by a hash of the request's content.

Like Hypothesis's example database, it is a cache that never needs invalidating: the key is
the model (its name, and its revision or the server's URL), the API, the messages or prompt,
the sampling parameters, the run's seed and the sample index, so the same request of a run
always means the same reply, and a rerun replays without the network; a run of another seed
asks a sampling model for replies of its own (runs of several seeds are independent samples).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def request_key(request: dict[str, Any]) -> str:
    """The content hash of a request (sorted JSON)."""
    text = json.dumps(request, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


class ReplyCache:
    """A folder of JSON files, one per (request, sample index).

    An entry also names the session (the run) that asked for it, and whether it stands for the
    request itself or for a further sample the same request gave; a request sent and not yet
    answered has an entry without a reply, so that a run interrupted meanwhile knows it was sent.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def entry(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """The stored entry for a request: its reply (None while unanswered), session, primary."""
        try:
            entry: dict[str, Any] = json.loads(self._path(request_key(request)).read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        return entry

    def get(self, request: dict[str, Any]) -> dict[str, Any] | None:
        entry = self.entry(request)
        return None if entry is None else entry.get("reply")

    def mark_sent(self, request: dict[str, Any], session: str) -> None:
        """Note that `session` sent the request (an entry without a reply)."""
        self._write(request, {"request": request, "reply": None, "session": session})

    def put(self, request: dict[str, Any], reply: dict[str, Any], *, session: str = "", primary: bool = True) -> None:
        self._write(request, {"request": request, "reply": reply, "session": session, "primary": primary})

    def _write(self, request: dict[str, Any], entry: dict[str, Any]) -> None:
        path = self._path(request_key(request))
        path.parent.mkdir(exist_ok=True)
        # Write then rename: a run killed mid-write leaves no half entry.
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, encoding="utf-8") as stream:
            json.dump(entry, stream)
        os.replace(stream.name, path)
