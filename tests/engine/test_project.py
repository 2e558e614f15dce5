from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.engine.project import find_environment, import_roots, module_names, probe, pytest_setup
from gi.model.errors import ProgramError
from gi.model.patch import Patch, apply
from gi.model.program import Program


def touch(root: Path, *files: str) -> None:
    for file in files:
        path = root / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")


def test_import_roots_of_the_usual_layouts(tmp_path: Path) -> None:
    touch(tmp_path, "src/pkg/__init__.py", "src/pkg/sub/__init__.py", "src/pkg/sub/mod.py", "src/ns/mod.py")
    touch(tmp_path, "flat.py", "toolz/__init__.py", "toolz/curried/__init__.py")
    files = ["src/pkg/__init__.py", "src/pkg/sub/mod.py", "src/ns/mod.py", "flat.py", "toolz/curried/__init__.py"]
    roots = import_roots(tmp_path, files)
    assert roots == ("src", ".")
    assert module_names(files, roots) == {
        "pkg": "src/pkg/__init__.py",
        "pkg.sub.mod": "src/pkg/sub/mod.py",
        "ns.mod": "src/ns/mod.py",
        "flat": "flat.py",
        "toolz.curried": "toolz/curried/__init__.py",
    }


def test_a_projects_environment_is_found(tmp_path: Path) -> None:
    assert find_environment(tmp_path) is None
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / ".venv")], check=True)
    assert find_environment(tmp_path) == tmp_path / ".venv" / "bin" / "python"


def test_an_environment_without_pytest_is_refused_naming_the_fix(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "env")], check=True)
    python = str(tmp_path / "env" / "bin" / "python")
    with pytest.raises(ProgramError, match=r"pytest is not installed there .*: .*env/bin/python -m pip install pytest"):
        probe(python, tmp_path)


def test_probe_of_gis_own_interpreter() -> None:
    found = probe(sys.executable)
    assert found.version == sys.version_info[:2]
    assert found.has_coverage
    assert "pytest-xdist" in found.plugins  # gi's dev environment has it
    assert found.pytest_options() == ("-p", "no:randomly", "-n", "0")
    assert str(Path(sys.prefix).resolve()) in found.folders


def with_and_without(distribution: str, plugin_off: str, projects: Sequence[tuple[Path, bool]],
                     engine: str = "cold") -> list[tuple[float, float]]:  # fmt: skip
    """Each project's original scored (failed and passed tests), after checking that this
    interpreter has `distribution`'s plugin and that gi leaves it out (`plugin_off`) exactly
    where the project's flag says."""
    scored = []
    for folder, left_out in projects:
        program = Program.load(folder, ["mod.py"], protected=["tests"])
        setup, interpreter = pytest_setup(program, Path(sys.executable))
        assert distribution in interpreter.plugins
        assert (plugin_off in setup.options) is left_out, setup.options
        evaluator = Evaluator(program, EvaluationSettings(("tests",), timeout=60, pytest=setup, engine=engine))
        try:
            evaluation = evaluator.evaluate(apply(program, Patch()))
        finally:
            evaluator.close()
        scored.append((evaluation.measures["failed_tests"], evaluation.measures["passed_tests"]))
    return scored


HYPOTHESIS_PLUGIN_OFF = "no:hypothesispytest"


def test_hypothesis_plugin_is_left_out_only_where_the_project_never_names_it(tmp_path: Path) -> None:
    """Hypothesis's plugin comes with gi and costs every test run an import of Hypothesis: a
    project that never names Hypothesis runs without it, and one whose settings need it (a
    `--hypothesis-profile` pytest would refuse without the plugin) keeps it and passes."""
    plain = tmp_path / "plain"
    (plain / "tests").mkdir(parents=True)
    (plain / "mod.py").write_text("def double(x):\n    return 2 * x\n")
    (plain / "tests" / "test_mod.py").write_text(
        "from mod import double\n\n\ndef test_double():\n    assert double(2) == 4\n"
    )
    uses = tmp_path / "uses"
    shutil.copytree(plain, uses)
    (uses / "pytest.ini").write_text("[pytest]\naddopts = --hypothesis-profile=brief\n")
    (uses / "tests" / "conftest.py").write_text(
        "from hypothesis import settings\n\nsettings.register_profile('brief', max_examples=5)\n"
    )
    (uses / "tests" / "test_property.py").write_text(
        "from hypothesis import given, strategies as st\n\nfrom mod import double\n\n\n"
        "@given(st.integers())\ndef test_even(x):\n    assert double(x) % 2 == 0\n"
    )
    scored = with_and_without("hypothesis", HYPOTHESIS_PLUGIN_OFF, ((plain, True), (uses, False)))
    assert scored == [(0, 1), (0, 2)]


ANYIO_PLUGIN_OFF = "no:anyio"


@pytest.mark.parametrize("engine", ["cold", "warm"])
def test_anyio_plugin_is_left_out_only_where_the_project_never_names_it(tmp_path: Path, engine: str) -> None:
    """AnyIO's plugin comes with gi's model client, imports every async back-end installed and
    wraps each test's collection, set-up and call: a project that never names AnyIO runs
    without it (nor does a warm worker import it), and one whose async tests need it keeps it
    and passes them."""
    # (The plain project's test asks for the module by a name it never writes whole.)
    sees = "import sys\n\n\ndef test_double():\n    assert double(2) == 4\n    assert 'any' + 'io' not in sys.modules\n"
    plain = tmp_path / "plain"
    (plain / "tests").mkdir(parents=True)
    (plain / "mod.py").write_text("def double(x):\n    return 2 * x\n")
    (plain / "tests" / "test_mod.py").write_text("from mod import double\n" + sees)
    uses = tmp_path / "uses"
    (uses / "tests").mkdir(parents=True)
    shutil.copy(plain / "mod.py", uses / "mod.py")
    (uses / "tests" / "test_async.py").write_text(
        "import pytest\n\nfrom mod import double\n\n\n@pytest.mark.anyio\n"
        "async def test_double_awaited():\n    assert double(2) == 4\n\n\n"
        "@pytest.fixture\ndef anyio_backend():\n    return 'asyncio'\n"
    )
    scored = with_and_without("anyio", ANYIO_PLUGIN_OFF, ((plain, True), (uses, False)), engine)
    assert scored == [(0, 1), (0, 1)], scored
