"""The live schema of a database: ``{schema: {table: {column: type}}}`` plus its dialect.

Qualification needs it to expand ``*`` and to attach every column to its table, so it is read
from the database the queries run against rather than written by hand.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from sqlglot.schema import MappingSchema

from t2s_pipeline.errors import SqlAnalysisError
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
