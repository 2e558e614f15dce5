"""The commands around a finished run, on one tiny real run (real pytest, real run store):
`gi apply` against `git apply` of the same member's diff, its refusals and its backup."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gi.cli.main import main
from tests.daily import write_config, write_project

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def chain_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    """(the project, the run folder, its summary) of one 6 x 3 run through the command line."""
    folder = tmp_path_factory.mktemp("daily")
    project = write_project(folder / "chain")
    config = write_config(folder, project, folder / "runs", population=6, generations=3)
    assert main(["run", str(config), "--quiet"]) == 0
    run = folder / "runs" / "chain-seed1"
    summary = json.loads((run / "summary.json").read_text())
    assert any(member["diff"] for member in summary["front"]), "the run found no change to apply"
    return project, run, summary


def files(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("gi: error: "), lines
    return lines[0]


def test_apply_gives_the_files_git_apply_gives(
    chain_run: tuple[Path, Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, run, summary = chain_run
    for member in (m for m in summary["front"] if m["diff"]):
        by_gi, by_git = tmp_path / member["id"] / "gi", tmp_path / member["id"] / "git"
        shutil.copytree(project, by_gi, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(project, by_git, ignore=shutil.ignore_patterns("__pycache__"))
        subprocess.run(["git", "apply", str(run / member["diff"])], cwd=by_git, check=True)
        assert main(["apply", str(run), member["id"], "--project", str(by_gi)]) == 0
        assert files(by_gi) == files(by_git), f"{member['id']}: gi apply and git apply differ"
        assert files(by_gi) != files(project)
        out = capsys.readouterr().out
        assert f"changed {by_gi / 'chain.py'}" in out and f"applied {member['id']}" in out
        (backup,) = (run / "applied").glob(f"{member['id']}-*")
        assert (backup / "chain.py").read_bytes() == (project / "chain.py").read_bytes()
        shutil.rmtree(backup)


def test_apply_refuses_a_file_changed_since_the_run(
    chain_run: tuple[Path, Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, run, summary = chain_run
    member = next(m for m in summary["front"] if m["diff"])
    copy = tmp_path / "copy"
    shutil.copytree(project, copy)
    changed = (copy / "chain.py").read_text() + "\n# a note of mine\n"
    (copy / "chain.py").write_text(changed)
    assert main(["apply", str(run), member["id"], "--project", str(copy)]) == 2
    line = error_line(capsys.readouterr().err)
    assert f"{copy / 'chain.py'}: changed since the run" in line
    assert (copy / "chain.py").read_text() == changed
    assert not (run / "applied").exists() or not any((run / "applied").iterdir())


def test_apply_to_the_runs_own_project_then_again(
    chain_run: tuple[Path, Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --project it writes where the run read; applied once, the file has changed."""
    project, run, summary = chain_run
    member = next(m for m in summary["front"] if m["diff"])
    before = (project / "chain.py").read_bytes()
    try:
        assert main(["apply", str(run), member["id"]]) == 0
        assert (project / "chain.py").read_bytes() != before
        capsys.readouterr()
        assert main(["apply", str(run), member["id"]]) == 2
        assert "changed since the run" in error_line(capsys.readouterr().err)
        assert main(["apply", str(run), "original"]) == 0
        assert "changes nothing" in capsys.readouterr().out
    finally:
        (project / "chain.py").write_bytes(before)
        shutil.rmtree(run / "applied", ignore_errors=True)


