"""SQLite: a read-only URI, an authorizer that allows reads only, a progress-handler timer.

With the database layer on, the file is opened ``mode=ro``; ATTACH is impossible (the attached
database limit is 0) and an authorizer allows only SELECT, reads of tables in allowlisted
schemas (SQLite has one, ``main``), non-denylisted functions and recursive CTEs; everything else
(writes, DDL, PRAGMA, ATTACH, transactions) is denied while the statement is compiled.
Strings and blobs are capped in length. The driver runs one statement at a time.

With the database layer off, the file is opened read-write with none of that. The progress
handler that ends a statement at its deadline is on either way.
"""

from __future__ import annotations

import sqlite3
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

from t2s_pipeline.errors import ExecutionError
from t2s_pipeline.execution.engine import (
    SQLITE,
    DatabaseRefusal,
    Fetched,
    Prepared,
    QueryFailed,
    first_line,
)
from t2s_pipeline.execution.guard import DATABASE, Guard
from t2s_pipeline.execution.limits import fetch_capped
from t2s_pipeline.execution.policy import fold_schema_names, is_denied_function

MAX_LENGTH = 50_000_000
"""Longest string or blob a guarded statement may build, in bytes."""

_PROGRESS_STEPS = 10_000
_ALLOWED_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_RECURSIVE})
_REFUSED_MESSAGES = (
    "not authorized",
    "authorization denied",
    "readonly database",
    "string or blob too big",
    "one statement at a time",
    "too many attached databases",
)


class SQLiteBackend:
    """A SQLite database opened for guarded statements."""

    engine = SQLITE

    def __init__(self, target: str, guard: Guard) -> None:
        self.guard = guard
        self.hardened = DATABASE in guard.layers
        path = Path(target)
        if not path.is_file():
            raise ExecutionError(f"SQLite database {path} does not exist")
        self._con = _connect(path, self.hardened)
        self._deadline = 0.0
        self._con.set_progress_handler(self._past_deadline, _PROGRESS_STEPS)
        if self.hardened:
            allowed = fold_schema_names(guard.allowed_schemas, SQLITE)
            self._con.set_authorizer(_authorizer(allowed))

    def prepare(self, sql: str) -> Prepared:
        """Nothing to read ahead: the database reads the text when it runs."""
        return Prepared(sql)

    def release(self, prepared: Prepared) -> None:
        """Nothing to free."""

    def fetch(self, prepared: Prepared) -> Fetched:
        """Run one statement within the time and row bounds."""
        self._deadline = time.monotonic() + self.guard.timeout_s
        cursor = self._con.cursor()
        try:
            cursor.execute(prepared.statement)
            columns = tuple(str(d[0]) for d in cursor.description or ())
            rows, truncated = fetch_capped(cursor.fetchmany, cursor.fetchall, self.guard.fetch_cap)
            return Fetched(columns, rows, truncated)
        except sqlite3.Error as error:
            raise self._classify(error) from error
        finally:
            cursor.close()

    def close(self) -> None:
        """Close the connection."""
        self._con.close()

    def _past_deadline(self) -> int:
        return 1 if time.monotonic() > self._deadline else 0

    def _classify(self, error: sqlite3.Error) -> Exception:
        message = first_line(str(error))
        if "interrupted" in message and time.monotonic() > self._deadline:
            return DatabaseRefusal(f"timed out after {self.guard.timeout_s:g} s", timed_out=True)
        if any(part in message for part in _REFUSED_MESSAGES):
            return DatabaseRefusal(message)
        return QueryFailed(message)


def _connect(path: Path, hardened: bool) -> sqlite3.Connection:
    try:
        if not hardened:
            return sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        uri = f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro"
        con = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        con.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_LENGTH)
        return con
    except sqlite3.Error as error:
        raise ExecutionError(f"cannot open SQLite database {path}: {error}") from error


Authorizer = Callable[[int, str | None, str | None, str | None, str | None], int]


def _authorizer(allowed_schemas: frozenset[str]) -> Authorizer:
    """The compile-time check SQLite calls for every action a statement would take."""

    def authorize(
        action: int, arg1: str | None, arg2: str | None, database: str | None, source: str | None
    ) -> int:
        if action in _ALLOWED_ACTIONS:
            return sqlite3.SQLITE_OK
        # count(*) reads report no database; with ATTACH impossible and no temporary objects,
        # the only database holding tables is main.
        if action == sqlite3.SQLITE_READ and (database or "main").lower() in allowed_schemas:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION and not is_denied_function(arg2 or ""):
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    return authorize
