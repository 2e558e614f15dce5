"""Whole runs whose model serves the forgeries of tests/hostile/attacks.py as its rewrites of
`add`: none of them scores as a repair, on the cold and the warm engine.

Twice over: with the ledger as it is (the guard refuses every forgery before it runs), and with
a ledger that already holds each forgery as a function nobody calls, so that the guard lets
their code through and what happens at run time must catch them: the frozen registry and the
canaries during the search, the second run of the front at the end. And the audit blinded
through a rebound `json.dumps` (issue 37), served alone so its member is the front's repair,
on the Dask engine too. Real `gi run`, real sandbox, real pytest; the model is a scripted
OpenAI-protocol server on 127.0.0.1.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from gi.cli.main import main
from gi.engine.sandbox.bubblewrap import bubblewrap_available
from gi.model.program import normalised_dump, tree_hash
from tests.hostile import OneFunction, engines
from tests.hostile.attacks import (
    BENCH,
    CALC,
    GUARD_BLIND,
    HELD_OUT,
    PLANTED,
    SUMS,
    SUMS_TESTS,
    TIMED,
    TRAINING,
    VERDICT,
    module,
    reply,
)
from tests.llm_server import Action, serve

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not bubblewrap_available(), reason="the hostile runs need the bubblewrap sandbox"),
]

#: The ledger with every forgery kept as a function nobody calls: its uses are the original's.
PERMISSIVE = CALC + "".join(
    f"\n\ndef _kept_{index}(a, b):\n{textwrap.indent(textwrap.dedent(body).strip(chr(10)), '    ')}\n"
    for index, (_, body) in enumerate(VERDICT.values())
)


def hash_of(calc: str) -> str:
    return tree_hash({"calc.py": normalised_dump(calc, "calc.py")})


def run_ledger(
    tmp_path: Path, original: str, engine: str, served: tuple[str, ...] = tuple(VERDICT), population: int = 14
) -> tuple[Path, dict[str, str]]:
    """A one-generation repair run of the ledger whose model serves the forgeries `served` (by
    name, all of them unless told) to a population of `population`; the run folder and, by
    forgery, the tree hash of the variant it makes."""
    project = tmp_path / "ledger"
    (project / "tests").mkdir(parents=True)
    (project / "holdout").mkdir()
    (project / "calc.py").write_text(original)
    (project / "tests" / "test_calc.py").write_text(TRAINING)
    (project / "holdout" / "test_more.py").write_text(HELD_OUT)
    model = OneFunction(actions=[Action(reply=reply(VERDICT[name][1])) for name in served],
                    default=Action(reply=reply("return a - b + 0")))  # fmt: skip
    config = tmp_path / "ledger.toml"
    for server in serve(model):
        config.write_text(f"""\
[experiment]
name = "ledger"
seed = 3
output = "runs"

[program]
root = "ledger"
files = ["calc.py"]

[tests]
train = ["tests"]
holdout = ["holdout"]
timeout = 30

[objectives]
minimize = ["failed_tests", "size"]
constraint = "none"

[search]
population = {population}
generations = 1

[mutators]
operators = ["constant"]
llm = 1.0
# The kept functions never run: fault localisation all but never sends the model there.
fault_localisation = true

[llm]
base_url = "{server.base_url}"
model = "scripted"
api_key_env = "GI_LEDGER_KEY"
timeout = 5
retries = 0

