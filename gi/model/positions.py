"""The first and last line of every node of a module, for the site index (gi.model.sites).

libcst's `PositionProvider` computes them by generating the module's code with a state that
records a line and column for every node, as `CodePosition`/`CodeRange` objects, through a
generator-based context manager per node; on a module of megabytes that pass took longer
than parsing it. `line_spans` runs the same code generation with a state that records lines
only (the site index needs no columns) with a plain context manager: the same lines, as
PositionProvider's syntactic positions give them (tests/model/test_positions.py compares).
"""

from __future__ import annotations

import re
from types import TracebackType

import libcst as cst
from libcst._nodes.internal import CodegenState

_NEWLINE = re.compile(r"\r\n?|\n")


def _newlines(text: str) -> int:
    """How many line breaks `text` holds, counted as libcst counts them (\\r\\n, \\r or \\n)."""
    return text.count("\n") if "\r" not in text else len(_NEWLINE.findall(text))


class _SyntacticLines:
    """The context manager a node's code generation runs in to record its syntactic lines
    (PositionProvidingCodegenState.record_syntactic_position, lines only)."""

    __slots__ = ("end_node", "node", "start", "start_node", "state")

    def __init__(self, state: _LineState, node: cst.CSTNode, start_node: cst.CSTNode | None,
                 end_node: cst.CSTNode | None) -> None:  # fmt: skip
        self.state = state
        self.node = node
        self.start_node = start_node
        self.end_node = end_node
        self.start = 0

    def __enter__(self) -> None:
        self.start = self.state.line

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        spans = self.state.spans
        start = spans[id(self.start_node)][0] if self.start_node is not None else self.start
        end = spans[id(self.end_node)][1] if self.end_node is not None else self.state.line
        spans[id(self.node)] = (start, end)


class _LineState(CodegenState):
    """A code generation state that counts lines and records each node's first and last."""

    def __init__(self, module: cst.Module) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.line = 1
        #: id(node) -> (first line, last line).
        self.spans: dict[int, tuple[int, int]] = {}
        self._starts: list[int] = []

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self.line += _newlines(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.line += _newlines(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._starts.append(self.line)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._starts.pop()
        self.spans.setdefault(id(node), (start, self.line))  # a syntactic span, recorded first, stands

    def record_syntactic_position(  # type: ignore[override]  # a context manager, not a generator's
        self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None, end_node: cst.CSTNode | None = None
    ) -> _SyntacticLines:
        return _SyntacticLines(self, node, start_node, end_node)


def line_spans(module: cst.Module) -> tuple[dict[int, int], dict[int, int]]:
    """Map id(node) to its first line and to its last, for every node of `module`, as libcst's
    PositionProvider gives them."""
    state = _LineState(module)
    module._codegen(state)
    spans = state.spans
    return {key: first for key, (first, _) in spans.items()}, {key: last for key, (_, last) in spans.items()}
