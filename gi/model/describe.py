"""Edits in words a person reads: file:line and what changes, quoting the original source.

`describe(edit, program)` turns an edit, which names sites by syntax-tree paths, into a line
such as `grading.py:23 delete "if score < 0: raise ..."`. Each edit class says what it does
(`Edit.words`, with the quoting helpers of `gi.model.edits.words`); an edit class that does
not say it itself (a new operator's, or a subclass of a known one) gets file:line, its kind
and the source of the site it touches, so every edit reads as something.
"""

from __future__ import annotations

from gi.model.edits import Edit
from gi.model.edits.words import generic_words, where
from gi.model.errors import EditError
from gi.model.patch import Patch
from gi.model.program import Program


def describe(edit: Edit, program: Program) -> str:
    """One line for a person: `file:line` of the edit's site, then what the edit does there,
    quoting the original source. Only a class's own wording counts: a subclass of a known edit
    may change what it does, so it gets the generic wording."""
    own = "words" in type(edit).__dict__
    try:
        text = edit.words(program) if own else generic_words(edit, program)
    except (KeyError, AssertionError, AttributeError, EditError):
        # A location that is no site of this program: say what is known without the source.
        text = f"{(edit.kind or type(edit).__name__).replace('_', ' ')} at {edit.target.path}"
    return f"{where(program, edit.target)} {text}"


def describe_patch(patch: Patch, program: Program) -> list[str]:
    """One line per edit of a patch, in order."""
    return [describe(edit, program) for edit in patch.edits]
