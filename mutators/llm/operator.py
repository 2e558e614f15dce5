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
import json
import re
import textwrap
import time
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
import numpy as np
import openai

from gi.edits import Edit, ReplaceFunction
from gi.errors import EditError
from gi.patch import Patch, Variant, apply
from gi.program import Program, SiteKind
from mutators.base import MutationContext, choose_site
from mutators.llm.client import LLMClient, LLMStoppedError
from mutators.llm.prompts import GOALS, Prompts

FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL)
#: Characters of failing test output a repair prompt may carry.
FAILURE_CHARS = 3000


@dataclass
class LLMStats:
    """What became of the operator's proposals."""

    proposals: int = 0
    unparseable: int = 0
    wrong_kind: int = 0
    no_ops: int = 0
    edits: int = 0
    seconds: float = 0.0
    rejected: list[str] = field(default_factory=list)


def _find_function(module: cst.Module, qualified: str) -> cst.FunctionDef | None:
    """The function or method called `qualified` ("Class.method") at its place in `module`."""
    body: Any = module.body
    node: cst.CSTNode | None = None
    for part in qualified.split("."):
        node = next(
            (n for n in body if isinstance(n, (cst.FunctionDef, cst.ClassDef)) and n.name.value == part),
            None,
        )
        if node is None:
            return None
        inner = node.body
        body = inner.body if isinstance(inner, cst.IndentedBlock) else ()
    return node if isinstance(node, cst.FunctionDef) else None


def extract_function(reply: str, name: str, def_line: str | None = None) -> str:
    """The function source in a reply: the first fenced block defining it, else the reply itself.

    For a completion (`def_line` given) the reply continues the def line, and ends where the
    code returns to column 0.
    """
    if def_line is not None:
        lines = (def_line + reply).splitlines()
        kept = [lines[0]]
        for line in lines[1:]:
            if line.strip() and not line[0].isspace():
                break
            kept.append(line)
        return textwrap.dedent("\n".join(kept)).strip() + "\n"
    blocks = FENCE.findall(reply) or [reply]
    chosen = next((block for block in blocks if f"def {name}" in block), blocks[0])
    return textwrap.dedent(chosen).strip() + "\n"


def _same_tree(first: str, second: str) -> bool:
    try:
        return ast.dump(ast.parse(first)) == ast.dump(ast.parse(second))
    except SyntaxError:
        return False


class LLMOperator:
    """Propose `ReplaceFunction` edits written by a language model."""

    name = "llm"
    description = "ask a language model to rewrite a function, for the run's goal (faster, simpler, repair)"

    def __init__(self, client: LLMClient, goal: str, prompts: Prompts | None = None) -> None:
        if goal not in GOALS:
            raise ValueError(f"unknown goal {goal!r}; goals: {sorted(GOALS)}")
        self.client = client
        self.goal = goal
        self.prompts = prompts or Prompts()
        self.stats = LLMStats()
        #: How often each prompt was asked: the next ask takes the next sample.
        self.asked: dict[str, int] = {}

    @property
    def stopped(self) -> str | None:
        return self.client.usage.stopped

    def _payload(self, variant: Variant, file: str, function: cst.FunctionDef, module: cst.Module,
                 context: MutationContext) -> tuple[dict[str, Any], str | None]:  # fmt: skip
        code = textwrap.dedent(module.code_for_node(function.with_changes(leading_lines=()))).strip("\n")
        source = variant.sources[file]
        where = source.find(code.splitlines()[0].strip())
        above = source[:where].splitlines()[-12:] if where > 0 else []
        feedback = context.feedback(variant) if context.feedback is not None else None
        objectives = ", ".join(f"{k} = {v:.4g}" for k, v in (feedback.objectives if feedback else {}).items())
        failures = ""
        if self.goal == "repair" and feedback is not None and feedback.failures:
            failures = f"\nThe failing tests say:\n```\n{feedback.failures[-FAILURE_CHARS:]}\n```\n"
        fields = {
            "goal": GOALS[self.goal], "name": function.name.value, "file": file, "code": code,
            "context": "\n".join(above).strip("\n"), "objectives": objectives or "not measured yet",
            "failures": failures, "def_line": code.splitlines()[0],
        }  # fmt: skip
        if self.client.settings.api == "chat":
            messages = [
                {"role": "system", "content": self.prompts.chat_system.format(**fields)},
                {"role": "user", "content": self.prompts.chat_user.format(**fields)},
            ]
            return {"messages": messages}, None
        return {"prompt": self.prompts.completion.format(**fields)}, code.splitlines()[0]

    def propose(
        self, program: Program, patch: Patch, rng: np.random.Generator, context: MutationContext
    ) -> Edit | None:
        if self.stopped:
            return None
        site = choose_site(program.sites_of(SiteKind.FUNCTION), rng, context)
        if site is None:
            return None
        node = program.node(site.location)
        assert isinstance(node, cst.FunctionDef)
        qualified = f"{site.function}.{node.name.value}" if site.function else node.name.value
        file = site.location.file
        variant = apply(program, patch)
        module = cst.parse_module(variant.sources[file])
        function = _find_function(module, qualified)
        if function is None:
            return None  # the patch removed or renamed it
        payload, def_line = self._payload(variant, file, function, module, context)
        prompt_hash = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
        index = self.asked.get(prompt_hash, 0)
        self.asked[prompt_hash] = index + 1
        self.stats.proposals += 1
        started = time.perf_counter()
        try:
            sample = self.client.sample(payload, index)
        except (LLMStoppedError, openai.APIError):
            return None
        finally:
            self.stats.seconds += time.perf_counter() - started
        new_source = extract_function(sample.text, function.name.value, def_line)
        current = textwrap.dedent(module.code_for_node(function.with_changes(leading_lines=())))
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
        if _same_tree(new_source, current):
            self.stats.no_ops += 1
            return None
        self.stats.edits += 1
        return new
