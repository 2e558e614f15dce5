"""The language-model operator: a model rewrites one function, and the rewrite becomes an edit.

The prompt shows the function as it stands in the variant (the patch so far applied), the
lines above it, the goal, the variant's measurements and, for repair, the failing training
tests' output (held-out tests never reach a prompt). The reply must parse, be one function
of the same name, and differ from the current one in its syntax tree; then it is a
`ReplaceFunction` edit carrying the new source, so applying it again never asks the model.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import json
import re
import textwrap
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
import numpy as np

from gi.model.edits import Edit, ReplaceFunction, RewritePlan
from gi.model.errors import EditError
from gi.model.patch import Patch, Variant, apply, effective_edits
from gi.model.program import Program, parse_quietly
from gi.model.sites import Location, SiteKind
from mutators.base import BaseOperator, MutationContext, OperatorUsage, RunFacts, choose_site
from mutators.llm.client import LLMClient, LLMSettings, LLMStoppedError
from mutators.llm.prompts import GOALS, Prompts

FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL)
#: Characters of failing test output a repair prompt may carry.
FAILURE_CHARS = 3000
#: Samples of one prompt that may give nothing new (the same function, or a program the
#: search already has) before that prompt is not asked again.
FRUITLESS_LIMIT = 2
#: The name of the marker statement that finds a function in a variant.
MARK = "__gi_function_here__"


@dataclass
class LLMStats:
    """What became of the operator's proposals."""

    proposals: int = 0
    #: Replies received (from the cache or the server): what `parse_rate` is a share of.
    replies: int = 0
    unparseable: int = 0
    wrong_kind: int = 0
    no_ops: int = 0
    edits: int = 0
    seconds: float = 0.0
    rejected: list[str] = field(default_factory=list)

    @property
    def parse_rate(self) -> float | None:
        """The share of replies that parsed; None when no reply came."""
        return 1 - self.unparseable / self.replies if self.replies else None


@dataclass(frozen=True, slots=True)
class _Mark(Edit):
    """Not an edit of the search: a marker statement put just above a function, to find the
    function in the variant a patch makes."""

    def anchors(self) -> tuple[Location, ...]:
        return ()

    def positions(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        plan.insert_before(self.target, cst.parse_statement(f"{MARK}\n"))


class _MarkFinder(cst.CSTVisitor):
    """Finds the statement right after the marker."""

    def __init__(self) -> None:
        super().__init__()
        self.found: cst.CSTNode | None = None

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.Module, cst.IndentedBlock)):
            for first, second in itertools.pairwise(node.body):
                if _is_mark(first):
                    self.found = second
        return self.found is None


