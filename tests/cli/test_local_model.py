"""A short run against the real local model that `gi llm serve` starts (the local-llm extra)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from gi.cli.local_model import MODEL_ALIAS
from gi.cli.main import main
from tests.run.test_llm_runs import write_experiment

pytest.importorskip("llama_cpp", reason='needs the local-llm extra: pip install -e ".[local-llm]"')


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.slow
@pytest.mark.local_llm
def test_a_short_run_with_the_real_local_model(tmp_path: Path) -> None:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gi.cli", "llm", "serve", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "server.log").open("w"),
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 300
        while True:
            assert server.poll() is None, (tmp_path / "server.log").read_text()[-2000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5) as reply:
                    assert MODEL_ALIAS in reply.read().decode()
                    break
            except OSError:
                assert time.monotonic() < deadline, "the local model server did not come up"
                time.sleep(1)
        config = write_experiment(tmp_path, f"http://127.0.0.1:{port}/v1", share=0.5)
        text = config.read_text()
        text = text.replace('model = "scripted"', f'model = "{MODEL_ALIAS}"').replace(
            'api = "chat"', 'api = "completions"'
        )
        text = text.replace("timeout = 2\n", "timeout = 120\n").replace("max_requests = 200", "max_requests = 40")
        config.write_text(text.replace("[llm]", "[llm]\nmax_tokens = 128"))
        assert main(["run", str(config), "--quiet"]) == 0
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    summary = json.loads((tmp_path / "runs" / "pairs-seed3" / "summary.json").read_text())
    llm = summary["llm"]
    assert llm["requests"] >= 1 and llm["proposals"] >= 1, llm
    assert llm["parse_rate"] is not None and 0 <= llm["parse_rate"] <= 1
    assert llm["stopped"] is None, llm
    # The model's rows: one a mode ("llm.rewrite"), beside "llm" (tries that found no function).
    rows = [row for name, row in summary["operators"].items() if name == "llm" or name.startswith("llm.")]
    # Every reply is a proposal or a rejection of some kind (gi show's columns for the model).
    rejections = (
        "proposals",
        "unparseable",
        "not_applied",
        "wrong_kind",
        "tampering",
        "no_ops",
        "not_novel",
        "reviewer",
    )
    assert sum(row.get(column, 0) for row in rows for column in rejections) >= 1, rows
    print(f"local model: parse rate {llm['parse_rate']}, pass rate {llm['pass_rate']}, "
          f"{llm['requests']} requests, {llm['completion_tokens']} completion tokens")  # fmt: skip
