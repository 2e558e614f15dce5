"""Timings from evidence the variant cannot write (issue 37, hole 1): whole runs whose model
serves rewrites of `total` that forge their speed-up, on the cold, warm and Dask engines.

The project already holds each forgery as a function nobody calls, so the guard lets their
code through and what happens at run time must catch them:

- pyperf's values divided by three through a rebound `json.dump` (gi reported 3.77x,
  significant, for code a plain interpreter timed at 0.98x): gi reads the values each timed
  process recorded itself, with what it took before the project was imported, and pyperf's
  are not those: the variant is tampered with, in the search already;
- the timing script's own clock swapped, through the frames, for one five times too slow:
  pyperf's values and the records agree, so the search sees a 5x speed-up, but gi's clock on
  commands that run as many more calls as the values say take two seconds sees them take ten:
  the speed-up is forged, and the run says so. (Three times too slow is caught too, but under
  a load that changes between the session and the clock's commands it can fall within the
  check's margin of twice what the values say; five times stays far beyond it.)

Real `gi run`, real sandbox, pyperf and pytest; the model is a scripted OpenAI-protocol server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gi.cli.main import main
from gi.engine.sandbox.bubblewrap import bubblewrap_available
from gi.model.program import normalised_dump, tree_hash
from tests.hostile import OneFunction, engines
from tests.hostile.attacks import BENCH, HELD, SUMS, SUMS_TESTS
from tests.llm_server import Action, serve

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not bubblewrap_available(), reason="the hostile runs need the bubblewrap sandbox"),
]

#: The sums project with every forgery of HELD kept as a function nobody calls.
KEPT = "".join("\n\n" + text.replace("def total(", f"def _kept_{index}(") for index, text in enumerate(HELD.values()))


def variant(text: str) -> str:
    """The tree hash of sums.py whose `total` is `text`, the kept functions after it."""
    return tree_hash({"sums.py": normalised_dump(SUMS.replace(SUMS[SUMS.index("def total") :], text) + KEPT)})


@pytest.mark.parametrize("engine", engines("cold", "warm", "dask"))
def test_a_speed_up_only_the_variants_own_evidence_shows_is_forged(tmp_path: Path, engine: str) -> None:
    project = tmp_path / "sums"
    (project / "tests").mkdir(parents=True)
    (project / "sums.py").write_text(SUMS + KEPT)
    (project / "bench.py").write_text(BENCH)
    (project / "tests" / "test_sums.py").write_text(SUMS_TESTS)
    fence = "```"
    actions = [Action(reply=f"Faster:\n{fence}python\n{text}{fence}\n") for text in HELD.values()]
    model = OneFunction(function="total", actions=actions, default=Action(reply="I would rather not."))
    backend = 'backend = "dask"\nengine = "cold"' if engine == "dask" else f'engine = "{engine}"'
    config = tmp_path / "sums.toml"
    for server in serve(model):
        config.write_text(f"""\
[experiment]
name = "sums"
seed = 4
output = "runs"

[program]
root = "sums"
files = ["sums.py"]

[tests]
train = ["tests"]
timeout = 60

[objectives]
minimize = ["failed_tests", "runtime", "size"]
constraint = "train_pass"

[search]
population = 4
generations = 1

[mutators]
operators = ["constant"]
llm = 1.0

[workload]
call = "bench:run"
check_output = true
# Four rounds: four commands of the member's to hold gi's clock on its longer ones to.
rigorous_processes = 8

[llm]
base_url = "{server.base_url}"
model = "scripted"
api_key_env = "GI_SUMS_KEY"
timeout = 5
retries = 0

[evaluation]
workers = 2
{backend}
""")
        assert main(["run", str(config), "--quiet"]) == 0
    folder = tmp_path / "runs" / "sums-seed4"
    seen: dict[str, dict[str, Any]] = {}
    for line in (folder / "evaluations.jsonl").read_text().splitlines():
        entry = json.loads(line)
        seen[entry["tree_hash"]] = entry
    summary = json.loads((folder / "summary.json").read_text())
    divided, slow_clock = (variant(text) for text in HELD.values())
    assert divided in seen and slow_clock in seen, "both forgeries were evaluated"
    entry = seen[divided]
    assert entry["status"] == "tampered", (entry["status"], entry["detail"], entry["measures"])
    assert "are not what its timed process measured" in entry["detail"], entry["detail"]
    # The clock five times too slow gets through the search (its values and records agree)...
    clock = seen[slow_clock]
    assert clock["status"] == "ok" and clock["measures"].get("runtime", 1.0) < 0.6, (clock["detail"], clock["measures"])
    # ...and the front's rigorous session sees the calls cost what they always did.
    [member] = [m for m in summary["front"] if "_clock" in _diff(folder, m)]
    assert member["speedup"].get("tampered"), member["speedup"]
    assert "extra timed calls took gi's clock" in member["speedup"]["error"], member["speedup"]
    assert any("its timings are forged" in warning for warning in summary["warnings"]), summary["warnings"]
    assert not any(m.get("speedup", {}).get("significant") for m in summary["front"]), summary["front"]


def _diff(folder: Path, member: dict[str, Any]) -> str:
    return (folder / member["diff"]).read_text() if member.get("diff") else ""