def test_apply_of_an_unknown_member(
    chain_run: tuple[Path, Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    _, run, _ = chain_run
    assert main(["apply", str(run), "g99-i9"]) == 2
    assert "no front member 'g99-i9'" in error_line(capsys.readouterr().err)


def test_apply_never_writes_outside_the_target(
    chain_run: tuple[Path, Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run folder whose member edits a file outside the project (a summary made by hand, or a
    run of a config that named one before gi refused them): refused, nothing written."""
    project, run, summary = chain_run
    copied = tmp_path / "run"
    shutil.copytree(run, copied)
    member = next(member for member in summary["front"] if member["diff"])
    file = member["edits"][0]["target"]["file"]
    escaped = f"../escaped/{file}"
    (tmp_path / "escaped").mkdir()
    shutil.copy2(project / file, tmp_path / "escaped" / file)
    text = (copied / "summary.json").read_text().replace(f'"{file}"', f'"{escaped}"')
    (copied / "summary.json").write_text(text)
    target = tmp_path / "target"
    shutil.copytree(project, target)
    before = files(tmp_path / "escaped")
    assert main(["apply", str(copied), member["id"], "--project", str(target)]) == 2
    assert f"edits {escaped}, outside {target}" in error_line(capsys.readouterr().err)
    assert files(tmp_path / "escaped") == before


# --- the original, once ---------------------------------------------------------------------------


def test_the_original_has_one_id_and_one_operator_everywhere(
    chain_run: tuple[Path, Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    """summary.json, `gi show --json`, the tables and the report call it `original`; the id the
    search gave it (g0-i0) is still taken on the command line."""
    project, run, summary = chain_run
    (original,) = (member for member in summary["front"] if not member["edits"])
    assert (original["id"], original["operator"]) == ("original", "none")
    assert summary["baseline"]["individuals"] == ["g0-i0"]
    for name in ("summary.json", "report.md", "report.html"):
        text = (run / name).read_text()
        assert "g0-i0" not in text.replace('"individuals": [\n      "g0-i0"', ""), f"{name} names the original g0-i0"
    assert main(["show", str(run)]) == 0
    assert "g0-i0" not in capsys.readouterr().out
    shown = {}
    for typed in ("original", "g0-i0"):
        assert main(["show", str(run), typed, "--json"]) == 0
        shown[typed] = json.loads(capsys.readouterr().out)
    assert shown["original"] == shown["g0-i0"]
    assert (shown["original"]["id"], shown["original"]["operator"]) == ("original", "none")
    assert main(["show", str(run), "g0-i0"]) == 0
    assert "original (the original program)" in capsys.readouterr().out
    before = files(project)
    assert main(["apply", str(run), "g0-i0", "--project", str(project)]) == 0
    assert "original changes nothing" in capsys.readouterr().out
    assert files(project) == before


# --- gi report ------------------------------------------------------------------------------------


def test_the_run_wrote_its_report(chain_run: tuple[Path, Path, dict[str, Any]]) -> None:
    _, run, summary = chain_run
    markdown = (run / "report.md").read_text()
    for section in ("## Pareto front", "## Hypervolume", "## Operators", "## Generalisation gap", "## Front members"):
        assert section in markdown
    assert summary["generalisation_gap"], "the run has held-out tests: the gap is recorded each generation"
    assert "Not recorded" not in markdown and "generalisation-gap" in markdown
    for member in (m for m in summary["front"] if m["diff"]):
        assert f"### {member['id']} " in markdown
        assert (run / member["diff"]).read_text().rstrip() in markdown
        for line in member["descriptions"]:
            assert line in markdown
        verdict = "overfits" if member["overfits"] else "generalises"
        assert f"Held-out tests: {verdict}" in markdown
    for image in ("front.png", "hypervolume.png", "operators.png", "generalisation-gap.png"):
        assert f"(report-images/{image})" in markdown
        assert (run / "report-images" / image).read_bytes().startswith(b"\x89PNG")
    page = (run / "report.html").read_text()
    assert page.count('<img src="data:image/png;base64,') == 4
    assert "http://" not in page and "https://" not in page


def test_valid_edits_are_the_proposed_less_repeats_and_edits_that_changed_nothing(
    chain_run: tuple[Path, Path, dict[str, Any]],
) -> None:
    """The report's operator table (and the plot drawn from the same counts): for a classic
    operator, valid is not simply proposed."""
    _, run, summary = chain_run
    row = summary["operators"]["statement_delete"]
    valid = row["proposals"] - row["duplicates"] - row["unchanged"]
    assert 0 < valid < row["proposals"], row
    assert row["evaluated"] <= valid, "every program it evaluated came from a valid edit"
    markdown = (run / "report.md").read_text()
    assert "| operator | proposed | valid | passing | in front |" in markdown
    line = f"| statement_delete | {row['proposals']:g} | {valid:g} | {row['passing']:g} | {row['front']:g} |"
    assert line in markdown, markdown


def test_the_front_plot_leaves_out_what_never_varies_and_says_so(chain_run: tuple[Path, Path, dict[str, Any]]) -> None:
    """Under train_pass every member fails no training test, as the original does."""
    _, run, summary = chain_run
    assert {member["objectives"]["failed_tests"] for member in summary["front"]} == {0}
    caption = "Not drawn, the same for every member and the original: failed tests (0)."
    assert f"*{caption}*" in (run / "report.md").read_text()
    assert caption in (run / "report.html").read_text()


def test_a_recorded_generalisation_gap_is_plotted(
    chain_run: tuple[Path, Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, run, summary = chain_run
    copy = tmp_path / "run"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("report*"))
    gap = [
        {"generation": 1, "checked": 4, "overfit": 1, "rate": 0.25},
        {"generation": 2, "checked": 5, "overfit": 3, "rate": 0.6},
    ]
    (copy / "summary.json").write_text(json.dumps({**summary, "generalisation_gap": gap}))
    assert main(["report", str(copy)]) == 0
    assert f"wrote {copy / 'report.html'}" in capsys.readouterr().out
    markdown = (copy / "report.md").read_text()
    assert "(report-images/generalisation-gap.png)" in markdown and "Not recorded" not in markdown
    assert "| chain | 2 | 5 | 3 | 60% |" in markdown


def test_an_experiment_report_has_the_band_over_seeds(
    chain_run: tuple[Path, Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, run, summary = chain_run
    experiment = tmp_path / "experiment"
    for seed in (1, 2, 3):
        copy = experiment / f"chain-seed{seed}"
        shutil.copytree(run, copy, ignore=shutil.ignore_patterns("report*", "applied"))
        (copy / "summary.json").write_text(
            json.dumps({**summary, "experiment": {**summary["experiment"], "seed": seed}})
        )
    assert main(["report", str(experiment)]) == 0
    markdown = (experiment / "report.md").read_text()
    assert "3 runs: chain seed 1, chain seed 2, chain seed 3." in markdown
    assert "the band is the interquartile range over seeds" in markdown
    assert "### chain seed 2: " in markdown


def test_a_report_that_cannot_be_drawn_is_a_warning_not_a_failure(
    chain_run: tuple[Path, Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    """A finished run run again rewrites its report; with report-images/ taken by a file, it warns."""
    _, run, _ = chain_run
    shutil.rmtree(run / "report-images")
    (run / "report.html").unlink()
    (run / "report-images").write_text("not a folder")
    try:
        capsys.readouterr()
        assert main(["run", str(run.parent.parent / "chain.toml"), "--quiet"]) == 0
        err = capsys.readouterr().err
        assert "gi: warning: " in err and "the report could not be written" in err
        assert (run / "summary.json").is_file() and not (run / "report.html").exists()
    finally:
        (run / "report-images").unlink()
        assert main(["report", str(run)]) == 0


# --- the report in a real browser -----------------------------------------------------------------

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")


def open_in_chromium(page: Path, screenshot: Path | None = None) -> tuple[list[tuple[bool, int]], list[str]]:
    """Open a page in headless Chromium: (complete and naturalWidth of every image, every URL the
    page asked for, from the DevTools network log)."""
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("Debian's chromium and chromium-driver are not installed (.ci/run installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1200,2400"):  # fmt: skip
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.get(page.as_uri())
        images = [
            (bool(done), int(width))
            for done, width in driver.execute_script(
                "return Array.from(document.images).map(image => [image.complete, image.naturalWidth])"
            )
        ]
        if screenshot is not None:
            driver.save_screenshot(str(screenshot))
        requests = []
        for entry in driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"] == "Network.requestWillBeSent":
                requests.append(message["params"]["request"]["url"])
    finally:
        driver.quit()
    return images, requests


def test_the_network_check_sees_an_external_image(tmp_path: Path) -> None:
    """The check below is only worth something if it catches a page that fetches."""
    page = tmp_path / "fetches.html"
    page.write_text('<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/probe.png"></body></html>')
    images, requests = open_in_chromium(page)
    assert images == [(True, 0)]
    assert "http://127.0.0.1:9/probe.png" in requests


def test_report_html_loads_every_plot_in_chromium_and_fetches_nothing(
    chain_run: tuple[Path, Path, dict[str, Any]],
) -> None:
    _, run, _ = chain_run
    screenshot = run / "report-screenshot.png"
    images, requests = open_in_chromium(run / "report.html", screenshot)
    assert len(images) == 4, images  # front, hypervolume, operators, generalisation gap
    assert all(done and width > 0 for done, width in images), f"a plot did not load: {images}"
    external = [url for url in requests if not url.startswith("data:") and url != (run / "report.html").as_uri()]
    assert external == [], f"the report fetched {external}"
    assert screenshot.read_bytes().startswith(b"\x89PNG")
    artifacts = os.environ.get("GI_ARTIFACTS")
    if artifacts:  # CI keeps the screenshot with its other artifacts
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(screenshot, Path(artifacts) / "report-screenshot.png")
