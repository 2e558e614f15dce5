"""What a warm worker finds once for pytest's reports of failures (gi_warm_imports'
`cache_statement_ranges` and `cache_installed_paths`): a report made with it is the report made
without it, and it is taken, not found anew.

Each check runs in a Python process of its own, as the worker does: the functions replace
pytest's own in the process that calls them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

#: A module whose function fails in a statement over several lines, as a test would.
FAILING = """\
def total(values):
    return sum(values)


def check():
    assert total(
        [1, 2, 3]
    ) == 7, "the total"
"""

#: Runs in a process of its own: the report of `check`'s failure before and after the caches,
#: and whether the trees and paths the report's functions use are the cached ones.
SCRIPT = """\
import json
import sys

import pluggy
from _pytest._code import code
from _pytest._code.code import ExceptionInfo

from gi.fitness.sandboxed import warm_imports

sys.path.insert(0, sys.argv[1])
import failing

try:
    failing.check()
except AssertionError:
    info = ExceptionInfo.from_current()
installed = code.Code.from_function(pluggy.HookCaller.__call__)
before = {"report": str(info.getrepr(style="long")), "path": str(installed.path)}
parsed = warm_imports.cache_statement_ranges([failing.__file__])
resolved = warm_imports.cache_installed_paths()
source = code.Code.from_function(failing.check).fullsource
tree = code.getstatementrange_ast(5, source)[0]
after = {"report": str(info.getrepr(style="long")), "path": str(installed.path)}
print(json.dumps({
    "before": before,
    "after": after,
    "parsed": parsed,
    "resolved": resolved,
    "tree taken": tree is warm_imports.PARSED.get(str(source)),
    "path taken": installed.path is warm_imports.INSTALLED_PATHS.get(installed.raw.co_filename),
    "edited tree parsed anew": code.getstatementrange_ast(0, type(source)("x = 1\\n"))[0]
    not in warm_imports.PARSED.values(),
}))
"""


def test_a_failures_report_is_the_same_with_the_workers_trees_and_paths_and_takes_them(tmp_path: Path) -> None:
    (tmp_path / "failing.py").write_text(FAILING)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["after"] == found["before"]
    assert "assert total(" in found["after"]["report"] and ') == 7, "the total"' in found["after"]["report"]
    assert found["parsed"] == 1 and found["resolved"] > 0
    assert found["tree taken"] and found["path taken"] and found["edited tree parsed anew"]
