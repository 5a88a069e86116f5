"""The results store: one folder per run, one Parquet file per table, read through DuckDB.

Layout under the results folder (``.t2s/results`` by default)::

    runs/<run_id>/<table>.parquet     a run partition's rows of one ``run`` table
    fragments/<table>/<id>.parquet    a table many runs add to (the judge cache); read as a union

Every file is written under a temporary name and renamed into place, so a reader sees the
previous file or the new one, never half of either, and a failure midway leaves what was there.
Writers of different runs touch different files, so they never wait on each other: runs can
execute at once in several processes, or on several hosts sharing the folder. Tables are
created from their declarations in :mod:`t2s_pipeline.tables`, never from a first frame.
"""

from __future__ import annotations

import errno
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

import duckdb
import pandas as pd

from t2s_pipeline.errors import T2SError
from t2s_pipeline.tables import TABLES, Table, table

SCHEMA = "eval"
RUNS_DIR = "runs"


class StoreError(T2SError):
    """The results store cannot be read or written: names the path, the cause and the fix."""


V = TypeVar("V")


class ResultsStore:
    """Read and write the results of evaluation runs.

    >>> store = ResultsStore(Path("/tmp/results"))  # doctest: +SKIP
    >>> store.replace_run("output_scores", "baseline-1a2b3c4d", frame)  # doctest: +SKIP
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        if self.path.is_file():
            raise StoreError(
                f"{self.path} is a results file of the earlier single-file layout; results are "
                f"now a folder. Fix: t2s store migrate --from {self.path} --results "
                f"{self.path.with_suffix('')}, then use that folder"
            )

    # --- writing ----------------------------------------------------------------------------

    def replace_run(self, name: str, run_id: str, frame: pd.DataFrame) -> int:
        """Replace ``run_id``'s rows of run table ``name`` with ``frame``, atomically."""
        declared = self._declared(name, "run")
        frame = frame.assign(run_id=run_id)
        self._publish(declared, declared.to_frame(frame), self.run_dir(run_id) / f"{name}.parquet")
        return len(frame)

    def append(self, name: str, frame: pd.DataFrame) -> int:
        """Add rows to fragments table ``name`` as one new fragment (concurrent writers each
        add their own; readers see the union)."""
        declared = self._declared(name, "fragments")
        if len(frame):
            target = self.path / "fragments" / name / f"{uuid.uuid4().hex}.parquet"
            self._publish(declared, declared.to_frame(frame), target)
        return len(frame)

    def _declared(self, name: str, scope: str) -> Table:
        declared = table(name)
        if declared.scope != scope:
            raise StoreError(f"table {name} is a {declared.scope} table, not a {scope} table")
        return declared

    def _publish(self, declared: Table, frame: pd.DataFrame, target: Path) -> None:
        temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
        columns = ", ".join(f'CAST("{c.name}" AS {c.type}) AS "{c.name}"' for c in declared.columns)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with _cursor() as con:
                con.register("incoming", frame)
                con.execute(
                    f"COPY (SELECT {columns} FROM incoming) TO '{_quoted(temporary)}' "
                    "(FORMAT parquet)"
                )
            os.replace(temporary, target)
        except OSError as error:
            temporary.unlink(missing_ok=True)
            raise _store_error(error, target) from error
        except duckdb.Error as error:
            temporary.unlink(missing_ok=True)
            if "No space left" in str(error):
                raise _store_error(OSError(errno.ENOSPC, str(error)), target) from error
            raise StoreError(f"writing {target}: {error}") from error

    def delete_run(self, run_id: str) -> None:
        """Remove every table of one run (its folder)."""
        folder = self.run_dir(run_id)
        if folder.exists():
            for path in folder.iterdir():
                path.unlink()
            folder.rmdir()

    # --- reading ----------------------------------------------------------------------------

    def run_dir(self, run_id: str) -> Path:
        return self.path / RUNS_DIR / run_id

    def version(self, run_id: str, names: Iterable[str]) -> tuple[tuple[str, int, int, int], ...]:
        """What identifies the published state of tables ``names`` for one run: each file's
        path, inode, size and modification time (a fragments table: every fragment's). Every
        publication renames a new file into place, so any write changes it."""
        paths: list[Path] = []
        for name in names:
            if table(name).scope == "fragments":
                paths.extend(self.files(name))
            else:
                paths.append(self.run_dir(run_id) / f"{name}.parquet")
        found: list[tuple[str, int, int, int]] = []
        for path in paths:
            try:
                stat = path.stat()
            except FileNotFoundError:
                continue
            found.append((str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns))
        return tuple(found)

    def files(self, name: str) -> list[Path]:
        """The published files holding table ``name`` (every run's, for a run table)."""
        declared = table(name)
        if declared.scope == "fragments":
            candidates = sorted((self.path / "fragments" / name).glob("*.parquet"))
        else:
            candidates = sorted((self.path / RUNS_DIR).glob(f"*/{name}.parquet"))
        return [p for p in candidates if p.exists()]

    def read(self, name: str, run_id: str | None = None) -> pd.DataFrame:
        """Rows of one table, optionally of one run; an empty frame with the declared
        columns when nothing was written."""
        declared = table(name)
        if run_id is not None and declared.scope == "run":
            one = self.run_dir(run_id) / f"{name}.parquet"
            paths = [one] if one.exists() else []
        else:
            paths = self.files(name)
        if not paths:
            return _empty(declared)
        with _cursor() as con:
            data = con.execute(f"SELECT * FROM {_scan(paths)}").df()
        missing = [c for c in declared.names if c not in data.columns]
        for column in missing:
            data[column] = None
        return data[list(declared.names)]

    def has_table(self, name: str) -> bool:
        return bool(self.files(name))

    def run_ids(self) -> list[str]:
        """Every run recorded in the ``runs`` table, oldest first."""
        runs = self.read("runs")
        if runs.empty:
            return []
        return list(runs.sort_values("started_at")["run_id"])

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """An in-memory DuckDB connection with one view per table in schema ``eval`` over
        every run's files, for reading with SQL (``SELECT * FROM eval.output_scores``)."""
        con = duckdb.connect()
        try:
            con.execute(f"CREATE SCHEMA {SCHEMA}")
            for name, declared in TABLES.items():
                paths = self.files(name)
                source = _scan(paths) if paths else f"({_empty_select(declared)})"
                con.execute(f"CREATE VIEW {SCHEMA}.{name} AS SELECT * FROM {source}")
            yield con
        finally:
            con.close()


