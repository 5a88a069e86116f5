"""The DuckDB results store: one table per asset in schema ``eval``, rows keyed by ``run_id``.

Re-materialising a run replaces exactly that run's rows, inside one transaction, matching
columns by name (never by position), so a failure midway leaves the previous rows intact.
DuckDB admits one writing process per file: every write opens, writes and closes quickly, and
waits for the lock with a bounded retry rather than racing it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

SCHEMA = "eval"
_LOCK_WAIT_S = 60.0


class ResultsStore:
    """Read and write the results of evaluation runs.

    >>> store = ResultsStore(Path("/tmp/r.duckdb"))  # doctest: +SKIP
    >>> store.replace_run("output_scores", "baseline-1a2b3c4d", frame)  # doctest: +SKIP
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    @contextmanager
    def connect(self, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection, retried while another process holds the write lock."""
        if read_only and not self.path.exists():
            read_only = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + _LOCK_WAIT_S
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=read_only)
                break
            except duckdb.IOException as error:
                if "lock" not in str(error).lower() or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        try:
            if not read_only:
                con.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
            yield con
        finally:
            con.close()

    def replace_run(self, table: str, run_id: str, frame: pd.DataFrame) -> int:
        """Replace ``run_id``'s rows of ``table`` with ``frame`` in one transaction."""
        frame = frame.assign(run_id=run_id) if "run_id" not in frame else frame
        return self._replace(table, frame, "run_id = ?", [run_id])

    def replace_all(self, table: str, frame: pd.DataFrame) -> int:
        """Replace every row of an unpartitioned table."""
        return self._replace(table, frame, "TRUE", [])

    def _replace(self, table: str, frame: pd.DataFrame, where: str, params: Sequence[Any]) -> int:
        qualified = f"{SCHEMA}.{table}"
        frame = _typed(frame)
        with self.connect() as con:
            con.register("incoming", frame)
            try:
                con.execute("BEGIN TRANSACTION")
                con.execute(
                    f"CREATE TABLE IF NOT EXISTS {qualified} AS SELECT * FROM incoming LIMIT 0"
                )
                self._add_missing_columns(con, table, frame)
                con.execute(f"DELETE FROM {qualified} WHERE {where}", list(params))
                if len(frame):
                    con.execute(f"INSERT INTO {qualified} BY NAME SELECT * FROM incoming")
                con.execute("COMMIT")
            except Exception:
                con.execute("ROLLBACK")
                raise
            finally:
                con.unregister("incoming")
        return len(frame)

    def _add_missing_columns(
        self, con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame
    ) -> None:
        rows = con.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = ? AND table_name = ?",
            [SCHEMA, table],
        ).fetchall()
        existing = {r[0] for r in rows}
        for column in frame.columns:
            if column not in existing:
                type_ = con.execute(f'SELECT typeof("{column}") FROM incoming LIMIT 1').fetchall()
                sql_type = type_[0][0] if type_ and type_[0][0] != "NULL" else "VARCHAR"
                con.execute(f'ALTER TABLE {SCHEMA}.{table} ADD COLUMN "{column}" {sql_type}')

    def read(self, table: str, run_id: str | None = None) -> pd.DataFrame:
        """Rows of one table, optionally of one run; an empty frame when it does not exist."""
        if not self.has_table(table):
            return pd.DataFrame()
        with self.connect(read_only=True) as con:
            if run_id is None:
                return con.execute(f"SELECT * FROM {SCHEMA}.{table}").df()
            return con.execute(f"SELECT * FROM {SCHEMA}.{table} WHERE run_id = ?", [run_id]).df()

    def has_table(self, table: str) -> bool:
        if not self.path.exists():
            return False
        with self.connect(read_only=True) as con:
            rows = con.execute(
                "SELECT 1 FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
                [SCHEMA, table],
            ).fetchall()
        return bool(rows)

    def run_ids(self) -> list[str]:
        """Every run recorded in the ``runs`` table, oldest first."""
        runs = self.read("runs")
        if runs.empty:
            return []
        return list(runs.sort_values("started_at")["run_id"])


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """Give all-NULL object columns a text type, so DuckDB never creates a NULL-typed column."""
    untyped = [c for c in frame.columns if frame[c].dtype == object and frame[c].isna().all()]
    return frame.astype({c: "string" for c in untyped}) if untyped else frame
