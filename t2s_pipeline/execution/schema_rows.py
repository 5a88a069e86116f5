"""How each built-in engine opens a database to read its catalogue, and reads its columns.

Qualification and retrieval need every ``(schema, table, column, type)`` of a database, read
live. These connections are read-only and never run case SQL (that goes through the guarded
executor). An engine plugin supplies the same two functions in its
:class:`~t2s_pipeline.execution.registry.EngineSpec`.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import duckdb
import psycopg2

from t2s_pipeline.demo.schema import META_SCHEMA
from t2s_pipeline.execution.mysql_engine import MySQLTarget

Row = tuple[str, str, str, str]
"""``(schema, table, column, declared type)``."""

SYSTEM_SCHEMAS = frozenset(
    {"information_schema", "pg_catalog", "mysql", "performance_schema", "sys"}
)

# PostgreSQL and DuckDB expose the standard view; ordinal_position keeps the column order.
_INFORMATION_SCHEMA_COLUMNS = """
    SELECT table_schema, table_name, column_name, data_type
    FROM information_schema.columns
    WHERE table_catalog = current_database()
    ORDER BY table_schema, table_name, ordinal_position
"""
# MySQL has no catalogs: table_catalog is always 'def', and a schema is a database.
_MYSQL_COLUMNS = """
    SELECT table_schema, table_name, column_name, column_type
    FROM information_schema.columns
    ORDER BY table_schema, table_name, ordinal_position
"""


def open_duckdb(target: str) -> Any:
    """A read-only DuckDB connection."""
    return duckdb.connect(target, read_only=True)


def open_postgres(target: str) -> Any:
    """A read-only PostgreSQL session."""
    conn = psycopg2.connect(target, connect_timeout=5)
    conn.set_session(readonly=True)
    return conn


def open_sqlite(target: str) -> Any:
    """A SQLite file opened read-only."""
    return sqlite3.connect(f"file:{target}?mode=ro", uri=True)


def open_mysql(target: str) -> Any:
    """A MySQL/MariaDB connection (the account's grants decide what it sees)."""
    return MySQLTarget.parse(target).connect()


def information_schema_rows(conn: Any) -> list[Row]:
    """Columns from ``information_schema.columns`` of the current database (DuckDB, PostgreSQL)."""
    return _rows(conn, _INFORMATION_SCHEMA_COLUMNS)


def mysql_rows(conn: Any) -> list[Row]:
    """Columns of every database the account can see (MySQL: schema = database)."""
    return _rows(conn, _MYSQL_COLUMNS)


def sqlite_rows(conn: Any) -> list[Row]:
    """Columns of every table and view of ``main``, in declared order."""
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


def duckdb_snapshot_hash(target: str) -> str:
    """The snapshot hash a DuckDB warehouse records (``meta.snapshot``, written by
    ``t2s demo build``); KeyError when it has none."""
    con = duckdb.connect(target, read_only=True)
    try:
        row = con.execute(
            f"SELECT value FROM {META_SCHEMA}.snapshot WHERE key = 'snapshot_hash'"
        ).fetchone()
    finally:
        con.close()
    if row is None:
        raise KeyError(f"{target} has no snapshot hash; rebuild it with `t2s demo build`")
    return str(row[0])


def _rows(conn: Any, query: str) -> list[Row]:
    cursor = conn.cursor()
    try:
        cursor.execute(query)
        rows = cursor.fetchall()
    finally:
        cursor.close()
    return [
        (str(db), str(table), str(column), str(kind))
        for db, table, column, kind in rows
        if db not in SYSTEM_SCHEMAS
    ]
