"""The `gi` command: run experiments, show and compare their results, list operators and algorithms.

Bad input (command line, config, program, run folder) prints one line per mistake and exits
with the error's code (2), never a traceback. Ctrl-C, or SIGTERM during a run, stops it with
exit code 130; the run resumes from its last checkpoint when run again.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType

from rich.console import Console

from gi.cli import init, listings, llm, run, schema, show, studies
from gi.cli.output import InertConsole
from gi.model.errors import GIError


def _version() -> str:
    """The installed distribution's version (gi-improve), or the source tree's when not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gi-improve")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gi",
        description="Genetic improvement of Python programs: evolve patches to a program, scored on "
        "tests, complexity, style and size at once, and keep the Pareto front.",
        epilog="Exit codes: 0 done; 1 a replay that did not reach the recorded run; 2 bad input (command line, "
        "config, program or run folder: one line per mistake naming the file and key); 130 interrupted (Ctrl-C, "
        "or SIGTERM during gi run: run it again to resume). Two gi runs of one run folder at once are refused.",
    )
    parser.add_argument("--version", action="version", version=f"gi {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    for family in (run, show, llm, listings, init, studies, schema):
        family.add_parsers(commands)
    return parser


#: The handler of each command: it returns the exit code.
HANDLERS: dict[str, Callable[[argparse.Namespace, Console], int]] = {
    "run": run.run_command,
    "replay": run.run_command,
    "show": show.show_command,
    "apply": show.apply_command,
    "report": show.report_command,
    "llm": llm.llm_command,
    "operators": listings.operators_command,
    "algorithms": listings.algorithms_command,
    "objectives": listings.objectives_command,
    "compare": listings.compare_command,
    "init": init.init_command,
    "minimize": studies.minimize_command,
    "ablate": studies.ablate_command,
    "validate": studies.validate_command,
    "config": schema.config_command,
}


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """While a run lasts, SIGTERM (`kill`, a scheduler's stop) interrupts it as Ctrl-C does: the
    same cleanup, message and exit code, and the run resumes from its last checkpoint. A second
    SIGTERM ends the process at once. Signal handlers belong to the main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line's arguments, a command's options given anywhere among its positionals
    (`gi show RUN --json ID`: argparse alone takes ID for a stray argument)."""
    parser = _parser()
    words = list(sys.argv[1:] if argv is None else argv)
    args, extra = parser.parse_known_args(words)
    if not extra:
        return args
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    command: argparse.ArgumentParser = commands.choices[args.command]
    if any(isinstance(a, argparse._SubParsersAction) for a in command._actions):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    rest = words[words.index(args.command) + 1 :]
    return command.parse_intermixed_args(rest, namespace=argparse.Namespace(command=args.command))


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    console = InertConsole()
    errors = InertConsole(stderr=True)
    try:
        handler = HANDLERS[args.command]
        if args.command in ("run", "replay"):
            with _sigterm_interrupts():
                return handler(args, console)
        return handler(args, console)
    except GIError as error:
        for line in str(error).splitlines():
            errors.print(f"gi: error: {line}", markup=False, highlight=False, soft_wrap=True)
        return error.exit_code
    except KeyboardInterrupt:
        errors.print(
            "gi: interrupted; run the same command again to resume from the last generation",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return 130


if __name__ == "__main__":
    sys.exit(main())
