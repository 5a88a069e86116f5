"""Reading the live schema from real DuckDB, SQLite and PostgreSQL databases."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import psycopg2
import pytest

from t2s_pipeline.errors import SqlAnalysisError
from t2s_pipeline.sql.analysis import analyse_query
from t2s_pipeline.sql.schema import read_schema


def test_duckdb_file_schema(tmp_path: Path) -> None:
    """Qualification needs every user schema, in declared column order, and no system ones."""
    path = tmp_path / "warehouse.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute("CREATE SCHEMA sales")
        conn.execute('CREATE TABLE sales."Orders" (zeta INTEGER, "Alpha" VARCHAR, mid DOUBLE)')
        conn.execute("CREATE TABLE main.notes (body VARCHAR)")
    with duckdb.connect(str(path), read_only=True) as conn:
        schema = read_schema(conn, "duckdb")
        only_sales = read_schema(conn, "duckdb", schemas=["sales"])
    assert {db: list(tables) for db, tables in schema.tables.items()} == {
        "main": ["notes"],
        "sales": ["Orders"],
    }
    assert list(schema.tables["sales"]["Orders"].items()) == [
        ("zeta", "INTEGER"),
        ("Alpha", "VARCHAR"),
        ("mid", "DOUBLE"),
    ]
    assert list(only_sales.tables) == ["sales"]
    analysis = analyse_query("SELECT * FROM orders", "duckdb", schema)
    assert [c.origin for c in analysis.output_columns] == [
        "sales.orders.zeta",
        "sales.orders.alpha",
        "sales.orders.mid",
    ]


def test_sqlite_file_schema(tmp_path: Path) -> None:
    """SQLite has one schema, ``main``; internal sqlite_ tables are not part of it."""
    path = tmp_path / "shop.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE Items (id INTEGER PRIMARY KEY AUTOINCREMENT, Label TEXT, n REAL)")
    conn.execute("CREATE VIEW cheap AS SELECT id FROM Items WHERE n < 1")
    conn.commit()
    schema = read_schema(conn, "sqlite")
    conn.close()
    assert list(schema.tables) == ["main"]
    assert list(schema.tables["main"]) == ["Items", "cheap"]
    assert list(schema.tables["main"]["Items"]) == ["id", "Label", "n"]
    analysis = analyse_query("SELECT * FROM items", "sqlite", schema)
    assert [c.origin for c in analysis.output_columns] == [
        "main.items.id",
        "main.items.label",
        "main.items.n",
    ]


def test_unknown_engine_is_refused() -> None:
    """A typo in an engine name must say which engines exist."""
    with pytest.raises(SqlAnalysisError, match="duckdb"):
        read_schema(None, "oracle")


@dataclass(frozen=True)
class _Server:
    """How to reach a PostgreSQL superuser: a URL, or ``runuser`` as the postgres OS user."""

    url: str | None

    def admin(self, statement: str) -> None:
        if self.url:
            conn = psycopg2.connect(self.url)
            conn.autocommit = True
            with conn.cursor() as cursor:
                cursor.execute(statement)
            conn.close()
        else:
            command = ["runuser", "-u", "postgres", "--", "psql", "-qAtc", statement]
            subprocess.run(command, check=True, capture_output=True, timeout=30)


def _server() -> _Server:
    url = os.environ.get("T2S_PG_URL")
    if url:
        return _Server(url)
    if shutil.which("runuser") is None or shutil.which("psql") is None:
        pytest.skip("no PostgreSQL server reachable: set T2S_PG_URL")
    return _Server(None)


@pytest.fixture
def postgres_db() -> Iterator[Any]:
    """A throwaway role and database on the server, dropped afterwards."""
    server = _server()
    name = f"t2s_schema_{uuid.uuid4().hex[:8]}"
    password = uuid.uuid4().hex
    try:
        server.admin(f"CREATE ROLE {name} LOGIN PASSWORD '{password}'")
        server.admin(f"CREATE DATABASE {name} OWNER {name}")
    except (subprocess.SubprocessError, psycopg2.Error) as error:
        pytest.skip(f"no PostgreSQL server reachable: {error}")
    conn = psycopg2.connect(
        dbname=name, user=name, password=password, host="localhost", port=5432, connect_timeout=5
    )
    try:
        yield conn
    finally:
        conn.close()
        server.admin(f"DROP DATABASE {name}")
        server.admin(f"DROP ROLE {name}")


@pytest.mark.postgres
def test_postgres_schema(postgres_db: Any) -> None:
    """PostgreSQL keeps quoted case; system schemas must not leak into the analysis."""
    with postgres_db.cursor() as cursor:
        cursor.execute('CREATE SCHEMA sales; CREATE TABLE sales."Orders" (b INT, "A" TEXT)')
        cursor.execute("CREATE TABLE public.notes (body TEXT)")
    postgres_db.commit()
    schema = read_schema(postgres_db, "postgres")
    assert sorted(schema.tables) == ["public", "sales"]
    assert list(schema.tables["sales"]["Orders"]) == ["b", "A"]
    analysis = analyse_query('SELECT * FROM sales."Orders"', "postgres", schema)
    assert [c.origin for c in analysis.output_columns] == ["sales.Orders.b", "sales.Orders.A"]
