"""The behaviour oracle's workers: one program's functions called in a sandboxed process of its
own (fitness/sandboxed/oracle_worker.py), over a pipe whose answers the worker signs with a key
gi gives it, so that an answer the worker did not write is told apart."""

from __future__ import annotations

import hmac
import json
import os
import secrets
import struct
import time
from collections.abc import Mapping, Sequence
from hashlib import sha256
from typing import Any

from gi.engine.sandbox.runner import LiveCommand, Sandbox
from gi.fitness.oracle.record import WORKER_NAME, worker_source
from gi.fitness.oracle.values import Call, Outcome
from gi.fitness.tests import PytestSetup

#: Seconds one call may take in a worker; past it, the call has timed out.
CALL_SECONDS = 1.0
#: Seconds a worker may take to start and import the editable modules.
START_SECONDS = 60.0
#: Beyond a call's limit, how long gi waits for the answer before it stops the worker.
ANSWER_MARGIN = 2.0
#: The longest answer gi reads from a worker (what a call returned, encoded, is bounded far below).
ANSWER_BYTES = 64 * 1024 * 1024


class OracleError(Exception):
    """A worker could not start, or answered what it did not write."""


class OracleWorker:
    """One program's functions, called in a sandboxed process of their own."""

    def __init__(self, sandbox: Sandbox, setup: PytestSetup, modules: Sequence[str]) -> None:
        self.sandbox = sandbox
        self.setup = setup
        self.modules = list(modules)
        self.script = sandbox.install_tool(WORKER_NAME, worker_source())
        self.live: LiveCommand | None = None
        self.key = b""
        self.number = 0
        self.started = 0

    def _start(self) -> LiveCommand:
        self.key, self.number = secrets.token_bytes(32), 0
        env = {"PYTHONPATH": self.setup.pythonpath(self.sandbox.tools, self.sandbox.workdir)}
        live = self.sandbox.start([self.setup.python, str(self.script), "serve"], env=env)
        self.live = live
        self.started += 1
        self._send({"key": self.key.hex(), "modules": self.modules})
        ready = self._receive(START_SECONDS)
        if ready is None or "ready" not in ready:
            tail = live.stderr.text().strip().splitlines()[-1:] or ["no answer"]
            self.stop()
            raise OracleError(f"the oracle's worker did not start: {tail[0]}")
        return live

    def call(self, call: Call) -> Outcome:
        """What the program did on the call: a timed-out call stops the worker (the next call
        starts another)."""
        if self.live is None or not self.live.alive():
            self.stop()
            self._start()
        self._send(call.request(CALL_SECONDS))
        answer = self._receive(CALL_SECONDS + ANSWER_MARGIN)
        if answer is None:
            self.stop()
            return {"timed_out": True}
        return answer

    def _send(self, request: Mapping[str, Any]) -> None:
        assert self.live is not None
        data = json.dumps(request).encode()
        data = struct.pack(">I", len(data)) + data
        try:
            while data:
                data = data[os.write(self.live.requests, data) :]
        except OSError:
            pass  # it died: the answer will not come

    def _receive(self, timeout: float) -> dict[str, Any] | None:
        """The next answer, its signature checked; None if none came in time."""
        assert self.live is not None
        deadline = time.monotonic() + timeout
        header, _ = self.live.read(4, deadline)
        if header is None:
            return None
        size = struct.unpack(">I", header)[0]
        if size > ANSWER_BYTES:
            raise OracleError("the worker's answers were not written by gi's worker (an answer too long)")
        body, _ = self.live.read(size, deadline)
        if body is None:
            return None
        try:
            framed = json.loads(body)
            text = str(framed["body"])
            expected = hmac.new(self.key, f"{self.number}:{text}".encode(), sha256).hexdigest()
            if not hmac.compare_digest(str(framed["mac"]), expected):
                raise ValueError("a signature that does not match")
            answer: dict[str, Any] = json.loads(text)
        except (ValueError, KeyError, TypeError) as error:
            raise OracleError(f"the worker's answers were not written by gi's worker ({error})") from None
        self.number += 1
        return answer

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
