"""DuckDB: the serving snapshot opened read-only, locked down, one cursor per statement.

With the database layer on, the connection opens the serving snapshot (allowlisted schemas
only) with ``read_only=True``, external access off (no files, network, ATTACH, INSTALL or
LOAD), extension autoloading off, Python replacement scans off, a memory cap, and the
configuration locked so no statement can undo any of it. DuckDB's own parser must see exactly
one SELECT statement: anything else (SET, USE, CALL, CREATE TEMP ...) is refused before it runs,
and its bound plan must read only data (:mod:`~t2s_pipeline.execution.duckdb_plan`: no catalogue,
settings or plan functions, which DuckDB, having no privileges, would serve to anyone).
Each statement runs on a fresh cursor, so temporary objects and session settings die with it;
reading the statement and taking the cursor (``prepare``) may happen on another thread while an
earlier statement runs. The timer calls ``interrupt()`` at the deadline.

With the database layer off, the source file is opened as it is (read-write, defaults): what
the statement filter alone lets through reaches it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from t2s_pipeline.errors import ExecutionError
from t2s_pipeline.execution.duckdb_catalogue import read_catalogue
from t2s_pipeline.execution.duckdb_plan import check_plan
from t2s_pipeline.execution.duckdb_snapshot import serving_snapshot
from t2s_pipeline.execution.engine import (
    DUCKDB,
    DatabaseRefusal,
    Fetched,
    Prepared,
    QueryFailed,
    first_line,
)
from t2s_pipeline.execution.guard import DATABASE, Guard
from t2s_pipeline.execution.limits import fetch_capped
from t2s_pipeline.execution.policy import fold_schema_names
from t2s_pipeline.execution.read_duckdb import MULTI_HINT
from t2s_pipeline.execution.watchdog import Watchdog

MEMORY_LIMIT = "2GB"

_HARDENED: dict[str, Any] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "python_enable_replacements": False,
    "memory_limit": MEMORY_LIMIT,
    "lock_configuration": True,
}
_REFUSED_ERRORS = (duckdb.PermissionException, duckdb.OutOfMemoryException)


class DuckDBBackend:
    """A DuckDB database opened for guarded statements."""

    engine = DUCKDB

    def __init__(self, target: str, guard: Guard) -> None:
        self.guard = guard
        self.hardened = DATABASE in guard.layers
        source = Path(target)
        if not source.is_file():
            raise ExecutionError(f"DuckDB database {source} does not exist; build it first")
        path = serving_snapshot(source, guard.allowed_schemas) if self.hardened else source
        self.path = path
        self._con = _connect(path, self.hardened)
        self.catalogue = read_catalogue(self._con, fold_schema_names(guard.allowed_schemas, DUCKDB))
        self._watchdog = Watchdog()

    def prepare(self, sql: str) -> Prepared:
        """DuckDB's own reading of ``sql`` (hardened: exactly one SELECT) and a fresh cursor."""
        if not self.hardened:
            return Prepared(sql, self._con.cursor())
        statement = _single_select(self._con, sql)
        cursor = self._con.cursor()
        try:
            check_plan(cursor, sql)
        except BaseException:
            cursor.close()
            raise
        return Prepared(statement, cursor)

    def fetch(self, prepared: Prepared) -> Fetched:
        """Run a prepared statement on its own cursor within the time and row bounds."""
        cursor = prepared.cursor
        try:
            with self._watchdog.armed(self.guard.timeout_s, cursor.interrupt) as dog:
                try:
                    cursor.execute(prepared.statement)
                    columns = tuple(str(d[0]) for d in cursor.description or ())
                    rows, truncated = fetch_capped(
                        cursor.fetchmany, cursor.fetchall, self.guard.fetch_cap
                    )
                    return Fetched(columns, rows, truncated)
                except duckdb.Error as error:
                    raise _classify(error, dog.fired, self.guard.timeout_s) from error
        finally:
            cursor.close()

    def release(self, prepared: Prepared) -> None:
        """Close the cursor of a statement that will not run."""
        prepared.cursor.close()

    def close(self) -> None:
        """Close the connection and stop the watchdog."""
        self._watchdog.close()
        self._con.close()


def _connect(path: Path, hardened: bool) -> duckdb.DuckDBPyConnection:
    try:
        if hardened:
            return duckdb.connect(str(path), read_only=True, config=dict(_HARDENED))
        return duckdb.connect(str(path))
    except duckdb.Error as error:
        raise ExecutionError(f"cannot open DuckDB database {path}: {error}") from error


def _single_select(connection: duckdb.DuckDBPyConnection, sql: str) -> Any:
    """DuckDB's own reading of the text: exactly one statement, of type SELECT."""
    try:
        statements = connection.extract_statements(sql)
    except duckdb.Error as error:
        raise QueryFailed(first_line(str(error))) from error
    if len(statements) != 1:
        raise DatabaseRefusal(f"DuckDB read {len(statements)} statements; exactly one is served")
    kind = statements[0].type
    if kind == duckdb.StatementType.MULTI:
        raise DatabaseRefusal(f"DuckDB read {MULTI_HINT}")
    if kind != duckdb.StatementType.SELECT:
        raise DatabaseRefusal(f"DuckDB read a {kind.name} statement; only SELECT is served")
    return statements[0]


def _classify(error: duckdb.Error, fired: bool, timeout_s: float) -> Exception:
    message = first_line(str(error))
    if fired or isinstance(error, duckdb.InterruptException):
        return DatabaseRefusal(f"timed out after {timeout_s:g} s", timed_out=True)
    if isinstance(error, _REFUSED_ERRORS) or "read-only mode" in message:
        return DatabaseRefusal(message)
    if "configuration has been locked" in message:
        return DatabaseRefusal(message)
    return QueryFailed(message)
