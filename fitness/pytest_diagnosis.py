"""Why pytest could not run a project's tests, in one line naming the cause and its fix: a plugin
the project's pytest settings ask for that the interpreter lacks, a settings error, a folder the
tests write into, a test file that cannot be collected, an installed copy imported in place of
the project's (`gi init` and `gi run` say the same)."""

from __future__ import annotations

import configparser
import contextlib
import re
import tomllib
from collections.abc import Collection, Sequence
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from gi.fitness.tests import TestRun

#: The options pytest plugins add, by the distribution that gives them (a prefix matches an
#: option's start): to name the plugin a project's pytest settings ask for when it is missing.
PLUGIN_OPTIONS = (
    ("--cov", "pytest-cov"), ("--no-cov", "pytest-cov"), ("-n", "pytest-xdist"), ("--numprocesses", "pytest-xdist"),
    ("--dist", "pytest-xdist"), ("--timeout", "pytest-timeout"), ("--benchmark", "pytest-benchmark"),
    ("--reruns", "pytest-rerunfailures"), ("--randomly", "pytest-randomly"), ("-p randomly", "pytest-randomly"),
    ("--hypothesis", "hypothesis"), ("--asyncio-mode", "pytest-asyncio"), ("--doctest-plus", "pytest-doctestplus"),
    ("--mypy", "pytest-mypy"), ("--flake8", "pytest-flake8"), ("--html", "pytest-html"), ("--ds", "pytest-django"),
    ("--mpl", "pytest-mpl"), ("--snapshot-update", "syrupy"), ("--black", "pytest-black"),
    ("--isort", "pytest-isort"), ("--cache-clear", "pytest"),
)  # fmt: skip
_MISSING_MODULE = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '(?P<module>[\w.]+)'")
_UNRECOGNISED = re.compile(r"error: unrecognized arguments: (?P<options>.+)$", re.MULTILINE)
_CONFIG_FILE = re.compile(r"^\s*(?:inifile|configfile): (?P<file>\S+)", re.MULTILINE)
READ_ONLY = re.compile(r"Read-only file system|\[Errno 30\]")


def missing_plugins(output: str) -> tuple[list[str], list[str], str]:
    """From pytest's usage error: the options it did not know, the plugins that give them, and
    the settings file that asked for them ("" when none is named)."""
    found = _UNRECOGNISED.search(output)
    if found is None:
        return [], [], ""
    options = found.group("options").split()
    plugins = sorted({plugin for option in options for prefix, plugin in PLUGIN_OPTIONS
                      if option == prefix or option.startswith((prefix + "=", prefix + "-"))})  # fmt: skip
    config = _CONFIG_FILE.search(output)
    return options, plugins, Path(config.group("file")).name if config else ""


def cannot_run(run: TestRun, paths: Sequence[str], python: str, limit: float) -> str | None:
    """Why the tests (pytest `paths`) of the original did not run at all, one line naming the
    cause and where gi knows it the fix, or None when they ran: `gi init` and `gi run` say the
    same."""
    if run.forged:
        return f"gi cannot trust the training tests' report: {run.forged}"
    if run.timed_out:
        return run.stopped or f"the training tests did not finish in {limit:g} s (timed out)"
    if run.collect_errors:
        where, message = sorted(run.collect_errors.items())[0]
        more = len(run.collect_errors) - 1
        also = f" (and {more} more test file{'s' if more > 1 else ''})" if more else ""
        return f"{where} cannot be collected{also}: {last_error_line(message)}"
    if run.exit_status in (-1, 3, 4):
        return why_not_run(run, python)
    if not run.outcomes:
        return f"pytest collects no test in {', '.join(paths)}"
    if run.foreign_imports:
        name, file = sorted(run.foreign_imports.items())[0]
        return (
            f"the tests import {name} from {file}, not from the project folder, so they would never see gi's edits;"
            " uninstall that copy from the environment the tests run in, or install the project there in"
            " editable mode (pip install -e .)"
        )
    return None