_SHARED: tuple[int, duckdb.DuckDBPyConnection] | None = None
_SHARED_LOCK = threading.Lock()


class KeptWhileUnchanged(Generic[V]):
    """The last ``kept`` values computed from runs' stored tables, each kept while the files
    of the tables it was computed from are unchanged (:meth:`ResultsStore.version`): stages
    sharing a process read the same tables back once. Values are shared: callers must not
    change them.

    >>> import tempfile
    >>> store = ResultsStore(Path(tempfile.mkdtemp()))
    >>> memo: KeptWhileUnchanged[int] = KeptWhileUnchanged(kept=2)
    >>> calls = []
    >>> [memo.get(store, "r1", ["items"], lambda: calls.append(1) or len(calls)) for _ in "ab"]
    [1, 1]
    """

    def __init__(self, kept: int) -> None:
        self._kept = kept
        self._values: dict[tuple[object, ...], V] = {}

    def get(
        self,
        store: ResultsStore,
        run_id: str,
        tables: Iterable[str],
        compute: Callable[[], V],
        *variant: object,
    ) -> V:
        """The value ``compute`` gives for this store, run, ``variant`` and the current files
        of ``tables``; computed again only after one of those files changed."""
        key = (str(store.path.resolve()), run_id, *variant, store.version(run_id, tables))
        if key not in self._values:
            if len(self._values) >= self._kept:
                self._values.pop(next(iter(self._values)))
            self._values[key] = compute()
        return self._values[key]


