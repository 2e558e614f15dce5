"""A real HTTP server speaking the OpenAI protocol on 127.0.0.1, with scripted replies.

Only the model is stood in for: the openai client, its retries and timeouts, gi's cache,
budgets and operator all run for real against it. Each test scripts what the next requests
get: a reply, an HTTP error, a slow reply, or the server dying.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Action:
    reply: str = ""
    status: int = 200
    delay: float = 0.0
    die: bool = False
    #: When given, the reply waits for this event instead of sleeping, `delay` seconds at most.
    hold: threading.Event | None = None


@dataclass
class ScriptedModel:
    """The script: `respond` answers a request by its content when it returns an action (whatever
    order concurrent requests arrive in); else actions are taken in order; when they run out,
    `default` answers."""

    actions: list[Action] = field(default_factory=list)
    default: Action | None = None
    respond: Callable[[dict[str, Any]], Action | None] | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    #: When each request arrived (time.monotonic()).
    arrivals: list[float] = field(default_factory=list)
    #: For each held reply, whether its event came before `delay` ran out.
    released: list[bool] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self, body: dict[str, Any], headers: dict[str, str]) -> Action:
        with self.lock:
            self.requests.append(body)
            self.headers.append(headers)
            self.arrivals.append(time.monotonic())
            answer = self.respond(body) if self.respond is not None else None
            if answer is not None:
                return answer
            if self.actions:
                return self.actions.pop(0)
            return self.default or Action(status=500)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        action = self.server.model.next(body, {name.lower(): value for name, value in self.headers.items()})
        if action.die:
            self.server.dying = True
            # Stop serving and close the listening socket: later connections are refused at once.
            threading.Thread(target=lambda: (self.server.shutdown(), self.server.server_close()), daemon=True).start()
            self.close_connection = True
            return
        if action.hold is not None:
            released = action.hold.wait(action.delay)
            with self.server.model.lock:
                self.server.model.released.append(released)
        elif action.delay:
            time.sleep(action.delay)
        if action.status != 200:
            self._send(action.status, {"error": {"message": f"scripted {action.status}", "type": "scripted"}})
            return
        usage = {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}
        if self.path.endswith("/chat/completions"):
            choice = {"index": 0, "message": {"role": "assistant", "content": action.reply}, "finish_reason": "stop"}
            kind = "chat.completion"
        else:
            choice = {"index": 0, "text": action.reply, "finish_reason": "stop", "logprobs": None}
            kind = "text_completion"
        self._send(200, {"id": "scripted", "object": kind, "created": 0, "model": body.get("model", ""),
                         "choices": [choice], "usage": usage})  # fmt: skip

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("retry-after-ms", "10")
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, model: ScriptedModel) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.model = model
        self.dying = False


class ModelServer:
    """Start with `serve()`; `base_url` is what a config points at."""

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model
        self._server = _Server(model)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        if not self._server.dying:
            self._server.shutdown()
        self._server.server_close()


def serve(model: ScriptedModel) -> Iterator[ModelServer]:
    server = ModelServer(model)
    server.start()
    try:
        yield server
    finally:
        server.stop()