def _is_mark(statement: cst.CSTNode) -> bool:
    """Whether `statement` is the marker's line alone (libcst.matchers would say so too, and
    costs a quarter of a second to import)."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    line = statement.body[0]
    return isinstance(line, cst.Expr) and isinstance(line.value, cst.Name) and line.value.value == MARK


def removed_by(patch: Patch) -> list[Location]:
    """The subtrees of the original whose content the effective edits of `patch` take away."""
    return [
        gone for edit, took in zip(patch.edits, effective_edits(patch), strict=True) if took for gone in edit.removes()
    ]


def function_in_variant(
    program: Program, patch: Patch, location: Location
) -> tuple[cst.Module, cst.FunctionDef, list[str]] | None:
    """The function at `location` as it stands in the variant `patch` makes (its module, its
    node, the lines above it), or None if the patch took it away.

    The same `apply` puts a marker just above it, so it is found wherever the patch moved it
    and whatever names it shares with its neighbours (a property's getter and setter).
    """
    if any(gone.contains(location) for gone in removed_by(patch)):
        return None
    source = apply(program, patch.appended(_Mark(location))).sources[location.file]
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return None
    finder = _MarkFinder()
    module.visit(finder)
    function = finder.found
    if not isinstance(function, cst.FunctionDef):
        return None
    lines = source.splitlines()
    above = lines[: next(i for i, line in enumerate(lines) if line.strip() == MARK)]
    whole = module.code_for_node(function)
    leading = whole[: len(whole) - len(module.code_for_node(function.with_changes(leading_lines=())))]
    return module, function, above + leading.splitlines()


def extract_function(reply: str, name: str, def_line: str | None = None) -> str:
    """The function source in a reply: the first fenced block defining it, else the reply itself.

    For a completion (`def_line` given: the `def ...:` line, maybe several) the reply
    continues the def line, and ends where the code returns to column 0.
    """
    if def_line is not None:
        lines = (def_line + reply).splitlines()
        head = def_line.count("\n") + 1
        kept = lines[:head]
        for line in lines[head:]:
            if line.strip() and not line[0].isspace():
                break
            kept.append(line)
        return textwrap.dedent("\n".join(kept)).strip() + "\n"
    blocks = FENCE.findall(reply) or [reply]
    chosen = next((block for block in blocks if f"def {name}" in block), blocks[0])
    return textwrap.dedent(chosen).strip() + "\n"


def _same_tree(first: str, second: str) -> bool:
    try:
        return ast.dump(parse_quietly(first)) == ast.dump(parse_quietly(second))
    except SyntaxError:
        return False


class LLMOperator(BaseOperator):
    """Propose `ReplaceFunction` edits written by a language model."""

    name = "llm"
    description = "ask a language model to rewrite a function, for the run's goal (faster, simpler, repair)"
    waits = True
    writes_code = True

    def __init__(self, client: LLMClient, goal: str, prompts: Prompts | None = None, *, share: float = 0.0) -> None:
        if goal not in GOALS:
            raise ValueError(f"unknown goal {goal!r}; goals: {sorted(GOALS)}")
        self.client = client
        self.goal = goal
        self.prompts = prompts or Prompts()
        #: The share of a generation's new edits the model makes (`mutators.llm`).
        self.fraction = share
        self.stats = LLMStats()
        #: How often each prompt was asked: the next ask takes the next sample.
        self.asked: dict[str, int] = {}
        #: Samples of each prompt that gave nothing new; see FRUITLESS_LIMIT.
        self.fruitless: dict[str, int] = {}

    @classmethod
    def for_run(cls, section: Mapping[str, Any], share: float, run: RunFacts) -> LLMOperator:
        """The operator a run's `[llm]` section (its keys, as a mapping) asks for, with its share
        of mutations; `goal = "auto"` takes the run's goal, the reply cache and offline mode are
        the run's."""
        fields = {key: value for key, value in section.items() if key not in ("goal", "cache", "prompts")}
        settings = LLMSettings(**fields, cache=run.cache, offline=run.offline)
        prompts = Prompts(**dict(section.get("prompts") or {}))
        goal = run.goal if section.get("goal", "auto") == "auto" else str(section["goal"])
        return cls(LLMClient(settings), goal, prompts, share=share)

    # --- the hooks of mutators.base.Operator -------------------------------------------------

    def share(self) -> float | None:
        return self.fraction

    def stopped(self) -> str | None:
        reason = self.client.usage.stopped
        return None if reason is None else f"the language model stopped: {reason}"

    def state(self) -> dict[str, dict[str, int]]:
        """What a resumed run needs to ask the same prompts for the same samples (JSON)."""
        return {"asked": dict(self.asked), "fruitless": dict(self.fruitless)}

    def restore(self, state: Any) -> None:
        """Continue from `state()` saved by an interrupted run."""
        self.asked = dict(state.get("asked", {}))
        self.fruitless = dict(state.get("fruitless", {}))

    def warnings(self) -> list[str]:
        missing = self.client.key_missing
        return [f"{missing} (llm.api_key_env) is not set: requests go without an API key"] if missing else []

    def usage(self) -> OperatorUsage:
        usage, stats = self.client.usage, self.stats
        return OperatorUsage(
            requests=usage.requests,
            tokens=usage.prompt_tokens + usage.completion_tokens,
            cost=usage.cost,
            seconds=usage.seconds,
            outcomes={"unparseable": stats.unparseable, "wrong_kind": stats.wrong_kind, "no_ops": stats.no_ops},
        )

    def report(self, accounting: Mapping[str, float] | None) -> dict[str, Any]:
        """The model's settings (the key's variable name, never its value), usage and verdict.

        `parse_rate` is the share of replies that parsed; `pass_rate` the share of the model's
        evaluated variants that passed every training test.
        """
        settings, usage, stats = self.client.settings, self.client.usage, self.stats
        return {
            "base_url": settings.base_url,
            "model": settings.model,
            "api": settings.api,
            "api_key_env": settings.api_key_env,
            "goal": self.goal,
            "requests": usage.requests,
            "cache_hits": usage.cache_hits,
            "failures": usage.failures,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "cost": round(usage.cost, 6),
            "seconds": round(usage.seconds, 3),
            "proposals": stats.proposals,
            "edits": stats.edits,
            "replies": stats.replies,
            "parse_rate": round(stats.parse_rate, 4) if stats.parse_rate is not None else None,
            "pass_rate": (
                round(accounting["passing"] / accounting["evaluated"], 4)
                if accounting and accounting["evaluated"]
                else None
            ),
            "stopped": usage.stopped,
            "errors": usage.errors[:10],
            "rejected": stats.rejected[:10],
        }

    def note_duplicate(self, edit: Edit) -> None:
        """The search already had the program `edit` made: a fruitless sample of its prompt."""
        if isinstance(edit, ReplaceFunction) and edit.prompt_hash:
            self.fruitless[edit.prompt_hash] = self.fruitless.get(edit.prompt_hash, 0) + 1

    def _payload(
        self, variant: Variant, file: str, module: cst.Module, function: cst.FunctionDef, above: list[str],
        context: MutationContext,
    ) -> tuple[dict[str, Any], str, str]:  # fmt: skip
        """The request for a rewrite of `function`, its def line and its decorators."""
        whole = module.code_for_node(function.with_changes(leading_lines=()))
        bare = module.code_for_node(function.with_changes(leading_lines=(), decorators=(), lines_after_decorators=()))
        decorators = whole[: len(whole) - len(bare)]
        def_line = bare[: len(bare) - len(module.code_for_node(function.body))]
        feedback = context.feedback(variant) if context.feedback is not None else None
        objectives = ", ".join(f"{k} = {v:.4g}" for k, v in (feedback.objectives if feedback else {}).items())
        failures = ""
        if self.goal == "repair" and feedback is not None and feedback.failures:
            failures = f"\nThe failing tests say:\n```\n{feedback.failures[-FAILURE_CHARS:]}\n```\n"
        fields = {
            "goal": GOALS[self.goal], "name": function.name.value, "file": file, "code": whole.strip("\n"),
            "context": "\n".join(above[-12:]).strip("\n"), "objectives": objectives or "not measured yet",
            "failures": failures, "def_line": def_line, "decorators": decorators,
        }  # fmt: skip
        if self.client.settings.api == "chat":
            messages = [
                {"role": "system", "content": self.prompts.chat_system.format(**fields)},
                {"role": "user", "content": self.prompts.chat_user.format(**fields)},
            ]
            return {"messages": messages}, def_line, decorators
        return {"prompt": self.prompts.completion.format(**fields)}, def_line, decorators

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        """Ask the model to rewrite a function the patch has not taken away (weighted like any
        site); None when the model is stopped, the prompt keeps giving nothing new, or the
        reply is no usable rewrite."""
        if self.client.usage.stopped:
            return None
        removed = removed_by(patch)
        site = choose_site(
            program.sites_of(SiteKind.FUNCTION), rng, context,
            lambda s: not any(gone.contains(s.location) for gone in removed),
        )  # fmt: skip
        if site is None:
            return None
        found = function_in_variant(program, patch, site.location)
        if found is None:
            return None
        module, function, above = found
        file = site.location.file
        variant = apply(program, patch)
        payload, def_line, decorators = self._payload(variant, file, module, function, above, context)
        prompt_hash = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
        if self.fruitless.get(prompt_hash, 0) >= FRUITLESS_LIMIT:
            return None
        index = self.asked.get(prompt_hash, 0)
        self.asked[prompt_hash] = index + 1
        self.stats.proposals += 1
        started = time.perf_counter()
        try:
            sample = self.client.sample(payload, index)
        except (LLMStoppedError, self.client.api_error):
            return None
        finally:
            self.stats.seconds += time.perf_counter() - started
        self.stats.replies += 1
        if "prompt" in payload:  # a completion continues the def line; the decorators stay
            new_source = decorators + extract_function(sample.text, function.name.value, def_line)
        else:
            new_source = extract_function(sample.text, function.name.value)
        try:
            new = ReplaceFunction(
                site.location, new_source, model=self.client.settings.model, prompt_hash=prompt_hash,
                prompt_tokens=sample.prompt_tokens, completion_tokens=sample.completion_tokens,
            )  # fmt: skip
        except EditError as error:
            kind = "unparseable" if "does not parse" in str(error) else "wrong_kind"
            setattr(self.stats, kind, getattr(self.stats, kind) + 1)
            self.stats.rejected.append(f"{kind}: {error}")
            return None
        new_name = cst.parse_module(new_source).body[0]
        if not isinstance(new_name, cst.FunctionDef) or new_name.name.value != function.name.value:
            self.stats.wrong_kind += 1
            self.stats.rejected.append(f"wrong_kind: the reply defines another function than {function.name.value}")
            return None
        if _same_tree(new_source, module.code_for_node(function.with_changes(leading_lines=()))):
            self.stats.no_ops += 1
            self.fruitless[prompt_hash] = self.fruitless.get(prompt_hash, 0) + 1
            return None
        self.stats.edits += 1
        return new
