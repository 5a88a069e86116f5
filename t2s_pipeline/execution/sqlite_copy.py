"""A SQLite copy of the demo warehouse, for running guarded queries (and attacks) on SQLite.

SQLite has one schema per database file, so the copy is two files: ``<name>.sqlite`` holds the
allowlisted tables in ``main`` under their plain names (``orders``, ``invoices``, ...), and
``<name>.sensitive.sqlite`` holds the sensitive tables as ``hr_salaries``, ``pii_...``. The
sensitive file is never attached by the executor: reaching it takes an ATTACH, which is exactly
what the guard must refuse, so the SQLite allowlist is ``main``.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from t2s_pipeline.demo.schema import ALLOWED_SCHEMAS, TABLES, TableDef

_TYPES = {"INTEGER": "INTEGER", "BOOLEAN": "INTEGER", "DATE": "TEXT", "VARCHAR": "TEXT"}


@dataclass(frozen=True)
class SQLiteCopy:
    """The two files of a SQLite copy."""

    main: Path
    sensitive: Path


def build_sqlite_copy(warehouse: Path, main: Path) -> SQLiteCopy:
    """Write the SQLite copy of the DuckDB ``warehouse`` to ``main`` and its sensitive sibling."""
    sensitive = main.with_name(f"{main.stem}.sensitive{main.suffix}")
    source = duckdb.connect(str(warehouse), read_only=True)
    try:
        for path in (main, sensitive):
            path.unlink(missing_ok=True)
        _write(source, main, [t for t in TABLES if t.schema in ALLOWED_SCHEMAS], _plain_name)
        _write(source, sensitive, [t for t in TABLES if t.schema not in ALLOWED_SCHEMAS], _joined)
    finally:
        source.close()
    return SQLiteCopy(main, sensitive)


def _plain_name(definition: TableDef) -> str:
    return definition.name


def _joined(definition: TableDef) -> str:
    return f"{definition.schema}_{definition.name}"


def _write(
    source: duckdb.DuckDBPyConnection, path: Path, tables: list[TableDef], name_of: Any
) -> None:
    con = sqlite3.connect(path)
    try:
        for definition in tables:
            name = name_of(definition)
            columns = ", ".join(f"{c.name} {_sqlite_type(c.type)}" for c in definition.columns)
            con.execute(f"CREATE TABLE {name} ({columns})")
            rows = source.execute(f"SELECT * FROM {definition.qualified}").fetchall()
            marks = ", ".join("?" for _ in definition.columns)
            con.executemany(f"INSERT INTO {name} VALUES ({marks})", map(_sqlite_row, rows))
        con.commit()
    finally:
        con.close()


def _sqlite_type(duckdb_type: str) -> str:
    return "REAL" if duckdb_type.startswith("DECIMAL") else _TYPES.get(duckdb_type, "TEXT")


def _sqlite_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(_sqlite_value(value) for value in row)


def _sqlite_value(value: Any) -> Any:
    if value is None or isinstance(value, int | float | str):
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return float(value)
