"""gi's line pass (gi.model.positions) against libcst's PositionProvider, which it stands in for."""

from __future__ import annotations

import gc
from pathlib import Path

import libcst as cst
import libcst.metadata
import pytest

import gi.model.program
from gi.model.positions import line_spans
from gi.model.program import Program

SOURCES = {
    "statements": (
        "# a comment\n\nimport os\n\n\n@decorator(\n    1,\n)\ndef f(x,\n      y=2):  # trailing\n"
        '    """doc\n    string"""\n    if x:\n        return (x +\n                y)\n'
        "    return [\n        i for i in y\n    ]\n"
    ),
    "crlf": "def f():\r\n    a = 1\r\n\r\n    return a\r\n",
    "lone cr": "x = 1\ry = (2 +\r     3)\r",
    "no trailing newline": "class A:\n    def m(self): return 1\n    x = [1,\n         2]",
    "empty": "",
    "continuations": "total = 1 + \\\n    2\nif (a and\n    b): pass\nwhile True: break\nelse: pass\n",
    "strings": 'x = f"""{a}\n{b!r}"""\ny = """\n\n"""; z = 3\n',
    "async and match": (
        "async def g(xs):\n    async for x in xs:\n        await x\n"
        "match point:\n    case (0, 0):\n        pass\n    case [x, *rest] if x > 1:\n        print(\n            x)\n"
    ),
}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_every_node_gets_the_lines_the_position_provider_gives(name: str) -> None:
    module = cst.parse_module(SOURCES[name])
    wrapper = libcst.metadata.MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(libcst.metadata.PositionProvider)
    expected = {id(node): (span.start.line, span.end.line) for node, span in positions.items()}
    starts, ends = line_spans(module)
    assert {key: (starts[key], ends[key]) for key in starts} == expected
    assert len(expected) > 1 or name == "empty"


def test_a_large_file_reports_its_steps_and_the_collector_runs_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "small.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "large.py").write_text("def f(a):\n    return a + 1\n" * 3, encoding="utf-8")
    monkeypatch.setattr(gi.model.program, "LARGE_FILE", 40)
    steps: list[str] = []
    assert gc.isenabled()
    program = Program.load(tmp_path, ["*.py"], progress=steps.append)
    assert gc.isenabled()
    assert steps == ["parsing large.py (1 of 2, 8.1e-05 MB)", "indexing the sites of large.py (1 of 2, 8.1e-05 MB)"]
    assert len(program.sites) > 3
