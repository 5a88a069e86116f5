"""The statement filter on SQLite: SQLite's own compilation, under an authorizer.

SQLite has no parse tree to read, but it compiles a statement before running it and, while
compiling, asks an authorizer about every table and column it would read and every function it
would call. The filter compiles ``EXPLAIN <statement>`` (which builds the program and runs
nothing) on its own connection holding the target's schema only, and the authorizer refuses:

- anything but one statement whose first action is a ``SELECT``; any write, DDL, PRAGMA,
  ATTACH or transaction control while it compiles;
- a function not on the SQLite allowlist, a table-valued function other than the JSON ones;
- a read of a table or view outside the table allowlist (when the catalogue has one), a
  schema table (``sqlite_master``), or any database but ``main``. A view's own reads are
  asked about too, so a view in the file that reads a sensitive table is refused as well.

SQLite builds an eponymous virtual table (``json_each``) by updating ``sqlite_master`` and
reading one rowid of it on first use; that internal sequence is allowed, nothing else is.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from t2s_pipeline.execution.allowlists import TABLE_FUNCTIONS, allowed_functions
from t2s_pipeline.execution.catalogue import Catalogue
from t2s_pipeline.execution.engine import SQLITE, first_line
from t2s_pipeline.execution.read_duckdb import first_keyword
from t2s_pipeline.execution.reading import Refused

_SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master"})
_local = threading.local()


def read_sqlite(
    sql: str, allowed: frozenset[str], catalogue: Catalogue | None, schema_sql: tuple[str, ...] = ()
) -> None:
    """Raise :class:`Refused` unless ``sql`` compiles as one query reading allowed tables only.

    ``schema_sql`` is the target's ``CREATE`` statements (see :func:`schema_of`): the statement
    is compiled against them, in memory, never against the data.

    >>> schema = ("CREATE TABLE orders (order_id INTEGER, status_cd TEXT)",)
    >>> read_sqlite("SELECT count(*) FROM orders WHERE status_cd = 'x'", frozenset({"main"}), None, schema)
    >>> read_sqlite("SELECT load_extension('x')", frozenset({"main"}), None, schema)
    Traceback (most recent call last):
    ...
    t2s_pipeline.execution.reading.Refused: function load_extension is not on the SQLite allowlist
    """
    if "main" not in allowed:
        raise Refused("SQLite serves the main database only; allowlist 'main'")
    connection = _connection(schema_sql)
    judge = Judge(catalogue.allowed_tables if catalogue else None)
    connection.set_authorizer(judge)
    try:
        connection.execute(f"EXPLAIN {sql}")
    except (sqlite3.Warning, sqlite3.ProgrammingError) as error:  # several statements, or NUL
        raise Refused(f"SQLite will not compile it: {first_line(str(error))}") from error
    except sqlite3.Error as error:
        if judge.refusal is not None:
            raise Refused(judge.refusal) from error
        raise Refused(f"SQLite cannot compile the statement: {first_line(str(error))}") from error
    finally:
        connection.set_authorizer(None)
    if judge.refusal is not None:
        raise Refused(judge.refusal)
    if not judge.selects:
        raise Refused(f"only read-only queries are allowed, not {first_keyword(sql) or 'this'}")


def schema_of(path: Path) -> tuple[str, ...]:
    """The ``CREATE`` statements of a SQLite file's tables and views, read once at open."""
    uri = f"file:{path.resolve()}?mode=ro"
    with sqlite3.connect(uri, uri=True) as connection:
        rows = connection.execute(
            "SELECT sql FROM sqlite_master WHERE type IN ('table', 'view') AND sql IS NOT NULL "
            "AND name NOT LIKE 'sqlite_%' ORDER BY type = 'view', rowid"
        ).fetchall()
    return tuple(str(row[0]) for row in rows)


def _connection(schema_sql: tuple[str, ...]) -> sqlite3.Connection:
    """An in-memory database holding ``schema_sql``, one per thread and schema."""
    cache: dict[tuple[str, ...], sqlite3.Connection] = getattr(_local, "cache", None) or {}
    _local.cache = cache
    connection = cache.get(schema_sql)
    if connection is None:
        connection = sqlite3.connect(":memory:", isolation_level=None)
        for statement in schema_sql:
            connection.execute(statement)
        connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        if len(cache) > 8:
            cache.clear()
        cache[schema_sql] = connection
    return connection


