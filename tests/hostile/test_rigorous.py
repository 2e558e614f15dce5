"""The front's rigorous speed-up checks behaviour as the search's timing does: the rigorous
protocol calls the workload more often in one process than screening (about five times),
so a rewrite that answers right for as many calls as screening makes and stale after that is
caught there too. Real evaluator, real pyperf, real sandbox; nothing here is timed against a
target (the loop count is fixed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.fitness.runtime import TimingSettings, Workload, WorkloadError
from gi.model.patch import Patch, Variant
from gi.model.program import Program
from tests.hostile.attacks import BENCH, SUMS, SUMS_TESTS

#: Right for its first 200 calls in a process, then the last result whatever is asked: screening
#: at these loops calls it 4 x 40 times a process, the rigorous protocol 4 x 80.
STALE = """\
def total(n, _calls=[0], _cached=[]):
    _calls[0] += 1
    if _calls[0] > 200 and _cached:
        return _cached[0]
    s = 0
    for i in range(n):
        s += i * i
    _cached[:] = [s]
    return s
"""


def test_a_member_that_goes_stale_after_screenings_calls_gets_no_rigorous_speed_up(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "sums.py").write_text(SUMS)
    (tmp_path / "bench.py").write_text(BENCH)
    (tmp_path / "tests" / "test_sums.py").write_text(SUMS_TESTS)
    program = Program.load(tmp_path, ["sums.py"], protected=["tests", "bench.py"])
    quick = TimingSettings(processes=2, values=3, warmups=1, min_time=0.001)
    rigorous = TimingSettings(processes=2, values=3, warmups=1)
    settings = EvaluationSettings(
        train=("tests",), timeout=60, workload=Workload(call="bench:run"), screening=quick, rigorous=rigorous
    )
    evaluator = Evaluator(program, settings)
    original = Variant(program, Patch(), dict(program.sources), ())
    evaluator.behaviour_cases = (("sums", "total", "(3,)"), ("sums", "total", "(10,)"))
    evaluator.baseline_output = evaluator.output(original)
    _, why = evaluator.audited_timing(original, evaluator.baseline_output, loops=40)
    assert not why, why
    evaluator.timed_check = True
    stale = Variant(program, Patch(), {"sums.py": SUMS.replace(SUMS[SUMS.index("def total") :], STALE)}, ())
    _, why = evaluator.audited_timing(stale, evaluator.output(stale), loops=40)
    assert not why, f"at screening's calls it answers right: {why}"
    evaluator.rigorous(original, original, loops=80)  # the original answers alike at any count
    with pytest.raises(WorkloadError, match="answers differently when it is timed"):
        evaluator.rigorous(original, stale, loops=80)
