"""What gi hands one test run's plugin (pytest_plugin.py), installed beside it as
gi_pytest_inputs.py; only the standard library and pytest_limits.py beside it.

- The channel (`Channel`, `_channel`): the pipe GI_CHANNEL_FD names, and the writer of its
  records, each `<mac> <json>`, an HMAC-SHA256 over the record's sequence number and its JSON
  keyed by what gi writes first to the process's standard input (`KEY_BYTES`); after the key
  comes gi's plan. The serialiser and the signer are the C encoder's and OpenSSL's, taken as the
  channel is made, before any project code runs.
- `Inputs`: the channel with the plan, the tests' time limits, their order and selection and
  the project's modules, read once (`Inputs.read`), and handed to the hooks as values they bind
  (`Inputs.bound`).
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import json
import os
from collections.abc import Callable
from typing import Any

KEY_BYTES = 64
#: The per-test time limits' module, as gi installs it beside this one (gi.fitness.tests).
LIMITS_MODULE = "gi_pytest_limits"

if __package__:  # imported from gi's package (by gi's own tests)
    from .pytest_limits import Writer
else:  # a test run's tools folder, where gi copies it beside this file
    Writer = importlib.import_module(LIMITS_MODULE).Writer  # type: ignore[misc,unused-ignore]


def _serialiser() -> Callable[[object], str]:
    """JSON text of a record, by the interpreter's own C encoder taken now: what it calls is
    code no module attribute leads to, so code under test that rebinds `json.dumps` (through
    `functools.update_wrapper`, say) or a method of `json.JSONEncoder` changes nothing here."""
    try:
        from _json import encode_basestring_ascii, make_encoder
    except ImportError:  # an interpreter without the accelerator: the encoder's method, bound now
        return json.JSONEncoder(separators=(",", ":")).encode

    def unknown(value: object) -> object:
        raise TypeError(f"not JSON: {type(value).__name__}")

    encoder = make_encoder(None, unknown, encode_basestring_ascii, None, ":", ",", False, False, True)
    join = "".join
    return lambda record: join(encoder(record, 0))


def _signer(key: bytes) -> Callable[[bytes], str]:
    """The HMAC-SHA256 of a message under `key`, by OpenSSL's HMAC object made now (its methods
    are the C type's, which no code can rebind); `hmac.new` bound now where OpenSSL is missing."""
    try:
        from _hashlib import hmac_new
    except ImportError:
        new, digest = hmac.new, hashlib.sha256
        return lambda message: new(key, message, digest).hexdigest()
    copy = hmac_new(key, b"", "sha256").copy

    def sign(message: bytes) -> str:
        mac = copy()
        mac.update(message)
        return str(mac.hexdigest())

    return sign


class Channel:
    """The signed records' pipe to gi: its writer, the place in the sequence of the next record,
    its descriptor (-1 when gi did not start us: the writer drops the records)."""

    def __init__(self, write: Writer, position: Callable[[], int], descriptor: int) -> None:
        self.write = write
        self.position = position
        self.descriptor = descriptor


def _channel() -> tuple[Channel, dict[str, Any]]:
    """The channel of signed records, and gi's plan.

    Everything the writer calls is taken here, as pytest loads the plugin and before any
    project code is imported: the serialiser, the signer and `os.write` are held, never looked
    up through a module when a record is written (by this process or by the watchdog forked
    from it)."""
    descriptor = int(os.environ.pop("GI_CHANNEL_FD", "-1"))
    if descriptor < 0:
        return Channel(lambda record, at=None: None, lambda: 0, -1), {}
    data = b""
    while chunk := os.read(0, 65536):
        data += chunk
    key, plan = data[:KEY_BYTES], data[KEY_BYTES:]
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    sequence = [0]
    serialise, sign, send = _serialiser(), _signer(key), os.write

    def write(record: dict[str, Any], at: int | None = None) -> None:
        if at is not None:
            sequence[0] = at
        text = serialise(record)
        mac = sign(f"{sequence[0]}:{text}".encode())
        sequence[0] += 1
        data = f"{mac} {text}\n".encode()
        while data:
            data = data[send(descriptor, data) :]

    return Channel(write, lambda: sequence[0], descriptor), json.loads(plan) if plan.strip() else {}


