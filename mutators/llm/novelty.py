"""Novelty: a model's proposal that the search already knows, or nearly, is not evaluated.

Two versions of a function are compared by their normalised tokens: the code without
comments, docstrings or layout, with the names the function binds itself (its local
variables, not its parameters, globals or calls) renamed in order of first use. Renaming a
loop variable, reflowing a line or rewording a comment changes no token; the similarity of
two versions is difflib's ratio of their token sequences (1.0: the same). A proposal whose
similarity to a version already known at the same function reaches the threshold is
rejected before evaluation (ShinkaEvolve does the same with embeddings).
"""

from __future__ import annotations

import ast
import difflib
import io
import tokenize
from collections.abc import Mapping, Sequence

from gi.model.program import parse_quietly

#: Versions remembered per function; the oldest go first.
REMEMBERED = 256
_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.ENCODING}


class _Renamer(ast.NodeTransformer):
    """Renames the names a function binds (not parameters, globals or nonlocals) to v0, v1, ..."""

    def __init__(self, bound: set[str]) -> None:
        self.bound = bound
        self.names: dict[str, str] = {}

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id in self.bound:
            node.id = self.names.setdefault(node.id, f"v{len(self.names)}")
        return node


def _bound_names(function: ast.AST) -> set[str]:
    parameters = set()
    if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        arguments = function.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        parameters = {argument.arg for argument in every}
    declared = {
        name for node in ast.walk(function) if isinstance(node, (ast.Global, ast.Nonlocal)) for name in node.names
    }
    stored = {node.id for node in ast.walk(function) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    return stored - parameters - declared


def _without_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            body = node.body
            first = body[0] if body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]


def normalised_tokens(source: str) -> tuple[str, ...]:
    """The tokens two versions of a function are compared by (the text's own tokens if it does not parse)."""
    try:
        tree = parse_quietly(source)  # under gi's lock on ast.parse (gi.model.program)
    except SyntaxError:
        text = source
    else:
        _without_docstrings(tree)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                _Renamer(_bound_names(node)).visit(node)
        text = ast.unparse(tree)
    try:
        return tuple(
            token.string for token in tokenize.generate_tokens(io.StringIO(text).readline) if token.type not in _SKIPPED
        )
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return tuple(text.split())


def similarity(first: Sequence[str], second: Sequence[str]) -> float:
    """difflib's ratio of two token sequences: 1.0 when they are the same."""
    if first == second:
        return 1.0
    return difflib.SequenceMatcher(None, first, second, autojunk=False).ratio()


class Novelty:
    """The versions of each function the search has seen, by a key naming the function."""

    def __init__(self, threshold: float = 1.0) -> None:
        if not 0 < threshold <= 1:
            raise ValueError(f"a novelty threshold is in (0, 1], got {threshold}")
        self.threshold = threshold
        self._known: dict[str, list[tuple[str, tuple[str, ...]]]] = {}

    def closest(self, key: str, source: str) -> float:
        """The highest similarity of `source` to a version known at `key` (0.0 if none is)."""
        tokens = normalised_tokens(source)
        return max((similarity(tokens, known) for _, known in self._known.get(key, ())), default=0.0)

    def is_known(self, key: str, source: str) -> bool:
        """Whether `source` is, or nearly is, a version already known at `key`."""
        return self.closest(key, source) >= self.threshold

    def add(self, key: str, source: str) -> None:
        versions = self._known.setdefault(key, [])
        if any(text == source for text, _ in versions):
            return
        versions.append((source, normalised_tokens(source)))
        del versions[:-REMEMBERED]

    def state(self) -> dict[str, list[str]]:
        """The known versions (JSON), for a resumed run to reject what the interrupted one knew."""
        return {key: [text for text, _ in versions] for key, versions in self._known.items()}

    def restore(self, state: Mapping[str, Sequence[str]]) -> None:
        self._known = {}
        for key, texts in state.items():
            for text in texts:
                self.add(key, text)
