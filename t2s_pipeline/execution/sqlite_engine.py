"""SQLite: a read-only URI, an authorizer that allows reads only, a progress-handler timer.

With the database layer on, the file is opened ``mode=ro``; ATTACH is impossible (the attached
database limit is 0) and an authorizer (the filter's :class:`~.read_sqlite.Judge`) allows only
a SELECT, reads of ``main`` tables on the table allowlist, allowlisted functions and recursive
CTEs; everything else (writes, DDL, PRAGMA, ATTACH, transactions, schema tables) is denied while
the statement is compiled. SQLite has one schema per file: with the guard's ``allowed_tables``
(domain.yaml) only those tables and views are read, a view's own reads included; without it
every table of ``main`` is, so the file must hold allowed tables only. Strings and blobs are capped in length. The driver runs one
statement at a time.

With the database layer off, the file is opened read-write with none of that. The progress
handler that ends a statement at its deadline is on either way.
"""

from __future__ import annotations

import sqlite3
import time
import urllib.parse
from pathlib import Path

from t2s_pipeline.errors import ExecutionError
from t2s_pipeline.execution.catalogue import Catalogue
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
from t2s_pipeline.execution.read_sqlite import Judge, schema_of

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
        self.schema_sql = _schema(path)
        tables = guard.allowed_tables
        self.catalogue = Catalogue(
            allowed_tables=frozenset(t.lower() for t in tables) if tables is not None else None
        )
        self._con = _connect(path, self.hardened)
        self._deadline = 0.0
        self._bounded: BoundedPrintf | None = None
        if self.hardened:
            self._bounded = BoundedPrintf()
            for name in ("printf", "format"):
                self._con.create_function(name, -1, self._bounded, deterministic=True)
        self._con.set_progress_handler(self._past_deadline, _PROGRESS_STEPS)

    def prepare(self, sql: str) -> Prepared:
        """Nothing to read ahead: the database reads the text when it runs."""
        return Prepared(sql)

    def release(self, prepared: Prepared) -> None:
        """Nothing to free."""

    def fetch(self, prepared: Prepared) -> Fetched:
        """Run one statement within the time and row bounds."""
        self._deadline = time.monotonic() + self.guard.timeout_s
        if self.hardened:
            self._con.set_authorizer(Judge(self.catalogue.allowed_tables))
        cursor = self._con.cursor()
        try:
            cursor.execute(prepared.statement)
            if self.hardened and cursor.description is None:
                raise DatabaseRefusal("SQLite compiled no query from the text (only comments?)")
            columns = tuple(str(d[0]) for d in cursor.description or ())
            rows, truncated = fetch_capped(cursor.fetchmany, cursor.fetchall, self.guard.fetch_cap)
            if time.monotonic() > self._deadline:
                # The progress handler runs between VM steps, not inside one: a single printf or
                # replace() can run past the deadline and the statement end before it is asked.
                # (SQLite 3.40's printf returns NULL rather than "too big" at the length limit.)
                raise DatabaseRefusal(f"timed out after {self.guard.timeout_s:g} s", timed_out=True)
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
        if self._bounded is not None and self._bounded.refusal is not None:
            reason, self._bounded.refusal = self._bounded.refusal, None
            return DatabaseRefusal(reason)
        if "interrupted" in message and time.monotonic() > self._deadline:
            return DatabaseRefusal(f"timed out after {self.guard.timeout_s:g} s", timed_out=True)
        if any(part in message for part in _REFUSED_MESSAGES):
            return DatabaseRefusal(message)
        return QueryFailed(message)


class BoundedPrintf:
    """``printf``/``format`` for the database layer: SQLite's own, refusing a width or
    precision above the length limit before it is built.

    One printf is one VM step, so neither the progress handler nor the length limit stops it
    early: ``printf('%.*c', 900000000, 'x')`` spent 1.9 s building a string only to return
    NULL, a "ran" that only a busy machine turned into a timeout. The formatting itself is
    SQLite's, on a private in-memory connection with the same length limit.

    >>> BoundedPrintf()("%5.1f|%s", 3.14159, "x")
    '  3.1|x'
    >>> BoundedPrintf()("%.*c", 900_000_000, "x")
    Traceback (most recent call last):
    ValueError: printf asks for a width or precision of 900,000,000; the length limit is 50,000,000
    """

    def __init__(self) -> None:
        self._inner = sqlite3.connect(":memory:", check_same_thread=False)
        self._inner.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_LENGTH)
        self.refusal: str | None = None

    def __call__(self, fmt: object = None, *args: object) -> str | None:
        if not isinstance(fmt, str):
            fmt = None if fmt is None else str(fmt)
        widest = max(_format_numbers(fmt or "", args), default=0)
        if widest > MAX_LENGTH:
            self.refusal = (
                f"printf asks for a width or precision of {widest:,}; "
                f"the length limit is {MAX_LENGTH:,}"
            )
            raise ValueError(self.refusal)
        marks = ", ".join("?" for _ in range(len(args) + 1))
        row = self._inner.execute(f"SELECT printf({marks})", (fmt, *args)).fetchone()
        return None if row[0] is None else str(row[0])


def _format_numbers(fmt: str, args: tuple[object, ...]) -> list[int]:
    """Every width and precision a printf format asks for: digits written in the format, and
    the arguments a ``*`` takes (any numeric argument, when the format has a ``*``)."""
    found: list[int] = []
    digits = ""
    for char in fmt:
        if char.isdigit():
            digits += char
            continue
        if digits:
            found.append(int(digits))
            digits = ""
    if digits:
        found.append(int(digits))
    if "*" in fmt:
        for arg in args:
            if isinstance(arg, int | float) and not isinstance(arg, bool):
                found.append(abs(int(arg)) if abs(arg) < 1e18 else 10**18)
    return found


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


def _schema(path: Path) -> tuple[str, ...]:
    try:
        return schema_of(path)
    except sqlite3.Error as error:
        raise ExecutionError(
            f"cannot read the schema of SQLite database {path}: {error}"
        ) from error
