"""A corpus of SEARCH/REPLACE replies with the drift models put into them, and what each must give.

Each case is the code the model was shown, its reply, and the code the reply means: the clean
SEARCH lines replaced by the clean REPLACE lines with `str.replace` (no matcher involved).
Most cases are made from clean blocks over the functions below, with one or two kinds of drift
put in as models put them (`DRIFTS`), inside the prose, fences and file names replies come
with; a few are written out whole. The generator is seeded: the corpus is the same every run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

FUNCTIONS = [
    '''\
def has_pair_with_sum(values, target):
    """True if two different entries of values add up to target."""
    for i in range(len(values)):
        for j in range(len(values)):
            if i != j and values[i] + values[j] == target:
                return True

    return False
''',
    """\
    def merge(self, intervals):
        ordered = sorted(intervals, key=lambda pair: pair[0])
        merged = []
        for start, end in ordered:
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))

        # the caller expects a list of tuples
        return merged
""",
    """\
def word_counts(text, stop_words=()):
    counts = {}
    for word in text.lower().split():
        word = word.strip(".,;:!?")
        if not word or word in stop_words:
            continue
        counts[word] = counts.get(word, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ranked
""",
    '''\
        def balance(self, account):
            """The sum of an account's entries, refusing unknown accounts."""
            if account not in self.accounts:
                raise KeyError(account)
            total = 0
            for entry in self.entries:
                if entry.account == account:
                    total += entry.amount

            return total
''',
    """\
def windows(values, size):
    def mean(chunk):
        return sum(chunk) / len(chunk)

    result = []
    for start in range(len(values) - size + 1):
        chunk = values[start : start + size]
        result.append(mean(chunk))
    return result
""",
]


@dataclass(frozen=True)
class Case:
    name: str
    code: str
    reply: str
    expected: str


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _clean_block(code: str, rng: np.random.Generator) -> tuple[list[str], list[str]]:
    """A span of the function's body (unique in the code) and a change to it."""
    lines = code.rstrip("\n").split("\n")
    while True:
        start = int(rng.integers(1, len(lines)))
        if not lines[start].strip():
            continue
        size = int(rng.integers(1, 5))
        span = lines[start : start + size]
        while span and not span[-1].strip():
            span = span[:-1]
        text = "\n".join(span)
        if span and code.count(text) == 1:
            break
    kind = int(rng.integers(3))
    first = span[0]
    if kind == 0:  # a line changed
        change = [*span[:-1], span[-1].rstrip() + "  # changed"]
    elif kind == 1:  # a line put in before the span
        change = [f"{_indent_of(first)}checked = True", *span]
    else:  # the span's first line dropped, one written in its place
        change = [f"{_indent_of(first)}pass  # was: {first.strip()}", *span[1:]]
    return span, change


def _trailing_spaces(search: list[str], replace: list[str], rng: np.random.Generator) -> tuple[list[str], list[str]]:
    return [line + " " * int(rng.integers(1, 4)) if rng.random() < 0.6 else line for line in search], replace


def _dedented(search: list[str], replace: list[str], rng: np.random.Generator) -> tuple[list[str], list[str]]:
    shared = min(len(_indent_of(line)) for line in (*search, *replace) if line.strip())
    return [line[shared:] for line in search], [line[shared:] for line in replace]


def _over_indented(search: list[str], replace: list[str], rng: np.random.Generator) -> tuple[list[str], list[str]]:
    extra = " " * int(rng.choice([2, 4, 8]))
    return [extra + line if line.strip() else line for line in search], [
        extra + line if line.strip() else line for line in replace
    ]


def _blank_lines_dropped(
    search: list[str], replace: list[str], rng: np.random.Generator
) -> tuple[list[str], list[str]]:
    return [line for line in search if line.strip()], replace


def _blank_line_added(search: list[str], replace: list[str], rng: np.random.Generator) -> tuple[list[str], list[str]]:
    """A blank line after the first line of the SEARCH text (never one the code has there)."""
    return [search[0], "", *search[1:]], replace


def _tabs(search: list[str], replace: list[str], rng: np.random.Generator) -> tuple[list[str], list[str]]:
    def tabbed(line: str) -> str:
        indent = _indent_of(line)
        return "\t" * (len(indent) // 4) + " " * (len(indent) % 4) + line.lstrip()

    return [tabbed(line) for line in search], [tabbed(line) for line in replace]


DRIFTS: dict[str, Callable[[list[str], list[str], np.random.Generator], tuple[list[str], list[str]]]] = {
    "trailing spaces": _trailing_spaces,
    "dedented": _dedented,
    "over-indented": _over_indented,
    "blank lines dropped": _blank_lines_dropped,
    "blank line added": _blank_line_added,
    "tabs": _tabs,
}

MARKERS = [
    ("<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"),
    ("<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"),
    ("<<<<<<<< SEARCH", "========", ">>>>>>>> REPLACE"),
    ("<<<<<<< SEARCH ", "======= ", ">>>>>>> REPLACE "),
    ("    <<<<<<< SEARCH", "    =======", "    >>>>>>> REPLACE"),
]

WRAPPERS = [
    "{block}",
    "Here is the change:\n\n```python\n{block}\n```\n",
    "program.py\n```\n{block}\n```\nThis avoids the quadratic loop.",
    "I will make one edit.\n\n{block}\n\nThat's all.",
]


def _reply(search: list[str], replace: list[str], rng: np.random.Generator, *, fence_inside: bool) -> str:
    opening, divider, closing = MARKERS[int(rng.integers(len(MARKERS)))]
    inner_search = ["```python", *search, "```"] if fence_inside else search
    block = "\n".join([opening, *inner_search, divider, *replace, closing])
    return WRAPPERS[int(rng.integers(len(WRAPPERS)))].format(block=block)


def generated(seed: int = 2024, per_function: int = 24) -> list[Case]:
    """Cases made from clean blocks with drift put in: one or two drifts each, some with a fence
    inside the block or Windows line ends."""
    rng = np.random.default_rng(seed)
    names = list(DRIFTS)
    cases = []
    for number, code in enumerate(FUNCTIONS):
        for index in range(per_function):
            span, change = _clean_block(code, rng)
            expected = code.replace("\n".join(span), "\n".join(change), 1)
            chosen = [names[index % len(names)]]
            if rng.random() < 0.4:
                chosen.append(names[int(rng.integers(len(names)))])
            search, replace = list(span), list(change)
            for name in dict.fromkeys(chosen):
                search, replace = DRIFTS[name](search, replace, rng)
            reply = _reply(search, replace, rng, fence_inside=rng.random() < 0.15)
            if rng.random() < 0.15:
                reply = reply.replace("\n", "\r\n")
            cases.append(Case(f"f{number}-{index} {' + '.join(dict.fromkeys(chosen))}", code, reply, expected))
    return cases


WRITTEN = [
    Case(
        "two blocks, the second dedented",
        FUNCTIONS[0],
        """\
Two changes:

<<<<<<< SEARCH
    for i in range(len(values)):
        for j in range(len(values)):
            if i != j and values[i] + values[j] == target:
                return True
=======
    seen = set()
    for value in values:
        if target - value in seen:
            return True
        seen.add(value)
>>>>>>> REPLACE

<<<<<<< SEARCH
return False
=======
return False  # no pair
>>>>>>> REPLACE
""",
        FUNCTIONS[0]
        .replace(
            """\
    for i in range(len(values)):
        for j in range(len(values)):
            if i != j and values[i] + values[j] == target:
                return True""",
            """\
    seen = set()
    for value in values:
        if target - value in seen:
            return True
        seen.add(value)""",
        )
        .replace("    return False", "    return False  # no pair"),
    ),
    Case(
        "a method written from column 0, blank line dropped",
        FUNCTIONS[1],
        """\
```
<<<<<<< SEARCH
    else:
        merged.append((start, end))
# the caller expects a list of tuples
return merged
=======
    else:
        merged.append((start, end))
return [tuple(pair) for pair in merged]
>>>>>>> REPLACE
```""",
        FUNCTIONS[1].replace(
            """\
            else:
                merged.append((start, end))

        # the caller expects a list of tuples
        return merged""",
            """\
            else:
                merged.append((start, end))
        return [tuple(pair) for pair in merged]""",
        ),
    ),
    Case(
        "a fenced SEARCH and REPLACE with trailing spaces and CRLF",
        FUNCTIONS[2],
        "<<<<<<< SEARCH\r\n```python\r\n"
        "    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))   \r\n"
        "    return ranked\r\n```\r\n=======\r\n```python\r\n"
        "    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))\r\n```\r\n>>>>>>> REPLACE\r\n",
        FUNCTIONS[2].replace(
            "    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))\n    return ranked",
            "    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))",
        ),
    ),
    Case(
        "a helper added after the function (empty SEARCH)",
        FUNCTIONS[4],
        "<<<<<<< SEARCH\n=======\ndef total(chunk):\n    return sum(chunk)\n>>>>>>> REPLACE\n",
        FUNCTIONS[4] + "\ndef total(chunk):\n    return sum(chunk)\n",
    ),
    Case(
        "indented two levels too deep, taking the blank line below with it",
        FUNCTIONS[3],
        """\
<<<<<<< SEARCH
                    total = 0
                    for entry in self.entries:
                        if entry.account == account:
                            total += entry.amount

=======
                    total = sum(entry.amount for entry in self.entries if entry.account == account)
>>>>>>> REPLACE""",
        FUNCTIONS[3].replace(
            """\
            total = 0
            for entry in self.entries:
                if entry.account == account:
                    total += entry.amount

""",
            "            total = sum(entry.amount for entry in self.entries if entry.account == account)\n",
        ),
    ),
]


def corpus() -> list[Case]:
    return [*WRITTEN, *generated()]
