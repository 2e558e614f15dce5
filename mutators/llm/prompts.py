"""Prompt templates for the language-model operator; a config can replace any of them.

Templates are `str.format` strings with these fields: {goal} (what to achieve), {name} (the
function's name), {file}, {code} (the function as it stands in the variant), {context}
(the lines above it), {objectives} (the variant's measurements), {failures} (the failing
training tests' output, trimmed; empty unless repairing) and, for the completions API,
{decorators} (the function's decorator lines, each ending in a newline; empty for none) and
{def_line} (its `def ...:` line, where the model continues). A completion keeps the
decorators whether or not the template shows them.
"""

from __future__ import annotations

from dataclasses import dataclass

GOALS = {
    "faster": "make it run faster while keeping exactly the same behaviour",
    "simpler": "make it simpler (lower cyclomatic complexity, cleaner style) while keeping exactly the same behaviour",
    "repair": "fix it so that the failing tests pass, without breaking the passing ones",
}

CHAT_SYSTEM = (
    "You improve existing Python code. Reply with the complete new version of the one function you are"
    " given, in a single ```python fenced block, and nothing else. Keep its name and signature."
)

CHAT_USER = """\
Goal: {goal}.

The function `{name}` from `{file}`:
```python
{code}
```

The code above it in the file:
```python
{context}
```

The program's current measurements: {objectives}
{failures}
Rewrite `{name}` to {goal}."""

COMPLETION = """\
{context}

{code}


# {goal}: a new version of {name}, same behaviour
{decorators}{def_line}"""


@dataclass(frozen=True)
class Prompts:
    chat_system: str = CHAT_SYSTEM
    chat_user: str = CHAT_USER
    completion: str = COMPLETION

    def check(self) -> None:
        """Raise KeyError or ValueError for a template with an unknown field or bad braces."""
        fields = {"goal": "", "name": "", "file": "", "code": "", "context": "", "objectives": "",
                  "failures": "", "def_line": "", "decorators": ""}  # fmt: skip
        for template in (self.chat_system, self.chat_user, self.completion):
            template.format(**fields)
