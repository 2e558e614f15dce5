from __future__ import annotations

from gi.fitness import complexity, size, style
from gi.fitness.objectives import OBJECTIVES, reference_point

SIMPLE = "def f(x):\n    return x\n"
BRANCHY = "def f(x):\n    if x:\n        return 1\n    elif x > 2:\n        return 2\n    return 3\n"


def test_complexity_counts_branches() -> None:
    assert complexity.cyclomatic({"a.py": BRANCHY}) > complexity.cyclomatic({"a.py": SIMPLE})
    assert complexity.maintainability({"a.py": SIMPLE}) > complexity.maintainability({"a.py": BRANCHY})
    assert complexity.halstead_volume({"a.py": BRANCHY}) > complexity.halstead_volume({"a.py": SIMPLE})


def test_style_counts_violations() -> None:
    assert style.violations({"a.py": SIMPLE}) == 0
    assert style.violations({"a.py": "def f( x ):\n  return x\n"}) == 3  # E201, E202, E111


def test_diff_lines_skips_headers() -> None:
    diff = "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-a = 1\n+a = 2\n b = 3\n"
    assert size.diff_lines(diff) == 2


def test_tokens_changed_counts_code_not_layout() -> None:
    before = {"a.py": "def pad(text, fill, missing):\n    return text + fill * missing\n"}
    operator = {"a.py": "def pad(text, fill, missing):\n    return text % fill * missing\n"}
    copied = {"a.py": 'def pad(text, fill, missing):\n    return text[:3] + "..."\n'}
    relaid = {"a.py": "def pad(text, fill, missing):  # padded\n\n    return text + fill  *  missing\n"}
    assert size.tokens_changed(before, operator) == 1
    assert size.tokens_changed(before, copied) == 7  # `fill * missing` (3) for `[:3] + "..."` (7)
    assert size.tokens_changed(before, relaid) == 0
    assert size.tokens_changed(before, {"a.py": "def pad(:\n"}) > 0  # unparseable: words compared


def test_reference_point_is_worse_than_the_baseline() -> None:
    objectives = [OBJECTIVES.get(name) for name in ("failed_tests", "complexity", "size", "maintainability")]
    baseline = {"failed_tests": 0.0, "complexity": 10.0, "size": 0.0, "maintainability": 60.0}
    point = reference_point(objectives, baseline, test_count=4, max_edits=10)
    assert point == (5.0, 12.0, 11.0, 1.0)
    for objective, value in zip(objectives, point, strict=True):
        assert objective.minimised(baseline[objective.name]) < value
