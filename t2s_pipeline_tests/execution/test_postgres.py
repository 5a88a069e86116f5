"""PostgreSQL against the real local server: the loader, the reader role and its checks."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import duckdb
import psycopg2
import pytest

from t2s_pipeline.demo.postgres import drop_database, load_postgres, with_database
from t2s_pipeline.demo.schema import TABLES
from t2s_pipeline.errors import ExecutionError
from t2s_pipeline.execution import Guard, open_executor

DEMO = ("sales", "finance", "inventory")
ROLE = "t2s_test_reader"


@pytest.fixture(scope="module")
def loaded(warehouse: Path, pg_url: str) -> Iterator[tuple[str, str]]:
    """The small warehouse loaded into a throw-away database: (reader URL, owner URL)."""
    database = f"t2s_test_{uuid.uuid4().hex[:8]}"
    reader = load_postgres(warehouse, pg_url, database, ROLE, "t2s_test_reader")
    yield reader, with_database(pg_url, database)
    drop_database(pg_url, database)


def test_every_row_is_copied(loaded: tuple[str, str], warehouse: Path) -> None:
    """COPY FROM STDIN in chunks must carry every table across, row for row."""
    source = duckdb.connect(str(warehouse), read_only=True)
    conn = psycopg2.connect(loaded[1])
    try:
        with conn.cursor() as cursor:
            for table in TABLES:
                cursor.execute(f"SELECT count(*) FROM {table.qualified}")
                expected = source.execute(f"SELECT count(*) FROM {table.qualified}").fetchone()
                assert cursor.fetchone() == expected, table.qualified
            cursor.execute("SELECT obj_description('sales.orders'::regclass)")
            assert cursor.fetchone()[0]
    finally:
        conn.close()
        source.close()


def test_reader_role_settings(loaded: tuple[str, str]) -> None:
    """The role itself carries read-only, timeout and work_mem defaults, not just the session."""
    conn = psycopg2.connect(loaded[0])
    try:
        with conn.cursor() as cursor:
            cursor.execute("SHOW default_transaction_read_only")
            assert cursor.fetchone() == ("on",)
            cursor.execute("SHOW work_mem")
            assert cursor.fetchone() == ("64MB",)
            cursor.execute("SELECT has_schema_privilege('hr', 'USAGE')")
            assert cursor.fetchone() == (False,)
    finally:
        conn.close()


def test_database_layer_refuses_an_owner_connection(loaded: tuple[str, str]) -> None:
    """The database layer must not silently run as a role that can read HR or write."""
    with pytest.raises(ExecutionError, match="least-privilege"):
        open_executor(loaded[1], Guard(DEMO, dialect="postgres"))


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM hr.salaries",
        "DELETE FROM sales.orders",
        "SELECT 1; COMMIT; BEGIN READ WRITE; DELETE FROM sales.orders",
        "SELECT set_config('statement_timeout', '0', false)",
        "WITH d AS (DELETE FROM sales.orders RETURNING *) SELECT count(*) FROM d",
    ],
)
def test_database_layer_alone_refuses(loaded: tuple[str, str], sql: str) -> None:
    """Grants, read-only transactions, revoked functions and the cursor stand without the filter."""
    guard = Guard(DEMO, dialect="postgres", layers=frozenset({"database"}))
    with open_executor(loaded[0], guard) as executor:
        outcome = executor.run(sql)
        after = executor.run("SELECT count(*) FROM sales.orders")
    assert outcome.refused and outcome.layer == "database"
    assert after.rows and after.rows[0][0] > 0


def test_a_second_statement_cannot_run(loaded: tuple[str, str]) -> None:
    """The extended protocol carries one statement: a smuggled COMMIT and role change never run
    (over the simple protocol this string persisted ALTER ROLE through the database layer)."""
    guard = Guard(DEMO, dialect="postgres", layers=frozenset({"database"}), timeout_s=5)
    smuggled = (
        "SELECT 1; COMMIT; BEGIN READ WRITE; ALTER ROLE CURRENT_USER SET work_mem = '1MB'; COMMIT"
    )
    with open_executor(loaded[0], guard) as executor:
        outcome = executor.run(smuggled)
        after = executor.run("SELECT count(*) FROM sales.orders")
    assert outcome.refused and outcome.layer == "database" and "one query" in (outcome.reason or "")
    assert after.rows and after.rows[0][0] > 0
    with psycopg2.connect(loaded[1]) as owner, owner.cursor() as cursor:
        cursor.execute("SELECT setconfig FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole "
                       "WHERE r.rolname = 't2s_test_reader'")  # fmt: skip
        settings = [str(row[0]) for row in cursor.fetchall()]
    assert not any("1MB" in entry for entry in settings)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT c.relname, d.description FROM pg_description AS d JOIN pg_class AS c ON c.oid = d.objoid",
        "SELECT relname, reltuples FROM pg_class WHERE relnamespace = 'hr'::regnamespace",
        "SELECT attname FROM pg_attribute WHERE attrelid = 'sales.orders'::regclass",
        "SELECT 1\x00; DELETE FROM sales.orders",
    ],
)
def test_the_reader_cannot_read_what_the_catalogue_says_about_other_schemas(
    loaded: tuple[str, str], sql: str
) -> None:
    """Every role can read pg_catalog by default: the loader revokes the tables that describe
    relations (keeping the columns the role check needs), and a NUL byte never reaches libpq."""
    guard = Guard(DEMO, dialect="postgres", layers=frozenset({"database"}))
    with open_executor(loaded[0], guard) as executor:
        outcome = executor.run(sql)
    assert (outcome.refused or outcome.error is not None) and not outcome.rows


def test_the_role_check_names_readable_catalogue_columns(loaded: tuple[str, str]) -> None:
    """Granting pg_description back makes the role check refuse the reader, naming it."""
    owner = psycopg2.connect(loaded[1])
    owner.autocommit = True
    try:
        with owner.cursor() as cursor:
            cursor.execute("GRANT SELECT ON pg_catalog.pg_description TO PUBLIC")
        with pytest.raises(ExecutionError, match="pg_description.description"):
            open_executor(loaded[0], Guard(DEMO, dialect="postgres"))
    finally:
        with owner.cursor() as cursor:
            cursor.execute("REVOKE SELECT ON pg_catalog.pg_description FROM PUBLIC")
        owner.close()
