"""`gi run` and `gi replay`: run (or resume, or replay) a config's runs with a progress bar."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn
from rich.table import Column
from rich.text import Text

from gi.model.errors import StoreError, UsageError

if TYPE_CHECKING:
    from gi.config import Config
    from gi.engine.progress import Progress as RunProgress
from gi.cli.output import InertConsole, say, say_isolation


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`gi run` and `gi replay`."""
    run = commands.add_parser(
        "run",
        help="run an experiment from a TOML config",
        description="Run the experiment a TOML config describes. The run folder is "
        "<experiment.output>/<experiment.name>-seed<seed>; running the same config again resumes "
        "an interrupted run from its last generation, --fresh starts over. With [[arms]] or experiment.seeds, "
        "every arm runs with every seed into <output>/<name>/<arm>-seed<seed>/, several at a time "
        "(experiment.parallel_runs); run again, it skips finished runs, resumes the others and ends with "
        "gi compare's tables. --generations, --population and --set change the config for this run without "
        "editing the file (for every arm too): the same run folder, but another experiment to it, so running "
        "the config as written afterwards needs --fresh.",
    )
    run.add_argument("config", type=Path, help="the experiment's TOML file")
    run.add_argument("--fresh", action="store_true", help="delete the run folder first and start over")
    run.add_argument("--seed", type=int, help="use this seed instead of experiment.seed")
    run.add_argument("--generations", type=int, metavar="N", help="use N instead of search.generations (for every arm)")
    run.add_argument("--population", type=int, metavar="N", help="use N instead of search.population (for every arm)")
    run.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="TABLE.KEY=VALUE",
        help="set a config key for this run, as the file would (a TOML value; repeatable): "
        "--set workload.rigorous_processes=4, --set 'mutators.operators=[\"constant\"]'; a bare word is text: "
        "--set search.algorithm=nsga3 (for every arm; the run folder's config changes with it, and gi replay takes "
        "the same --set to find the run it made); a mistake is named as --set: ...",
    )
    run.add_argument("--quiet", action="store_true", help="print only the final table")
    run.add_argument(
        "--offline",
        action="store_true",
        help="never ask the language model: replay its replies from the cache, and stop with an error on a miss",
    )

    replay = commands.add_parser(
        "replay",
        help="replay a finished run from its recorded measurements and the model's cached replies",
        description="Run a config's run again without measuring or asking anything: every evaluation, "
        "timing and held-out run comes from the recorded run's store, every model reply from the reply "
        "cache (offline). The replay goes to <run folder>/replay and summary.json says whether it reached "
        "the recorded front and history, and what (if anything) had to be measured anew; it exits 1 when the "
        "replay did not reach them.",
    )
    replay.add_argument("config", type=Path, help="the experiment's TOML file")
    replay.add_argument("--seed", type=int, help="the seed of the run to replay, instead of experiment.seed")
    replay.add_argument("--arm", help="the arm of the run to replay, for a config with [[arms]]")
    replay.add_argument("--from", dest="recorded", type=Path, help="the recorded run folder (default: the config's)")
    replay.add_argument("--into", type=Path, help="the folder for the replay (default: <recorded run>/replay)")
    replay.add_argument("--fresh", action="store_true", help="delete an earlier replay first")
    replay.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="TABLE.KEY=VALUE",
        help="the --set settings the recorded run was made with",
    )
    replay.add_argument("--quiet", action="store_true", help="print only the final table")


