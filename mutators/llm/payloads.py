"""What the model operator sends: a proposal's request (with its inspirations and crossover
partner from the archive), a retry's that feeds a failure back, and a reviewer's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import libcst as cst
import numpy as np

from gi.model.patch import Patch, Variant
from gi.model.program import Program
from gi.model.sites import Location
from gi.mutators.base import Member, MutationContext
from gi.mutators.llm.client import LLMClient
from gi.mutators.llm.locate import function_in_variant
from gi.mutators.llm.novelty import normalised_tokens, similarity
from gi.mutators.llm.prompts import GOALS, Prompts
from gi.mutators.llm.proposals import Pending
from gi.mutators.llm.replies import NewCode

#: Characters of failing test output a prompt may carry.
FAILURE_CHARS = 3000
#: Lines above the function a prompt shows.
CONTEXT_LINES = 12


class Payloads:
    """The requests of one operator: its goal, templates and inspirations, and the archive as
    the last generation left it (for inspirations and crossover partners)."""

    def __init__(self, goal: str, prompts: Prompts, inspirations: int) -> None:
        self.goal = goal
        self.prompts = prompts
        self.inspirations = inspirations
        self.archive: tuple[Member, ...] = ()
        self._versions: dict[tuple[str, Location], str | None] = {}

    def take_archive(self, members: tuple[Member, ...]) -> None:
        """The archive the next prompts draw on (the versions known of the last one go)."""
        self.archive = members
        self._versions.clear()

    def proposal(
        self, program: Program, variant: Variant, location: Location, module: cst.Module, function: cst.FunctionDef,
        above: list[str], context: MutationContext, client: LLMClient, mode: str, partner: Member | None,
    ) -> tuple[dict[str, Any], dict[str, str]]:  # fmt: skip
        """The request for a proposal on `function`, and the fields its templates were given."""
        whole, decorators, def_line = function_parts(module, function)
        feedback = context.feedback(variant) if context.feedback is not None else None
        failures = ""
        if self.goal == "repair" and feedback is not None and feedback.failures:
            failures = f"\nThe failing tests say:\n```\n{feedback.failures[-FAILURE_CHARS:]}\n```\n"
        other = other_objectives = ""
        if partner is not None:
            other = self.version(program, partner.patch, location) or ""
            other_objectives = measured(partner.objectives)
        fields = {
            "goal": GOALS[self.goal], "name": function.name.value, "file": location.file, "code": whole.strip("\n"),
            "context": "\n".join(above[-CONTEXT_LINES:]).strip("\n"),
            "objectives": measured(feedback.objectives if feedback else {}), "failures": failures,
            "inspirations": self._inspirations(program, location, whole, function.name.value),
            "other": other.strip("\n"), "other_objectives": other_objectives, "def_line": def_line,
            "decorators": decorators, "error": "", "new": "",
        }  # fmt: skip
        if client.settings.api == "chat":
            system, user = self.prompts.chat(mode)
            messages = [{"role": "system", "content": system.format(**fields)},
                        {"role": "user", "content": user.format(**fields)}]  # fmt: skip
            return {"messages": messages}, fields
        return {"prompt": self.prompts.completion_for(mode).format(**fields)}, fields

    def review(self, pending: Pending, code: NewCode) -> dict[str, Any]:
        """The request that asks the model to critique a proposal (the reviewer's pass)."""
        fields = {"goal": GOALS[self.goal], "name": pending.name, "code": pending.current,
                  "new": "\n".join([*code.imports, *code.definitions, code.function]).strip()}  # fmt: skip
        system, user = self.prompts.review_system.format(**fields), self.prompts.review_user.format(**fields)
        if pending.arm.client.settings.api == "completions":  # a base model continues a verdict line
            return {"prompt": f"{system}\n\n{user}\n\nVerdict:"}
        return {"messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}

    def retry(self, payload: dict[str, Any], reply: str, error: str) -> dict[str, Any]:
        """The request that feeds a failure back: the conversation so far and what went wrong
        (for a completion, the rejected attempt as comments above the prompt)."""
        if "messages" in payload:
            return {"messages": [*payload["messages"], {"role": "assistant", "content": reply},
                                 {"role": "user", "content": self.prompts.retry.format(error=error)}]}  # fmt: skip
        rejected = "\n".join(f"# {line}" for line in reply.strip().splitlines()[:40])
        return {"prompt": f"# A rejected attempt ({error.splitlines()[0]}):\n{rejected}\n\n{payload['prompt']}"}

    def version(self, program: Program, patch: Patch, location: Location) -> str | None:
        """The function at `location` as the program `patch` makes has it (None if gone)."""
        key = (patch.key(), location)
        if key not in self._versions:
            found = function_in_variant(program, patch, location)
            self._versions[key] = (
                None if found is None else found[0].code_for_node(found[1].with_changes(leading_lines=()))
            )
        return self._versions[key]

    def partner(self, program: Program, location: Location, current: str, rng: np.random.Generator) -> Member | None:
        """An archive member with another version of the function, to cross with (None: none has)."""
        others = self._others(program, location, current)
        return others[int(rng.integers(len(others)))][0] if others else None

    def _others(self, program: Program, location: Location, current: str) -> list[tuple[Member, str]]:
        """Archive members whose version of the function differs from `current`, with it."""
        seen = {current}
        found = []
        for member in self.archive:
            version = self.version(program, member.patch, location)
            if version is not None and version not in seen:
                seen.add(version)
                found.append((member, version))
        return found

    def _inspirations(self, program: Program, location: Location, current: str, name: str) -> str:
        """Up to `inspirations` other versions of the function from the archive: the best in
        each objective first, then those least like the ones chosen (by normalised tokens)."""
        if not self.inspirations:
            return ""
        others = self._others(program, location, current)
        if not others:
            return ""
        chosen: list[tuple[Member, str]] = []
        for index in range(len(others[0][0].minimised)):
            best = min(others, key=lambda pair: pair[0].minimised[index])
            if best not in chosen and len(chosen) < self.inspirations:
                chosen.append(best)
        tokens = {version: normalised_tokens(version) for _, version in others}
        while len(chosen) < min(self.inspirations, len(others)):
            rest = [pair for pair in others if pair not in chosen]
            chosen.append(
                min(rest, key=lambda pair: max(similarity(tokens[pair[1]], tokens[c[1]]) for c in chosen or [pair]))
            )
        shown = "".join(
            f"\n({measured(member.objectives)})\n```python\n{version.strip()}\n```\n" for member, version in chosen
        )
        return f"\nOther versions of `{name}` the search has found, with their measurements:\n{shown}"


def function_parts(module: cst.Module, function: cst.FunctionDef) -> tuple[str, str, str]:
    """The function's text (no leading lines), its decorators' text and its def line."""
    whole = module.code_for_node(function.with_changes(leading_lines=()))
    bare = module.code_for_node(function.with_changes(leading_lines=(), decorators=(), lines_after_decorators=()))
    def_line = bare[: len(bare) - len(module.code_for_node(function.body))]
    return whole, whole[: len(whole) - len(bare)], def_line


def measured(objectives: Mapping[str, float] | None) -> str:
    """Objective values as a prompt shows them."""
    if objectives is None:
        return "broken"
    return ", ".join(f"{name} = {value:.4g}" for name, value in objectives.items()) or "not measured yet"
