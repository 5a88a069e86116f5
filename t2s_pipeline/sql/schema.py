"""The live schema of a database: ``{schema: {table: {column: type}}}`` plus its dialect.

Qualification needs it to expand ``*`` and to attach every column to its table, so it is read
from the database the queries run against rather than written by hand.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import duckdb
from sqlglot.schema import MappingSchema

from t2s_pipeline.cases import Case, Domain
from t2s_pipeline.errors import ExecutionError, SqlAnalysisError
from t2s_pipeline.execution.postgres_engine import connect_error, mask_password
from t2s_pipeline.sql.names import fold_catalog_name

Columns = Mapping[str, str]
Tables = Mapping[str, Mapping[str, Columns]]

# Where an engine looks for a table written without a schema, when nothing else is said.
DEFAULT_SEARCH_PATH: Mapping[str, tuple[str, ...]] = {
    "duckdb": ("main",),
    "postgres": ("public",),
    "sqlite": ("main",),
}

_SYSTEM_SCHEMAS = frozenset({"information_schema", "pg_catalog"})


@dataclass(frozen=True)
class Schema:
    """Tables and columns of one database, names exactly as its catalog spells them.

    >>> schema = Schema({"sales": {"Orders": {"id": "INTEGER"}}}, "duckdb")
    >>> schema.resolve_schema_name("orders")
    'sales'
    """

    tables: Tables = field(hash=False)
    dialect: str
    search_path: tuple[str, ...] = ()

    @cached_property
    def folded(self) -> dict[str, dict[str, dict[str, str]]]:
        """The same mapping with every name folded by the dialect's rules."""
        fold = self._fold
        return {
            fold(db): {
                fold(table): {fold(column): kind for column, kind in columns.items()}
                for table, columns in tables.items()
            }
            for db, tables in self.tables.items()
        }

    def mapping_schema(self) -> MappingSchema:
        """A fresh sqlglot schema for one qualification (names already folded).

        Fresh because sqlglot caches lookups keyed by table nodes, and a cache shared across
        thousands of queries makes every lookup slower.
        """
        mapping: dict[str, object] = dict(self.folded)
        return MappingSchema(mapping, dialect=self.dialect, normalize=False)

    def resolve_schema_name(self, table: str) -> str | None:
        """The schema an unqualified, folded table name belongs to, or None if unknown.

        The search path wins; otherwise a name found in exactly one schema is taken, because a
        harness that does not know the session's search path should still attribute it.
        """
        owners = [db for db, tables in self.folded.items() if table in tables]
        path = self.search_path or DEFAULT_SEARCH_PATH.get(self.dialect, ())
        for db in (self._fold(name) for name in path):
            if db in owners:
                return db
        return owners[0] if len(owners) == 1 else None

    def has_table(self, db: str, table: str) -> bool:
        """Whether the folded ``db.table`` exists in this schema."""
        return table in self.folded.get(db, {})

    def column_type(self, db: str, table: str, column: str) -> str | None:
        """The declared type of the folded ``db.table.column``, or None if unknown.

        >>> schema = Schema({"sales": {"Orders": {"Day": "DATE"}}}, "duckdb")
        >>> schema.column_type("sales", "orders", "day")
        'DATE'
        """
        return self.folded.get(db, {}).get(table, {}).get(column)

    def _fold(self, name: str) -> str:
        return fold_catalog_name(name, self.dialect)


def read_schema(conn: Any, engine: str, schemas: Sequence[str] | None = None) -> Schema:
    """Read the live schema through a DB-API connection, keeping column order.

    ``engine`` is ``duckdb``, ``postgres`` or ``sqlite``; ``schemas`` keeps only those schemas.

    >>> import sqlite3
    >>> conn = sqlite3.connect(":memory:")
    >>> _ = conn.execute("CREATE TABLE t (b TEXT, a INTEGER)")
    >>> dict(read_schema(conn, "sqlite").tables["main"]["t"])
    {'b': 'TEXT', 'a': 'INTEGER'}
    """
    reader = _READERS.get(engine)
    if reader is None:
        raise SqlAnalysisError(
            f"cannot read a schema for engine {engine!r}: use one of {sorted(_READERS)}"
        )
    rows = reader(conn)
    wanted = set(schemas) if schemas is not None else None
    tables: dict[str, dict[str, dict[str, str]]] = {}
    for db, table, column, kind in rows:
        if wanted is None or db in wanted:
            tables.setdefault(db, {}).setdefault(table, {})[column] = kind
    return Schema(tables, engine)