[evaluation]
workers = 2
{'backend = "dask"' + chr(10) + 'engine = "cold"' if engine == "dask" else f'engine = "{engine}"'}
""")
        assert main(["run", str(config), "--quiet"]) == 0
    bodies = {name: module(VERDICT[name][1]).split("def add(a, b):\n")[1] for name in served}
    hashes = {name: hash_of(original.replace("    return a - b\n", body, 1)) for name, body in bodies.items()}
    return tmp_path / "runs" / "ledger-seed3", hashes


def evaluations(folder: Path) -> dict[str, dict[str, Any]]:
    return {entry["tree_hash"]: entry for line in (folder / "evaluations.jsonl").read_text().splitlines()
            if (entry := json.loads(line))}  # fmt: skip


@pytest.mark.parametrize("engine", engines("cold", "warm"))
def test_the_guard_refuses_every_forgery_a_model_serves(tmp_path: Path, engine: str) -> None:
    folder, hashes = run_ledger(tmp_path, CALC, engine)
    seen = evaluations(folder)
    summary = json.loads((folder / "summary.json").read_text())
    # The model's operator judges a reply with the same guard before it becomes a variant (and
    # tells the model why); what it let through, the evaluator refuses.
    refused_by_operator = [reason for reason in summary["llm"]["rejected"] if ": tampering: " in reason]
    unevaluated = [name for name, made in hashes.items() if made not in seen]
    assert len(unevaluated) <= len(refused_by_operator), (unevaluated, summary["llm"]["rejected"])
    for name, made in hashes.items():
        if made in seen and name in GUARD_BLIND:  # plain Python: the search scores it a repair
            assert seen[made]["measures"]["failed_tests"] == 0.0, (name, seen[made])
        elif made in seen:
            assert seen[made]["status"] == "tampered", (name, seen[made]["status"], seen[made]["detail"])
            assert "reaches beyond what the original uses" in seen[made]["detail"], name
    # What the guard let through, the front's second run catches: its audit finds the value equal
    # to everything behind the mapping proxy the member returns.
    repairs = [member for member in summary["front"] if member["objectives"]["failed_tests"] < 2]
    assert repairs, summary["front"]
    for member in repairs:
        assert member["second_run"] is not None and not member["second_run"]["agrees"], member
        assert "decides the tests' checks" in member["second_run"]["detail"], member["second_run"]


@pytest.mark.parametrize("engine", engines("cold", "warm"))
def test_where_the_guard_lets_forgeries_through_the_run_catches_them(tmp_path: Path, engine: str) -> None:
    folder, hashes = run_ledger(tmp_path, PERMISSIVE, engine)
    seen = evaluations(folder)
    summary = json.loads((folder / "summary.json").read_text())
    assert set(hashes.values()) <= set(seen), [name for name, made in hashes.items() if made not in seen]
    at_run_time = {name: seen[made] for name, made in hashes.items() if VERDICT[name][0] != 2}
    for name, entry in at_run_time.items():
        assert entry["status"] == "tampered", (name, entry["status"], entry["detail"])
        assert "reaches beyond" not in entry["detail"], "the guard was to let it through"
    # A value equal to everything passes every test as pytest sees it: the search scores it as a
    # repair, and the front's second run says its scores are forged.
    equal = {hashes[name] for name in VERDICT if VERDICT[name][0] == 2}
    assert {seen[made]["measures"]["failed_tests"] for made in equal} == {0.0}
    forged = [member for member in summary["front"] if member.get("second_run") and not member["second_run"]["agrees"]]
    assert forged, summary["front"]
    for member in forged:
        assert "decides the tests' checks" in member["second_run"]["detail"], member["second_run"]
    assert any("its scores are forged" in warning for warning in summary["warnings"])
    for member in summary["front"]:
        if member["objectives"]["failed_tests"] == 0:
            assert member["second_run"] is not None and not member["second_run"]["agrees"], member


BLINDED = "a value equal to everything, the audit blinded through json.dumps"


@pytest.mark.parametrize("engine", engines("cold", "warm", "dask"))
def test_an_audit_blinded_through_json_dumps_makes_no_repair(tmp_path: Path, engine: str) -> None:
    """Issue 37, hole 2: the plugin's records were serialised with `json.dumps`, which a variant
    rebound to blind the audit of returned values, so a value equal to everything passed as a
    repair whose second run agreed, on every engine. The plugin serialises with the C encoder it
    took as it loaded: the member alone on the front, its second run sees the value's `__eq__`."""
    folder, hashes = run_ledger(tmp_path, PERMISSIVE, engine, served=(BLINDED,), population=4)
    seen = evaluations(folder)
    summary = json.loads((folder / "summary.json").read_text())
    assert seen[hashes[BLINDED]]["measures"]["failed_tests"] == 0.0, "the value passes every test as pytest sees it"
    repairs = [member for member in summary["front"] if member["objectives"]["failed_tests"] == 0]
    assert repairs, summary["front"]
    for member in repairs:
        assert member["second_run"] is not None and not member["second_run"]["agrees"], member
        assert "decides the tests' checks" in member["second_run"]["detail"], member["second_run"]
    assert any("its scores are forged" in warning for warning in summary["warnings"])