@contextmanager
def _cursor() -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor of this process's in-memory DuckDB, for one read or write of files: opening an
    in-memory database costs about 12 ms, a cursor of an open one next to nothing (a run reads
    and writes tables about 80 times). Each cursor has its own registered frames; a process
    forked from this one opens its own database (this one's is closed before the fork)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None or _SHARED[0] != os.getpid():
            _SHARED = (os.getpid(), duckdb.connect())
        cursor = _SHARED[1].cursor()
    try:
        yield cursor
    finally:
        cursor.close()


def _close_shared() -> None:
    """Before this process forks: close the database, so the child does not inherit a live
    one (DuckDB's threads and locks do not survive a fork; a child could hang opening its
    own). The next read or write opens it again."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is not None and _SHARED[0] == os.getpid():
            _SHARED[1].close()
        _SHARED = None


os.register_at_fork(before=_close_shared)


def _scan(paths: list[Path]) -> str:
    listed = ", ".join(f"'{_quoted(p)}'" for p in paths)
    return f"read_parquet([{listed}], union_by_name = true)"


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")


def _empty_select(declared: Table) -> str:
    columns = ", ".join(f'CAST(NULL AS {c.type}) AS "{c.name}"' for c in declared.columns)
    return f"SELECT {columns} LIMIT 0"


def _empty(declared: Table) -> pd.DataFrame:
    with _cursor() as con:
        return con.execute(_empty_select(declared)).df()


def _store_error(error: OSError, target: Path) -> StoreError:
    if error.errno == errno.ENOSPC:
        return StoreError(
            f"no space left on device (ENOSPC) writing {target}; the file was not replaced and "
            "every earlier result is intact. Fix: free space on that filesystem or point "
            "results_path at another one, then rerun the step"
        )
    return StoreError(f"cannot write {target}: {error.strerror or error} (errno {error.errno})")


@dataclass(frozen=True)
class Migrated:
    runs: int
    tables: dict[str, int]
    """Rows copied per table."""
    dropped: dict[str, list[str]]
    """Columns of the old file no declaration knows (not copied), per table."""


def migrate_file(old: Path, store: ResultsStore) -> Migrated:
    """Copy every table of a single-file results store (``.t2s/results.duckdb``, schema
    ``eval``) into the folder store: each run's rows into its own folder. The old file is
    only read, so a failed migration can simply be run again."""
    if not old.is_file():
        raise StoreError(f"{old} is not a results file; nothing to migrate")
    copied: dict[str, int] = {}
    dropped: dict[str, list[str]] = {}
    run_ids: set[str] = set()
    with duckdb.connect(str(old), read_only=True) as con:
        names = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = ?",
                [SCHEMA],
            ).fetchall()
        ]
        for name in sorted(names):
            if name not in TABLES:
                dropped[name] = ["(whole table: not declared)"]
                continue
            declared = TABLES[name]
            data = con.execute(f'SELECT * FROM {SCHEMA}."{name}"').df()
            unknown = [c for c in data.columns if c not in declared.names]
            if unknown:
                dropped[name] = unknown
            data = data[[c for c in data.columns if c in declared.names]]
            if declared.scope == "run":
                if "run_id" not in data and "run_b" in data:  # comparisons were shared tables
                    data = data.assign(run_id=data["run_b"])
                for run_id, rows in data.groupby("run_id", sort=True):
                    store.replace_run(name, str(run_id), rows.drop(columns="run_id"))
                    run_ids.add(str(run_id))
            else:
                store.append(name, data)
            copied[name] = len(data)
    return Migrated(len(run_ids), copied, dropped)