Row = tuple[str, str, str, str]

# Both engines expose the standard view; ordinal_position keeps the declared column order.
_INFORMATION_SCHEMA_COLUMNS = """
    SELECT table_schema, table_name, column_name, data_type
    FROM information_schema.columns
    WHERE table_catalog = current_database()
    ORDER BY table_schema, table_name, ordinal_position
"""


def _read_information_schema(conn: Any) -> list[Row]:
    cursor = conn.cursor()
    try:
        cursor.execute(_INFORMATION_SCHEMA_COLUMNS)
        rows = cursor.fetchall()
    finally:
        cursor.close()
    return [
        (str(db), str(table), str(column), str(kind))
        for db, table, column, kind in rows
        if db not in _SYSTEM_SCHEMAS
    ]


def _read_sqlite(conn: Any) -> list[Row]:
    names = conn.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
        "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
    ).fetchall()
    rows: list[Row] = []
    for (table,) in names:
        columns = conn.execute(
            "SELECT name, type FROM pragma_table_info(?) ORDER BY cid", (table,)
        ).fetchall()
        rows.extend(("main", table, column, kind) for column, kind in columns)
    return rows


_READERS: Mapping[str, Callable[[Any], list[Row]]] = {
    "duckdb": _read_information_schema,
    "postgres": _read_information_schema,
    "sqlite": _read_sqlite,
}


@contextmanager
def catalog_connection(target: str, engine: str) -> Iterator[Any]:
    """A read-only connection used only to read the catalogue (never to run case SQL).

    Raises ExecutionError, naming the database (password masked) and the fix, when it cannot
    be opened.
    """
    if engine != "postgres" and not Path(target).exists():
        raise ExecutionError(f"database {target} does not exist; build it with `t2s demo build`")
    try:
        conn = _open_catalog(target, engine)
    except Exception as error:  # each driver has its own errors; all mean "cannot open it"
        if engine == "postgres":
            shown, fix = (
                mask_password(target),
                (
                    "check the URL (postgresql://user:password@host:port/database) and that the "
                    "server is running"
                ),
            )
        else:
            shown, fix = target, f"give a {engine} database file (`t2s demo build` makes one)"
        raise ExecutionError(
            f"cannot open {shown}: {connect_error(target, error)}. Fix: {fix}"
        ) from error
    with closing(conn):
        yield conn


def _open_catalog(target: str, engine: str) -> Any:
    if engine == "postgres":
        import psycopg2  # lazy: only a PostgreSQL domain needs the driver loaded

        conn = psycopg2.connect(target)
        conn.set_session(readonly=True)
        return conn
    if engine == "sqlite":
        return sqlite3.connect(f"file:{target}?mode=ro", uri=True)
    return duckdb.connect(target, read_only=True)


def live_schema(target: str, engine: str, schemas: Sequence[str] | None = None) -> Schema:
    """The live schema of a database (only ``schemas`` when given)."""
    with catalog_connection(target, engine) as conn:
        return read_schema(conn, engine, None if schemas is None else list(schemas))


def domain_schema(domain: Domain, case: Case | None = None) -> Schema:
    """The live schema of the domain's allowlisted schemas."""
    return live_schema(domain.database_for(case), domain.engine, domain.allowed_schemas)


def domain_schemas(cases: Sequence[Case], domain: Domain) -> dict[str | None, Schema]:
    """The live schema of each database the cases use, read once per database."""
    first_case: dict[str | None, Case] = {}
    for case in cases:
        first_case.setdefault(case.db_id, case)
    return {db_id: domain_schema(domain, case) for db_id, case in first_case.items()}
