"""gi's failures are gi's: an error of gi itself while it evaluates a variant (here: no more open
files, for real) stops the run with one line saying what and what to do, and scores nothing;
it used to score the variant as `crashed` and go on selecting among such variants."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.hostile.attacks import CALC, TRAINING

SCRIPT = """
import os, resource, sys
from pathlib import Path

from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.engine.sandbox.limits import Limits
from gi.model.errors import EvaluationError
from gi.model.patch import Patch, apply
from gi.model.program import Program

program = Program.load(Path(sys.argv[1]), ["calc.py"])
evaluator = Evaluator(program, EvaluationSettings(train=("tests",), limits=Limits(isolate=sys.argv[2] == "1")))
original = apply(program, Patch())
print("first:", evaluator.evaluate(original).status.value, flush=True)
# Every descriptor open now and one more: the next evaluation's pipes cannot all be made.
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 1, hard))
try:
    evaluation = evaluator.evaluate(original)
except EvaluationError as error:
    print("stopped:", error)
else:
    print("scored:", evaluation.status.value, evaluation.detail[-300:])
"""


def test_running_out_of_open_files_stops_the_run_with_one_line_and_scores_nothing(tmp_path: Path) -> None:
    project = tmp_path / "calc"
    (project / "tests").mkdir(parents=True)
    (project / "calc.py").write_text(CALC)
    (project / "tests" / "test_calc.py").write_text(TRAINING)
    for isolated in ("1", "0"):
        done = subprocess.run([sys.executable, "-c", SCRIPT, str(project), isolated], capture_output=True, text=True,
                              timeout=300, check=False)  # fmt: skip
        lines = done.stdout.splitlines()
        assert lines[0] == "first: ok", done.stdout + done.stderr
        assert lines[1].startswith("stopped: evaluating a variant failed in gi itself ("), lines
        assert "[Errno 24] Too many open files" in lines[1], lines
        assert "raise the limit on open files (ulimit -n)" in lines[1] and "resume" in lines[1]
        assert len(lines) == 2, "one line"
