"""Prompt templates for the language-model operator, one set per mode; a config can replace any.

Templates are `str.format` strings. Every mode's templates may use {goal} (what to achieve),
{name} (the function's name), {file}, {code} (the function as it stands in the variant),
{context} (the lines above it), {objectives} (the variant's measurements), {failures} (the
failing training tests' output, trimmed; empty unless repairing) and {inspirations} (other
versions of the function the search found, with their measurements; empty unless
`llm.inspirations` asks for them). Crossover adds {other} (the second parent's version) and
{other_objectives}. For the completions API, {decorators} (the function's decorator lines,
each ending in a newline; empty for none) and {def_line} (its `def ...:` line, where the model
continues). A completion keeps the decorators whether or not the template shows them.

The retry message takes {error} (why the last reply could not be used: it did not parse, did
not apply, the reviewer objected, the tests failed); the reviewer's, {goal}, {name}, {code}
(the current version) and {new} (the proposed one).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

GOALS = {
    "faster": "make it run faster while keeping exactly the same behaviour",
    "simpler": "make it simpler (lower cyclomatic complexity, cleaner style) while keeping exactly the same behaviour",
    "repair": "fix it so that the failing tests pass, without breaking the passing ones",
}
MODES = ("rewrite", "diff", "crossover")

#: What new code may use: what the tamper guard (gi.model.guard) lets through, so that an honest
#: reply is not refused for an import the model could not know was barred.
ALLOWED_CODE = (
    "Imports may name the pure standard-library modules (math, itertools, collections, functools, heapq,"
    " bisect, re, ...) and what the file already imports; code that imports anything else, or reaches for"
    " the interpreter, the file system, the process or the tests, is refused."
)

CHAT_SYSTEM = (
    "You improve existing Python code. Reply with the complete new version of the one function you are"
    " given, in a single ```python fenced block, and nothing else. Keep its name and signature. If it"
    " needs an import or a helper function or class, put them in the same block, above the function. " + ALLOWED_CODE
)

#: What a rewrite and a diff prompt both show: the goal, the function, the code above it, the
#: measurements, the failing tests and the inspirations.
_SHOWN = """\
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
{failures}{inspirations}
"""

CHAT_USER = _SHOWN + "Rewrite `{name}` to {goal}."

COMPLETION = """\
{context}

{code}


# {goal}: a new version of {name}, same behaviour
{decorators}{def_line}"""

DIFF_SYSTEM = (
    """\
You improve existing Python code by editing it. Reply with one or more SEARCH/REPLACE blocks, \
each in this form:

<<<<<<< SEARCH
lines copied exactly from the code, enough to name one place
=======
the lines to put in their place
>>>>>>> REPLACE

Copy the SEARCH lines exactly, with their indentation. Keep the function's name and signature. \
To add an import or a helper function or class, use a block with an empty SEARCH part: its \
REPLACE lines go after the function. """
    + ALLOWED_CODE
)

DIFF_USER = _SHOWN + "Edit `{name}` to {goal}, with SEARCH/REPLACE blocks."

DIFF_COMPLETION = """\
{context}

{code}


# An edit of {name} to {goal}, as a SEARCH/REPLACE block:
<<<<<<< SEARCH
"""

CROSSOVER_USER = """\
Goal: {goal}.

Two versions of the function `{name}` from `{file}`. The first, measured {objectives}:
```python
{code}
```

The second, measured {other_objectives}:
```python
{other}
```
{failures}{inspirations}
Write one version of `{name}` that combines the strengths of both, to {goal}."""

CROSSOVER_COMPLETION = """\
{context}

# Version A of {name}:
{code}


# Version B of {name}:
{other}


# {goal}: a version of {name} that combines the best of A and B
{decorators}{def_line}"""

RETRY = """\
That reply could not be used: {error}

Reply again, in the same form as asked before."""

REVIEW_SYSTEM = (
    "You review a proposed change to a Python function. If it keeps the behaviour the tests expect and"
    " serves the goal, reply with the single word APPROVE. Otherwise say in a few lines what is wrong."
)

REVIEW_USER = """\
Goal: {goal}.

The function `{name}` as it is:
```python
{code}
```

The proposed version:
```python
{new}
```"""

#: The fields each template may use.
FIELDS = ("goal", "name", "file", "code", "context", "objectives", "failures", "inspirations", "other",
          "other_objectives", "def_line", "decorators", "error", "new")  # fmt: skip


@dataclass(frozen=True)
class Prompts:
    chat_system: str = CHAT_SYSTEM
    chat_user: str = CHAT_USER
    completion: str = COMPLETION
    diff_system: str = DIFF_SYSTEM
    diff_user: str = DIFF_USER
    diff_completion: str = DIFF_COMPLETION
    crossover_user: str = CROSSOVER_USER
    crossover_completion: str = CROSSOVER_COMPLETION
    retry: str = RETRY
    review_system: str = REVIEW_SYSTEM
    review_user: str = REVIEW_USER

    def check(self) -> None:
        """Raise KeyError or ValueError for a template with an unknown field or bad braces."""
        fields = dict.fromkeys(FIELDS, "")
        for template in dataclasses.astuple(self):
            template.format(**fields)

    def chat(self, mode: str) -> tuple[str, str]:
        """The system and user templates of a mode (chat API)."""
        if mode == "diff":
            return self.diff_system, self.diff_user
        if mode == "crossover":
            return self.chat_system, self.crossover_user
        return self.chat_system, self.chat_user

    def completion_for(self, mode: str) -> str:
        """The prompt template of a mode (completions API)."""
        return {"diff": self.diff_completion, "crossover": self.crossover_completion}.get(mode, self.completion)