class Inputs:
    """What gi gives one test run's plugin (`read`): the channel, keyed by what gi writes to the
    process's standard input, gi's plan, the tests' time limits, which tests run and in what
    order, and the project's modules. A cold run reads them as pytest loads the plugin, before
    the hooks over them are made; a warm worker makes the hooks of the session it prepared before
    its children exist (`prepare`), and each child reads its own as it starts (`activate`). The
    hooks never look them up here: each is bound into their variables once read (`attach` in
    `_hooks`)."""

    def __init__(self) -> None:
        self.ready = False
        self.channel = Channel(lambda record, at=None: None, lambda: 0, -1)
        self.plan: dict[str, Any] = {}
        self.test_limits: dict[str, float] = {}
        self.default_limit = 0.0
        #: Where a warm worker watches this child's deadlines (pytest_limits.WorkerWatch); else
        #: the session forks a watchdog process of its own.
        self.worker_watch = -1
        self.first: dict[str, int] = {}
        self.selected: set[str] | None = None
        self.project_modules: dict[str, str] = {}

    def read(self) -> Inputs:
        """Read them, once: a later call (by code under test, say) changes nothing."""
        if not self.ready:
            self.ready = True
            self.channel, self.plan = _channel()
            self.test_limits, self.default_limit = _limits()
            self.worker_watch = int(os.environ.pop("GI_WATCHDOG_FD", "-1"))
            self.first = {nodeid: position for position, nodeid in enumerate(_order())}
            self.selected = _selection()
            self.project_modules = _project_modules()
        return self

    def bound(self) -> tuple[Writer, Callable[[], int], int, dict[str, Any], dict[str, float], float, int,
                             dict[str, int], set[str] | None, dict[str, str]]:  # fmt: skip
        """Each input, as the hooks bind them (`attach` in `_hooks`): the channel's writer, its
        place in the sequence and its descriptor, the plan, the limits, the watchdog's descriptor,
        the order, the selection and the project's modules."""
        channel = self.channel
        return (channel.write, channel.position, channel.descriptor, self.plan, self.test_limits, self.default_limit,
                self.worker_watch, self.first, self.selected, self.project_modules)  # fmt: skip


def _limits() -> tuple[dict[str, float], float]:
    """Per-test time limits from the JSON file GI_TEST_LIMITS names: {"tests": {...}, "default": s}."""
    path = os.environ.pop("GI_TEST_LIMITS", "")
    if not path:
        return {}, 0.0
    with open(path, encoding="utf-8") as stream:
        data = json.load(stream)
    return {str(k): float(v) for k, v in data.get("tests", {}).items()}, float(data.get("default", 0.0))


def _order() -> list[str]:
    """The node ids to run first, in order, from the JSON list GI_TEST_ORDER names (the tests
    that failed most recently first, when gi stops at the first failure)."""
    path = os.environ.pop("GI_TEST_ORDER", "")
    if not path:
        return []
    with open(path, encoding="utf-8") as stream:
        return [str(nodeid) for nodeid in json.load(stream)]


def _selection() -> set[str] | None:
    """The node ids to run, from the JSON list GI_TEST_SELECT names (the training tests that can
    see a variant's edits); None: every collected test."""
    path = os.environ.pop("GI_TEST_SELECT", "")
    if not path:
        return None
    with open(path, encoding="utf-8") as stream:
        return {str(nodeid) for nodeid in json.load(stream)}


def _project_modules() -> dict[str, str]:
    """The editable files by the module name the tests import them as (from the JSON file
    GI_PROJECT_MODULES names), as absolute paths in this copy of the project."""
    path = os.environ.pop("GI_PROJECT_MODULES", "")
    if not path:
        return {}
    with open(path, encoding="utf-8") as stream:
        return {str(name): os.path.realpath(str(file)) for name, file in json.load(stream).items()}
