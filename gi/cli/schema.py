"""`gi config --schema`: the JSON Schema of a config file, for editors (gi/config/schema.py)."""

from __future__ import annotations

import argparse

from rich.console import Console

from gi.cli.output import print_json


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`gi config`."""
    config = commands.add_parser(
        "config",
        help="print the JSON Schema of a config file, for editors",
        description="Print the JSON Schema (Draft 7) of an experiment config, made from the models gi validates a "
        "config with: every section and key with its type, default, allowed values and description. Save it beside "
        "your configs and point your editor at it (taplo and Even Better TOML read a first line "
        "'#:schema ./gi.schema.json'), and it completes and checks gi.toml as you type.",
    )
    what = config.add_mutually_exclusive_group(required=True)
    what.add_argument("--schema", action="store_true", help="print the config's JSON Schema")


def config_command(args: argparse.Namespace, console: Console) -> int:
    from gi.config.schema import config_schema

    print_json(config_schema())
    return 0
