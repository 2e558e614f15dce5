"""The operators a run uses: the classic ones its config names, and those built from a config
section of their own (the language model's `[llm]`, with the share `mutators.llm` gives it),
under the run's sandbox policy. Every one of them reaches the search through the one
`mutators.Operator` interface; nothing here names the model's operator.
"""

from __future__ import annotations

from gi.config import Config
from gi.engine.progress import Progress
from gi.engine.sandbox.bubblewrap import Isolation
from gi.engine.sandbox.runner import hide_environment
from gi.engine.storage import RunStorage
from gi.model.errors import ConfigError
from gi.model.results import Evaluation
from gi.mutators import OPERATORS, Operator
from gi.mutators.base import CONFIGURED, RunFacts


def run_goal(config: Config, baseline: Evaluation) -> str:
    """What the run's objectives ask for: "faster" with a runtime objective, "repair" when the
    original fails training tests, else "simpler"."""
    repairing = baseline.measures.get("failed_tests", 0) > 0
    return "faster" if "runtime" in config.objectives.names() else "repair" if repairing else "simpler"


def run_operators(
    config: Config,
    baseline: Evaluation,
    isolation: Isolation,
    storage: RunStorage,
    progress: Progress,
    *,
    offline: bool = False,
) -> list[Operator]:
    """The config's classic operators, then those it builds from sections of their own, each
    restored from the state a resumed run saved. An operator that brings code from outside gi
    (the language model's) is refused without a sandbox unless evaluation.llm_without_sandbox
    says otherwise, and then gi hides its environment from other processes."""
    operators: list[Operator] = [OPERATORS.get(name) for name in config.mutators.names()]
    facts = RunFacts(run_goal(config, baseline), config.llm_cache, offline, config.experiment.seed)
    for name in CONFIGURED.names():
        share = float(getattr(config.mutators, name, 0.0) or 0.0)
        section = getattr(config, name, None)
        if section is None or share <= 0:
            continue
        _sandbox_policy(config, isolation, name, share)
        operator = CONFIGURED.get(name)(section.model_dump(), share, facts)
        storage.restore_operators([operator])
        progress.warnings.extend(operator.warnings())
        operators.append(operator)
    return operators


def _sandbox_policy(config: Config, isolation: Isolation, name: str, share: float) -> None:
    if isolation.sandboxed:
        return
    if not config.evaluation.llm_without_sandbox:
        raise ConfigError(
            f"{config.source}: mutators.{name} = {share:g}, but the sandbox does not"
            f" work here ({isolation.description}); the model's code would run with your rights."
            " Install bubblewrap, or set evaluation.llm_without_sandbox = true to accept that"
        )
    hide_environment()