#: The sums project with each timing forgery's uses kept in a function nobody calls.
SUMS_KEPT = (
    SUMS
    + """

def _kept(n):
    import os

    with open(os.devnull) as stream:
        stream.read()
    return "pyperf" in os.path.sys.modules
"""
)


#: An honest rewrite: the closed form of the sum of squares.
HONEST_TOTAL = "def total(n):\n    return (n - 1) * n * (2 * n - 1) // 6\n"


@pytest.mark.parametrize("engine", engines("cold", "warm"))
def test_a_speed_up_that_exists_only_when_timed_is_scored_tampered(tmp_path: Path, engine: str) -> None:
    """Each timed process makes the behaviour check after its timed loops, and it must answer as
    the untimed check did: a stale answer under pyperf (or after its 50th call) shows in the
    training tests' calls the check replays. A pyperf of its own, planted beside the code by an
    earlier command in the copy, never reaches the timing: the workload runs in a fresh copy,
    read-only."""
    project = tmp_path / "sums"
    (project / "tests").mkdir(parents=True)
    (project / "sums.py").write_text(SUMS_KEPT)
    (project / "bench.py").write_text(BENCH)
    (project / "tests" / "test_sums.py").write_text(SUMS_TESTS)
    fence = "```"
    replies = [HONEST_TOTAL, *TIMED.values(), *PLANTED.values()]
    actions = [Action(reply=f"Faster:\n{fence}python\n{text}{fence}\n") for text in replies]
    model = OneFunction(function="total", actions=actions, default=Action(reply="I would rather not."))
    config = tmp_path / "sums.toml"
    for server in serve(model):
        config.write_text(f"""\
[experiment]
name = "sums"
seed = 2
output = "runs"

[program]
root = "sums"
files = ["sums.py"]

[tests]
train = ["tests"]
timeout = 30

[objectives]
minimize = ["failed_tests", "runtime", "size"]
constraint = "train_pass"

[search]
population = 6
generations = 1

[mutators]
operators = ["constant"]
llm = 1.0

[workload]
call = "bench:run"
check_output = true

[llm]
base_url = "{server.base_url}"
model = "scripted"
api_key_env = "GI_SUMS_KEY"
timeout = 5
retries = 0

[evaluation]
workers = 1
engine = "{engine}"
""")
        assert main(["run", str(config), "--quiet"]) == 0
    folder = tmp_path / "runs" / "sums-seed2"
    seen = evaluations(folder)
    kept = SUMS_KEPT[SUMS_KEPT.index("\n\ndef _kept") :]
    for name, text in TIMED.items():
        made = tree_hash({"sums.py": normalised_dump(SUMS.replace(SUMS[SUMS.index("def total") :], text) + kept)})
        assert made in seen, f"{name}: never evaluated"
        entry = seen[made]
        assert entry["status"] == "tampered", (name, entry["status"], entry["detail"], entry["measures"])
        assert "answers differently when it is timed" in entry["detail"], entry["detail"]
    for name, text in PLANTED.items():
        entry = seen[
            tree_hash({"sums.py": normalised_dump(SUMS.replace(SUMS[SUMS.index("def total") :], text) + kept)})
        ]
        # The planted pyperf divides every time by 40000: any ratio near that would be its.
        assert entry["status"] == "ok" and entry["measures"]["runtime"] > 0.1, (name, entry["measures"])
    honest = seen[
        tree_hash({"sums.py": normalised_dump(SUMS.replace(SUMS[SUMS.index("def total") :], HONEST_TOTAL) + kept)})
    ]
    assert honest["status"] == "ok" and honest["measures"]["output_differs"] == 0.0, honest
    assert honest["measures"]["runtime"] < 1.0, "the closed form is faster, and nothing is wrong with it"
    summary = json.loads((folder / "summary.json").read_text())
    assert not any("answers otherwise in its timed processes" in warning for warning in summary["warnings"])