def run_command(args: argparse.Namespace, console: Console) -> int:
    from gi.config import load_config

    if args.seed is not None and args.seed < 0:
        raise UsageError(f"--seed {args.seed}: a seed is a whole number >= 0")
    _check_config_path(args)
    config = load_config(args.config, args.settings)
    # The engine's imports after the config: a mistake in it is told without waiting for them.
    from gi.engine.recorded import check_recorded
    from gi.reports.tables import front_view, oracle_line, tests_line
    from gi.run.experiment import run_experiment

    if args.seed is not None:
        key = "seeds" if config.is_experiment else "seed"
        value = [args.seed] if config.is_experiment else args.seed
        config = config.model_copy(update={"experiment": config.experiment.model_copy(update={key: value})})
    config = _search_overrides(config, args)
    replay_of: Path | None = None
    if args.command == "replay":
        config = _one_run(config, args.arm)
        replay_of = args.recorded or config.run_folder
        _check_replay_folder(args.into, replay_of)
        check_recorded(replay_of, config.fingerprint(), given=args.recorded is not None)  # before anything starts
    elif config.is_experiment:
        return _run_arms(args, config, console)
    _check_run_folder(config)
    say_isolation(config)
    search = config.search
    total = search.population * (search.generations + 1)
    with run_progress(console, disable=args.quiet) as progress:
        task = progress.add_task(
            "search", total=total, generation=0, generations=search.generations, evaluations=0, status=""
        )
        shown_warnings: list[str] = []
        errors = InertConsole(stderr=True)
        phases: list[str] = []

        pace = Pace(total)

        def report(state: RunProgress, generation_done: bool) -> None:
            if state.phase and (not phases or phases[-1] != state.phase):
                phases.append(state.phase)
                if not args.quiet:
                    progress.console.print(f"gi: {state.phase}", markup=False, highlight=False, soft_wrap=True)
            best = "  ".join(f"{name}={value:.4g}" for name, value in state.best.items())
            done = (state.generation + 1) * search.population if generation_done else None
            completed = done if done is not None else state.generation * search.population + state.done_in_generation
            status = f"{pace.status(state, completed, time.monotonic())}  HV {state.hypervolume:.4g}  {best}"
            progress.update(
                task, generation=state.generation, evaluations=state.evaluations, status=status, completed=completed
            )
            if generation_done and not args.quiet:
                progress.console.print(
                    f"gen {state.generation:>3}  front {state.front_size:>3}  evals {state.evaluations}  {status}",
                    markup=False,
                    highlight=False,
                )
            while len(shown_warnings) < len(state.warnings):
                shown_warnings.append(state.warnings[len(shown_warnings)])
                errors.print(f"gi: warning: {shown_warnings[-1]}", markup=False, highlight=False, soft_wrap=True)

        result = run_experiment(
            config,
            fresh=args.fresh,
            offline=getattr(args, "offline", False),
            on_progress=report,
            replay_of=replay_of,
            replay_into=getattr(args, "into", None),
        )
    console.print(front_view(result.summary))
    summary = result.summary
    rate = summary["overfitting_rate"]
    console.print(
        f"{summary['evaluations']} evaluations, {summary['cache_hits']} cache hits, "
        f"{summary['wall_seconds']:.1f} s; overfitting rate "
        f"{'-' if rate is None else f'{rate:.0%}'}; sandbox: {summary['sandbox']}"
    )
    console.print(judged_by(summary), soft_wrap=True)
    if (tests := tests_line(summary)) is not None:
        console.print(tests, soft_wrap=True, markup=False, highlight=False)
    if (line := oracle_line(summary)) is not None:
        console.print(line, soft_wrap=True, markup=False, highlight=False)
    console.print(f"run folder: {result.folder}  (gi show {result.folder} ID prints a member's diff)", soft_wrap=True)
    if (result.folder / "report.html").is_file():
        console.print(f"report: {result.folder / 'report.html'}", soft_wrap=True)
    if replay_of is not None:
        return _say_replay(replay_of, summary, console)
    return 0


def _search_overrides(config: Config, args: argparse.Namespace) -> Config:
    """The config with `gi run --generations N --population N` laid over search.generations and
    search.population, for the config and every arm (the command line wins over an arm's own
    value); a value the config could not hold is refused as the config would refuse it."""
    from pydantic import ValidationError

    from gi.config.sections import SearchSection

    overrides = {key: value for key in ("generations", "population") if (value := getattr(args, key, None)) is not None}
    if not overrides:
        return config
    try:
        search = SearchSection.model_validate({**config.search.model_dump(), **overrides})
    except ValidationError as error:
        problem = error.errors()[0]
        key = str(problem["loc"][0])
        raise UsageError(
            f"--{key} {overrides[key]}: {problem['msg'][0].lower()}{problem['msg'][1:]} (search.{key})"
        ) from None
    arms = [
        arm.model_copy(update={"search": {k: v for k, v in arm.search.items() if k not in overrides}})
        for arm in config.arms
    ]
    return config.model_copy(update={"search": search, "arms": arms})


