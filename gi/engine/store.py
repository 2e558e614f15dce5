"""The run store: one SQLite file per run holding every evaluation, individual and checkpoint.

Everything is JSON text in rows, never pickles. Evaluations are a cache keyed by content
(the variant's tree hash); a checkpoint is written once per generation in one
transaction, and a run killed at any moment resumes from the last one.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gi.model.errors import StoreError
from gi.model.results import Evaluation

SCHEMA_VERSION = 1
#: The meta key of the versions of gi and libcst that made a run (`tool_versions`).
VERSIONS = "versions"


def tool_versions() -> dict[str, str]:
    """The versions of gi and of libcst here: a stored location is a path of libcst's field
    names, and what a run measured depends on gi's measures and checks."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name, distribution in (("gi", "gi-improve"), ("libcst", "libcst")):
        try:
            found[name] = version(distribution)
        except PackageNotFoundError:
            found[name] = "unknown"
    return found


def version_problems(recorded: dict[str, str] | None, what: str) -> tuple[str | None, str | None]:
    """How the versions that made a stored run (`recorded`) differ from these, for `what` ("resume
    it", "replay it"): (why it is refused, or None; what to warn of, or None). Another libcst is
    refused: stored locations are paths of its field names, and another version may find other
    nodes at them, so patches would apply differently. Another gi is a warning: the run's
    evaluations stand as that gi judged them, and new ones are this gi's."""
    here = tool_versions()
    if recorded is None:
        return None, f"the run folder does not say which gi and libcst made it (an older gi); {what} as it is"
    if recorded.get("libcst") != here["libcst"]:
        return (
            f"the run was made with libcst {recorded.get('libcst')}, this is libcst {here['libcst']}: its stored"
            f" patches name syntax-tree fields of that libcst and may apply elsewhere; to {what}, install"
            f" libcst=={recorded.get('libcst')}",
            None,
        )
    if recorded.get("gi") != here["gi"]:
        return None, (f"the run was made by gi {recorded.get('gi')}, this is gi {here['gi']}: its evaluations stand as"
                      " that gi made them, and what this one measures may differ")  # fmt: skip
    return None, None


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS evaluations (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tree_hash TEXT NOT NULL UNIQUE,
    individual TEXT NOT NULL,
    generation INTEGER NOT NULL,
    evaluation TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS individuals (
    id TEXT PRIMARY KEY,
    generation INTEGER NOT NULL,
    tree_hash TEXT NOT NULL,
    patch TEXT NOT NULL,
    parents TEXT NOT NULL,
    operator TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS measurements (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    source TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoints (
    generation INTEGER PRIMARY KEY,
    population TEXT NOT NULL,
    archive TEXT NOT NULL,
    rng TEXT NOT NULL,
    stats TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS study_evaluations (
    tree_hash TEXT PRIMARY KEY,
    label TEXT NOT NULL,
    evaluation TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS generalisation (
    generation INTEGER PRIMARY KEY,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS arrivals (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    individual TEXT NOT NULL,
    count INTEGER NOT NULL
);
"""


@dataclass(frozen=True)
class IndividualRecord:
    id: str
    generation: int
    tree_hash: str
    patch: Any
    parents: tuple[str, ...]
    operator: str


@dataclass(frozen=True)
class Checkpoint:
    generation: int
    population: list[str]
    archive: list[str]
    rng: dict[str, Any]
    stats: dict[str, Any]


class RunStore:
    """Read and write one run's store file."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        if read_only:
            self._open_read_only(path)
            return
        if path.is_dir():
            raise StoreError(f"{path}: cannot open the run store: it is a folder, not a file")
        try:
            self._db = sqlite3.connect(path, isolation_level=None)
        except sqlite3.Error as error:  # a missing or unwritable folder, a read-only file system
            raise StoreError(f"{path}: cannot open the run store for writing ({error})") from None
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            version = self.get_meta("schema_version")
        except sqlite3.OperationalError as error:  # read-only, or locked by another gi for too long
            self._db.close()
            raise StoreError(f"{path}: cannot open the run store for writing ({error})") from None
        except (sqlite3.DatabaseError, ValueError) as error:  # another file, or a meta row that is not JSON
            self._db.close()
            raise StoreError(f"{path}: not a gi run store ({error})") from None
        if version is None:
            self.set_meta("schema_version", SCHEMA_VERSION)
        elif version != SCHEMA_VERSION:
            self._db.close()
            raise StoreError(f"{path}: store schema {version}, this gi reads {SCHEMA_VERSION}")

    def _open_read_only(self, path: Path) -> None:
        """Open another run's store to read (a recorded run being replayed); never writes to it."""
        if not path.is_file():
            raise StoreError(f"{path}: no run store here (is this a run folder?)")
        try:
            self._db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
            version = self.get_meta("schema_version")
        except (sqlite3.DatabaseError, ValueError) as error:
            raise StoreError(f"{path}: not a gi run store ({error})") from None
        if version != SCHEMA_VERSION:
            self._db.close()
            raise StoreError(f"{path}: store schema {version}, this gi reads {SCHEMA_VERSION}")

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def get_meta(self, key: str) -> Any:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def set_meta(self, key: str, value: Any) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value)))

    def get_measurement(self, key: str) -> tuple[Any, str] | None:
        """A recorded measurement of the run (the original's timings, a held-out run, ...) and
        where it came from ("measured", or "replayed" from another run), or None."""
        try:
            row = self._db.execute("SELECT value, source FROM measurements WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError:  # a store written before measurements were recorded
            return None
        return None if row is None else (json.loads(row[0]), row[1])

    def put_measurement(self, key: str, value: Any, source: str) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO measurements (key, value, source) VALUES (?, ?, ?)",
            (key, json.dumps(value), source),
        )

    def measurement_sources(self) -> dict[str, str]:
        """Every recorded measurement's key and where it came from."""
        return dict(self._db.execute("SELECT key, source FROM measurements ORDER BY key").fetchall())

    def measurements(self, prefix: str) -> dict[str, Any]:
        """The recorded measurements whose keys start with `prefix`, by key."""
        query = "SELECT key, value FROM measurements WHERE substr(key, 1, ?) = ?"
        rows = self._db.execute(query, (len(prefix), prefix))
        return {key: json.loads(value) for key, value in rows}

    def clear_measurements(self) -> None:
        """Forget the recorded measurements (a run that has not finished a generation starts its
        measurements over: the program may have changed since)."""
        self._db.execute("DELETE FROM measurements")

    def put_evaluation(self, evaluation: Evaluation, *, individual: str, generation: int) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO evaluations (tree_hash, individual, generation, evaluation) VALUES (?, ?, ?, ?)",
            (evaluation.tree_hash, individual, generation, json.dumps(evaluation.to_json())),
        )

    def evaluations(self, *, after: int | None = None, through: int | None = None) -> dict[str, Evaluation]:
        """The stored evaluations by tree hash, in the order they were made: of the generations
        after `after` and up to `through` (the original's is generation -1), or every one."""
        rows = self._db.execute(
            "SELECT tree_hash, evaluation FROM evaluations WHERE generation > ? AND generation <= ? ORDER BY seq",
            (-(2**62) if after is None else after, 2**62 if through is None else through),
        )
        try:
            return {tree_hash: Evaluation.from_json(json.loads(text)) for tree_hash, text in rows}
        except (ValueError, KeyError, TypeError) as error:
            raise StoreError(f"{self.path}: an evaluation row is corrupt ({error})") from None

    def evaluation_log(self) -> Iterator[tuple[int, str, int, dict[str, Any]]]:
        """(sequence number, first individual, generation, evaluation JSON) in evaluation order."""
        rows = self._db.execute("SELECT seq, individual, generation, evaluation FROM evaluations ORDER BY seq")
        for seq, individual, generation, text in rows:
            yield seq, individual, generation, json.loads(text)

    def put_individual(self, record: IndividualRecord) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO individuals (id, generation, tree_hash, patch, parents, operator)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (
                record.id,
                record.generation,
                record.tree_hash,
                json.dumps(record.patch),
                json.dumps(list(record.parents)),
                record.operator,
            ),
        )

    def individuals(self, ids: Sequence[str]) -> list[IndividualRecord]:
        records = []
        for identifier in ids:
            row = self._db.execute(
                "SELECT id, generation, tree_hash, patch, parents, operator FROM individuals WHERE id = ?",
                (identifier,),
            ).fetchone()
            if row is None:
                raise StoreError(f"{self.path}: checkpoint names individual {identifier!r}, which is not stored")
            records.append(
                IndividualRecord(row[0], row[1], row[2], json.loads(row[3]), tuple(json.loads(row[4])), row[5])
            )
        return records

    def lineage(self) -> Iterator[tuple[str, str, bool, dict[str, Any] | None]]:
        """(individual id, operator label, whether it made the evaluation, the evaluation JSON)."""
        rows = self._db.execute(
            "SELECT i.id, i.operator, e.individual = i.id, e.evaluation FROM individuals i"
            " LEFT JOIN evaluations e ON e.tree_hash = i.tree_hash ORDER BY i.generation, i.id"
        )
        for identifier, operator, evaluated_here, text in rows:
            yield identifier, operator, bool(evaluated_here), json.loads(text) if text else None

    def individual_hashes(self) -> set[str]:
        """The programs (tree hashes) of every individual of the checkpointed generations."""
        return {tree_hash for (tree_hash,) in self._db.execute("SELECT DISTINCT tree_hash FROM individuals")}

    def count_individuals(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM individuals").fetchone()[0])

    def checkpoint(self, checkpoint: Checkpoint) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO checkpoints (generation, population, archive, rng, stats) VALUES (?, ?, ?, ?, ?)",
            (
                checkpoint.generation,
                json.dumps(checkpoint.population),
                json.dumps(checkpoint.archive),
                json.dumps(checkpoint.rng),
                json.dumps(checkpoint.stats),
            ),
        )

    def last_checkpoint(self) -> Checkpoint | None:
        row = self._db.execute(
            "SELECT generation, population, archive, rng, stats FROM checkpoints ORDER BY generation DESC LIMIT 1"
        ).fetchone()
        if row is None:
            return None
        return Checkpoint(row[0], json.loads(row[1]), json.loads(row[2]), json.loads(row[3]), json.loads(row[4]))

    def put_study_evaluation(self, evaluation: Evaluation, label: str) -> None:
        """Keep an evaluation made after the search (minimisation, ablation), apart from the search's."""
        self._db.execute(
            "INSERT OR REPLACE INTO study_evaluations (tree_hash, label, evaluation) VALUES (?, ?, ?)",
            (evaluation.tree_hash, label, json.dumps(evaluation.to_json())),
        )

    def study_evaluations(self) -> dict[str, Evaluation]:
        """The evaluations made after the search, by tree hash."""
        rows = self._db.execute("SELECT tree_hash, evaluation FROM study_evaluations")
        try:
            return {tree_hash: Evaluation.from_json(json.loads(text)) for tree_hash, text in rows}
        except (ValueError, KeyError, TypeError) as error:
            raise StoreError(f"{self.path}: a study evaluation row is corrupt ({error})") from None

    def put_generalisation(self, generation: int, record: dict[str, Any]) -> None:
        """One generation's generalisation-gap record (written with its checkpoint)."""
        self._db.execute(
            "INSERT OR REPLACE INTO generalisation (generation, record) VALUES (?, ?)", (generation, json.dumps(record))
        )

    def generalisation(self) -> list[dict[str, Any]]:
        """The generalisation-gap records, by generation."""
        rows = self._db.execute("SELECT record FROM generalisation ORDER BY generation")
        return [json.loads(text) for (text,) in rows]

    def put_arrival(self, seq: int, kind: str, individual: str = "", count: int = 0) -> None:
        """One event of a steady-state search, in the order it was taken: a breeding ("bred" and
        "topped": how many candidates it made, and in `individual` the order it took the model's
        answers in, "2 0"), an evaluation taken in ("told": whose), or the answers a closing
        generation waited for ("settled": their order, and how many) (gi/run/steady.py)."""
        self._db.execute(
            "INSERT INTO arrivals (seq, kind, individual, count) VALUES (?, ?, ?, ?)", (seq, kind, individual, count)
        )

    def arrivals(self, start: int = 0) -> list[tuple[str, str, int]]:
        """The steady-state events from number `start` on: (kind, individual, count)."""
        try:
            rows = self._db.execute(
                "SELECT kind, individual, count FROM arrivals WHERE seq >= ? ORDER BY seq", (start,)
            ).fetchall()
        except sqlite3.OperationalError:  # a recorded store of a gi without steady-state runs
            return []
        return [(kind, individual, int(count)) for kind, individual, count in rows]

    def count_arrivals(self) -> int:
        try:
            return int(self._db.execute("SELECT COUNT(*) FROM arrivals").fetchone()[0])
        except sqlite3.OperationalError:
            return 0

    def history(self) -> list[dict[str, Any]]:
        rows = self._db.execute("SELECT stats FROM checkpoints ORDER BY generation")
        return [json.loads(text) for (text,) in rows]