def why_not_run(run: TestRun, python: str) -> str:
    """One line saying why pytest could not run the tests at all (usage or internal error),
    naming the cause and its fix where gi knows them: a plugin the project's pytest settings
    ask for that the interpreter lacks, a settings error, a folder the tests write into."""
    output = run.output_tail
    options, plugins, config = missing_plugins(output)
    if options:
        where = f"{config}'s addopts" if config else "the command line"
        shown = ", ".join(options[:4]) + (", ..." if len(options) > 4 else "")
        if plugins and plugins != ["pytest"]:
            names = " ".join(plugins)
            return (
                f"{where} (the project's pytest settings) use {shown}, options of {', '.join(plugins)}, which the"
                f" interpreter the tests run in ({python}) lacks: install it there ({python} -m pip install {names}),"
                " or name the project's environment that has it (program.python)"
            )
        return f"{where} (the project's pytest settings) use {shown}, which pytest there ({python}) does not know"
    if READ_ONLY.search(output):
        return f"the tests write where gi's copy of the project is read-only: {last_error_line(output)}"
    return f"pytest could not run the training tests (exit status {run.exit_status}): {last_error_line(output)}"


def last_error_line(text: str) -> str:
    """The line of pytest's output that says what went wrong: the last `E   ...` line, else the
    last `ERROR:`/`error:` line, else the last line that is not empty."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line.removeprefix("E").strip() for line in lines if line.startswith("E ")]
    usage = [line for line in lines if line.startswith(("ERROR:", "INTERNALERROR>")) or "error:" in line]
    return (errors or usage or lines or ["no output"])[-1]


def missing_modules(run: TestRun, own: Collection[str]) -> dict[str, list[str]]:
    """The modules the tests failed to import (the last `No module named 'x'` of a failing test's
    report or a test file's collection error) that are not the project's own (`own`: top-level
    names), each with the tests or test files that failed on it, sorted."""
    found: dict[str, list[str]] = {}
    for test, text in sorted({**run.failures, **run.collect_errors}.items()):
        matches = list(_MISSING_MODULE.finditer(text))  # the last: what it failed on (the others were handled)
        module = matches[-1].group("module") if matches else ""
        if module and module.split(".", maxsplit=1)[0] not in own:
            found.setdefault(module, []).append(test)
    return found


def install_hint(module: str, declared: Collection[str], python: str) -> str:
    """How to give the tests' interpreter (`python`) a missing `module`: pip install of the
    distribution the project declares for it (`declared`: its dependencies' names), or of the
    module's own name, which may not be its distribution's; or name the environment that has it."""
    top = module.split(".", maxsplit=1)[0]
    wanted = canonicalize_name(top)
    name = next((dist for dist in sorted(declared) if canonicalize_name(dist) == wanted), "")
    command = f"{python} -m pip install {name or top}"
    maybe = "" if name else f", if that is the name of the distribution that gives {top}"
    return f"install it there ({command}{maybe}), or name the project's environment that has it (program.python)"


def declared_dependencies(root: Path) -> set[str]:
    """The distributions a project says it needs: pyproject.toml's [project] dependencies and
    optional ones, setup.cfg's install_requires and extras, requirements*.txt files."""
    lines: list[str] = []
    with contextlib.suppress(OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
        lines += list(project.get("dependencies", []))
        for extra in project.get("optional-dependencies", {}).values():
            lines += list(extra)
    setup = configparser.ConfigParser()
    with contextlib.suppress(OSError, configparser.Error, UnicodeDecodeError):
        setup.read(root / "setup.cfg", encoding="utf-8")
        lines += setup.get("options", "install_requires", fallback="").splitlines()
        if setup.has_section("options.extras_require"):
            for value in setup["options.extras_require"].values():
                lines += value.splitlines()
    for path in sorted(root.glob("requirements*.txt")):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            lines += path.read_text(encoding="utf-8").splitlines()
    names = set()
    for line in lines:
        with contextlib.suppress(InvalidRequirement):
            names.add(Requirement(str(line).split("#")[0].strip()).name)
    return names