def _check_config_path(args: argparse.Namespace) -> None:
    """`gi run` and `gi replay` take a config file; a folder given instead (a run folder, for a
    replay, is what --from takes) is one clear line."""
    from gi.engine.run_folder import SUMMARY_NAME

    path: Path = args.config
    if not path.is_dir():
        return
    if args.command == "replay":
        named = ""
        with suppress(OSError, ValueError, KeyError, TypeError):
            named = json.loads((path / SUMMARY_NAME).read_text(encoding="utf-8"))["experiment"]["config"]
        config = named or "CONFIG"
        raise UsageError(
            f"{path}: a folder; gi replay takes the experiment's config file, and --from the recorded run"
            f" folder: gi replay {config} --from {path}"
        )
    raise UsageError(f"{path}: a folder, not a config file; gi {args.command} takes the experiment's TOML file")


def _check_replay_folder(into: Path | None, recorded: Path) -> None:
    """A replay never goes into the recorded run's folder (it would empty or rewrite it), nor
    into a folder of other files."""
    if into is None:
        return
    target, source = into.resolve(), recorded.resolve()
    if target == source or source.is_relative_to(target):
        raise UsageError(f"--into {into}: that folder holds the recorded run {recorded}; a replay goes elsewhere")
    if target.is_dir() and any(target.iterdir()) and not (target / "store.sqlite").is_file():
        raise UsageError(
            f"--into {into}: a folder of other files; a replay goes into a new folder or an earlier replay"
        )


def _one_run(config: Config, arm: str | None) -> Config:
    """The single run of an experiment that --seed and --arm name (gi replay replays one run)."""
    runs = [run for run in config.runs() if arm is None or run.arm == arm]
    if len(runs) != 1:
        arms = ", ".join(dict.fromkeys(str(run.arm) for run in config.runs()))
        raise UsageError(
            f"{config.source}: gi replay replays one run; {len(runs)} match: name one with --seed N"
            f" and --arm NAME (arms: {arms})"
        )
    return runs[0]


def _say_replay(recorded: Path, summary: dict[str, Any], console: Console) -> int:
    """Whether a replay reproduced its record; exit 1 when it did not."""
    same = summary["replay"]
    anew = summary["measurements"]["measured"]
    replayed = summary["measurements"]["replayed"]
    what = ", ".join(f"{count} {kind}" for kind, count in replayed.items()) or "nothing"
    if same["front"] and same["history"] and not anew:
        console.print(f"replay of {recorded}: the recorded front and history, reached from {what} replayed")
        return 0
    differs = [name for name in ("front", "history") if not same[name]]
    measured = ", ".join(f"{count} {kind}" for kind, count in anew.items())
    if differs:
        line = f"replay of {recorded}: did not reach the recorded {' and '.join(differs)}"
    else:
        line = f"replay of {recorded}: the recorded front and history, but not from the record alone"
    if measured:
        line += f"; measured anew what the record lacks: {measured} (a record from an older gi, or a changed one)"
    elif differs:
        line += "; nothing was measured anew, so the record does not hold what its run did (was it changed?)"
    say(console, line)
    return 1


class _Status(ProgressColumn):
    """The progress line's status, on one line: cut with an ellipsis where the terminal ends."""

    def render(self, task: Task) -> Text:
        """The task's status as one line that ends in an ellipsis where the cell ends."""
        return Text(str(task.fields.get("status", "")), no_wrap=True, overflow="ellipsis")


def run_progress(console: Console, *, disable: bool) -> Progress:
    """The live progress line of `gi run`: the generation, the evaluations so far and the
    budget spent (bar, programs) always shown whole; then the status (time left, shares of
    cache hits and time-outs, hypervolume, best values), which alone is cut, at its end, when
    the terminal is too narrow (the bar shrinks first). At 80 columns the time left and the
    shares fit; hypervolume and best values are on each generation's line too."""
    return Progress(
        TextColumn("[bold]gen {task.fields[generation]}/{task.fields[generations]}", table_column=Column(no_wrap=True)),
        TextColumn("evals {task.fields[evaluations]}", table_column=Column(no_wrap=True)),
        BarColumn(bar_width=10),
        MofNCompleteColumn(table_column=Column(no_wrap=True)),
        _Status(table_column=Column(ratio=1)),
        console=console,
        disable=disable,
        transient=False,
    )


