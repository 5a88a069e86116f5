"""What every engine module provides, and how the engine is picked from a target.

An engine module opens a :class:`Backend` for a target under a guard. ``prepare`` does what
the database layer can do before a statement runs (DuckDB reads it with its own parser and
takes a fresh cursor); ``fetch`` runs the prepared statement within the guard's bounds. Each
either returns or raises :class:`DatabaseRefusal` (the database layer said no, or the timer
fired) or :class:`QueryFailed` (an ordinary failure: syntax, a missing column). The executor
turns both into values; nothing else escapes.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from t2s_pipeline.execution.guard import DATABASE

DUCKDB = "duckdb"
POSTGRES = "postgres"
SQLITE = "sqlite"
MYSQL = "mysql"
"""MySQL and MariaDB (one wire protocol, one dialect as sqlglot reads it)."""
ENGINES: tuple[str, ...] = (DUCKDB, POSTGRES, SQLITE, MYSQL)
"""The built-in engines; plugins add more (:mod:`~t2s_pipeline.execution.registry`)."""
MYSQL_SCHEMES = ("mysql://", "mariadb://", "mysql+pymysql://")

_SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
_SQLITE_HEADER = b"SQLite format 3\x00"


@dataclass(frozen=True)
class Fetched:
    """Rows read from the database, at most the fetch cap, and whether more were there."""

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class Prepared:
    """A statement the database layer has read and may run: what the engine runs (the text,
    or DuckDB's own parsed statement) and, for DuckDB, the fresh cursor it runs on."""

    statement: Any
    cursor: Any = None


class DatabaseRefusal(Exception):
    """The database layer refused the statement (privileges, read-only, limits, timer).

    ``layer`` is ``filter`` when the refusal is the filter's second reading done on the server
    (MySQL: the statement as the server reads it reaches outside the allowlist).
    """

    def __init__(self, reason: str, timed_out: bool = False, layer: str = DATABASE) -> None:
        super().__init__(reason)
        self.reason = reason
        self.timed_out = timed_out
        self.layer = layer


class QueryFailed(Exception):
    """The statement ran and failed for an ordinary reason (not a guard)."""


class Backend(Protocol):
    """One open connection of one engine, hardened or not as the guard's layers say."""

    engine: str

    def prepare(self, sql: str) -> Prepared:
        """The database layer's reading of one statement, before anything runs.

        Safe to call on another thread while an earlier prepared statement runs; every
        prepared statement is either fetched or released, exactly once.
        """
        ...

    def fetch(self, prepared: Prepared) -> Fetched:
        """Run a prepared statement within the guard's bounds."""
        ...

    def release(self, prepared: Prepared) -> None:
        """Free a prepared statement that will not run."""
        ...

    def close(self) -> None:
        """Release the connection."""
        ...


def detect_engine(target: str) -> str:
    """The engine a built-in target names: a PostgreSQL or MySQL/MariaDB URL, a SQLite file,
    else a DuckDB file (plugins: :func:`~t2s_pipeline.execution.registry.engine_for`).

    >>> detect_engine("postgresql://u@h/db"), detect_engine("w.sqlite"), detect_engine("w.duckdb")
    ('postgres', 'sqlite', 'duckdb')
    >>> detect_engine("mariadb://reader@localhost:3306/sales")
    'mysql'
    """
    if target.startswith(("postgresql://", "postgres://")):
        return POSTGRES
    if target.startswith(MYSQL_SCHEMES):
        return MYSQL
    path = Path(target)
    if path.suffix.lower() in _SQLITE_SUFFIXES or _has_sqlite_header(path):
        return SQLITE
    return DUCKDB


def _has_sqlite_header(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(_SQLITE_HEADER)) == _SQLITE_HEADER
    except OSError:
        return False


def masked_url(url: str, scheme: str) -> str:
    """``url`` with its password replaced by ``***``, for messages; an unparseable one is
    shown as ``<scheme>://(a URL that cannot be parsed)`` (it may hold a password).

    >>> masked_url("mysql://u:secret@localhost:3306/sales", "mysql")
    'mysql://u:***@localhost:3306/sales'
    >>> masked_url("postgresql://u:secret@[bad", "postgresql")
    'postgresql://(a URL that cannot be parsed)'
    """
    try:
        parts = urllib.parse.urlsplit(url)
        password = parts.password
    except ValueError:
        return f"{scheme}://(a URL that cannot be parsed)"
    if password is None:
        return url
    netloc = parts.netloc.replace(f":{password}@", ":***@", 1)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def first_line(text: str) -> str:
    """The first non-empty line of a driver message (drivers append context lines).

    >>> first_line("Catalog Error: no table\\nLINE 1: ...")
    'Catalog Error: no table'
    """
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else text