class Judge:
    """The authorizer: records the first refusal; every other action of a SELECT is allowed.

    One judge serves one statement (it remembers whether the statement began as a SELECT);
    the SQLite database layer installs a fresh one before each statement, the filter too.
    """

    def __init__(self, allowed_tables: frozenset[str] | None) -> None:
        self.allowed_tables = allowed_tables
        self.functions = allowed_functions(SQLITE)
        self.refusal: str | None = None
        self.selects = False
        self._actions = 0
        self._building = False

    def __call__(
        self,
        action: int,
        arg1: str | None,
        arg2: str | None,
        database: str | None,
        source: str | None,
    ) -> int:
        self._actions += 1
        reason = self._reason(action, arg1, arg2, database)
        if reason is None:
            return sqlite3.SQLITE_OK
        if self.refusal is None:
            self.refusal = reason
        return sqlite3.SQLITE_DENY

    def _reason(
        self, action: int, arg1: str | None, arg2: str | None, database: str | None
    ) -> str | None:
        if action == sqlite3.SQLITE_SELECT:
            self.selects = self.selects or self._actions == 1
            return None
        if action == sqlite3.SQLITE_RECURSIVE:
            return None
        if action == sqlite3.SQLITE_FUNCTION:
            name = (arg2 or "").lower()
            return (
                None
                if name in self.functions
                else f"function {name} is not on the SQLite allowlist"
            )
        if action == sqlite3.SQLITE_READ:
            if self._building and (arg1 or "") in _SCHEMA_TABLES and arg2 == "ROWID":
                self._building = False  # the last step of building the virtual table
                return None
            return self._read(arg1 or "", database)
        if action == sqlite3.SQLITE_UPDATE and (arg1 or "") in _SCHEMA_TABLES and self.selects:
            self._building = True  # building an eponymous virtual table (json_each) on first use
            return None
        shown = _ACTION_NAMES.get(action, f"action {action}")
        return (
            f"{shown} ({arg1}) is not allowed in a query"
            if arg1
            else f"{shown} is not allowed in a query"
        )

    def _read(self, table: str, database: str | None) -> str | None:
        name = table.lower()
        if (database or "main").lower() != "main":
            return f"database {database} is not allowed (main only)"
        if name in TABLE_FUNCTIONS[SQLITE]:
            return None
        if name in _SCHEMA_TABLES or name.startswith(("pragma_", "sqlite_")):
            return f"{name} is a schema table and is not allowed"
        if self.allowed_tables is not None and name not in self.allowed_tables:
            return f"table {name} is outside the allowlisted tables {sorted(self.allowed_tables)}"
        return None


_ACTIONS = (
    "CREATE_INDEX", "CREATE_TABLE", "CREATE_TEMP_INDEX", "CREATE_TEMP_TABLE",
    "CREATE_TEMP_TRIGGER", "CREATE_TEMP_VIEW", "CREATE_TRIGGER", "CREATE_VIEW", "DELETE",
    "DROP_INDEX", "DROP_TABLE", "DROP_TEMP_INDEX", "DROP_TEMP_TABLE", "DROP_TEMP_TRIGGER",
    "DROP_TEMP_VIEW", "DROP_TRIGGER", "DROP_VIEW", "INSERT", "PRAGMA", "READ", "SELECT",
    "TRANSACTION", "UPDATE", "ATTACH", "DETACH", "ALTER_TABLE", "REINDEX", "ANALYZE",
    "CREATE_VTABLE", "DROP_VTABLE", "FUNCTION", "SAVEPOINT", "RECURSIVE",
)  # fmt: skip
_ACTION_NAMES = {
    getattr(sqlite3, f"SQLITE_{name}"): name.replace("_", " ")
    for name in _ACTIONS
    if hasattr(sqlite3, f"SQLITE_{name}")
}