class Pace:
    """How fast this session of a run spends its budget (population x (generations + 1)
    programs), for the progress line's status: the time left at this session's pace, and the
    shares of cache hits and time-outs."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.start: tuple[float, int, int] | None = None  # (time, budget spent, evaluations) at the first report

    def status(self, state: RunProgress, completed: int, now: float) -> str:
        if self.start is None:
            self.start = (now, completed, state.evaluations)
        started, completed_before, evaluations_before = self.start
        evaluated = state.evaluations - evaluations_before
        programs = state.evaluations + state.cache_hits
        hits = f"{state.cache_hits / programs:.0%}" if programs else "-"
        timeouts = f"{state.timed_out / evaluated:.0%}" if evaluated else "-"
        spent, elapsed = completed - completed_before, now - started
        eta = _duration((self.total - completed) * elapsed / spent) if spent > 0 and elapsed > 0 else "-"
        return f"ETA {eta}  cache hits {hits}  timeouts {timeouts}"


def judged_by(summary: dict[str, Any]) -> str:
    """What judged the run beyond its training tests: how many held-out tests, and the sites
    left out because no training test executes them."""
    held = summary.get("held_out_tests") or 0
    said = (
        f"held-out: {held} test{'s' if held != 1 else ''} judged the front"
        if held
        else "held-out: none judged the front (tests.holdout or tests.holdout_fraction adds them)"
    )
    sites = summary.get("sites")
    if isinstance(sites, dict):
        if sites.get("left_out"):
            said += f"; {sites['left_out']} of {sites['total']} sites left out: no training test executes them"
        elif sites.get("unexecuted"):
            said += f"; {sites['unexecuted']} of {sites['total']} sites no training test executes were editable"
    return said


def _duration(seconds: float) -> str:
    """'42s', '3m05s', '1h02m'."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def _run_arms(args: argparse.Namespace, config: Config, console: Console) -> int:
    """Every arm with every seed; a line per generation of each run, then the comparison."""
    from gi.reports.compare import arm_table, compare, pair_table, write_outputs
    from gi.studies.arms import parallel_runs, run_arms

    runs = config.runs()
    _check_run_folder(runs[0])
    say_isolation(config)
    at_once = parallel_runs(config)
    arms = list(dict.fromkeys(run.arm for run in runs))
    console.print(
        f"experiment {config.experiment.name}: {len(arms)} arm(s) ({', '.join(map(str, arms))}) x "
        f"{len(runs) // len(arms)} seed(s), {at_once} run(s) at a time, into {config.experiment_folder}"
    )

    def say(line: str) -> None:
        console.print(line, markup=False, highlight=False)

    run_arms(config, fresh=args.fresh, offline=args.offline, on_line=None if args.quiet else say)
    result = compare([config.experiment_folder])
    written = write_outputs(result, config.experiment_folder)
    console.print(arm_table(result))
    if result["pairs"]:
        console.print(pair_table(result))
    from gi.reports.document import HTML_NAME, write_report_or_warn

    if (warning := write_report_or_warn(config.experiment_folder)) is not None:
        InertConsole(stderr=True).print(f"gi: warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    else:
        written.append(config.experiment_folder / HTML_NAME)
    console.print(f"experiment folder: {config.experiment_folder}  ({', '.join(p.name for p in written)})")
    return 0


def _check_run_folder(config: Config) -> None:
    """Refuse, before any work, a run folder that cannot be made or written: experiment.output
    is (under) a file, or on a file system no one may write to. Probed by creating a folder
    and removing it again, since permission bits do not stop root."""
    folder = config.run_folder
    existing = folder
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    problem = None
    if not existing.is_dir():
        problem = f"{existing} is {'a file' if existing.is_file() else 'a broken link or a device'}, not a folder"
    else:
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".gi-probe-", dir=existing))
        except OSError as error:
            problem = f"cannot create a folder in {existing} ({error.strerror or error})"
    if problem is not None:
        raise StoreError(
            f"{config.source}: experiment.output = {str(config.experiment.output)!r}: "
            f"cannot write the run folder {folder}: {problem}"
        )
