"""Load the demo warehouse into PostgreSQL and create the read-only role the guard connects as.

:func:`load_postgres` (re)creates a database, its schemas and tables with comments (the same
DDL as DuckDB), copies every row from the DuckDB file with ``COPY FROM STDIN`` in chunks, and
creates a login role that can only read the allowlisted schemas.

Pointing the harness at a real warehouse: create a dedicated login role and give it exactly
what :func:`grant_reader` gives here, as the warehouse owner::

    CREATE ROLE t2s_reader LOGIN PASSWORD '...';
    REVOKE ALL ON DATABASE warehouse FROM PUBLIC;  -- no TEMP, no CREATE for everyone
    GRANT CONNECT ON DATABASE warehouse TO t2s_reader;
    GRANT USAGE ON SCHEMA sales TO t2s_reader;     -- per allowlisted schema
    GRANT SELECT ON ALL TABLES IN SCHEMA sales TO t2s_reader;
    ALTER ROLE t2s_reader SET default_transaction_read_only = on;
    ALTER ROLE t2s_reader SET statement_timeout = '30s';
    ALTER ROLE t2s_reader SET work_mem = '64MB';
    ALTER ROLE t2s_reader SET temp_file_limit = '1GB';   -- as a superuser
    REVOKE EXECUTE ON FUNCTION set_config(text, text, boolean) FROM PUBLIC;  -- and lo_*, pg_sleep*

Never grant sensitive schemas (HR, PII) and never use an owner or superuser URL: with the
database layer on, the executor checks the role and refuses to open a connection that can read
outside the allowlist or write anything. Then use the reader's URL as the domain's database.
"""

from __future__ import annotations

import csv
import io
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import psycopg2
from psycopg2 import sql

from t2s_pipeline.demo.schema import ALLOWED_SCHEMAS, TABLES, TableDef, create_statements
from t2s_pipeline.errors import ExecutionError
from t2s_pipeline.execution.postgres_role import BYPASSING_FUNCTIONS, CATALOGUE_COLUMNS

CHUNK_ROWS = 50_000
READER_SETTINGS: dict[str, str] = {
    "default_transaction_read_only": "on",
    "statement_timeout": "30s",
    "work_mem": "64MB",
    "temp_file_limit": "1GB",
    "idle_in_transaction_session_timeout": "60s",
}
# Functions every role may call by default that write, sleep, run SQL given as text, or bypass
# privileges (settings, statistics, object definitions and comments, other backends, server
# addresses, large objects, advisory locks, notifications, transaction ids). The role check
# (execution/postgres_role.py) refuses a reader that can still execute one of them.
_REVOKED_FUNCTIONS_SQL = """
SELECT p.oid::regprocedure::text FROM pg_proc p
WHERE p.pronamespace = 'pg_catalog'::regnamespace
  AND (p.proname LIKE 'lo\\_%%' OR p.proname LIKE 'pg\\_%%advisory%%'
       OR p.proname LIKE 'pg\\_stat\\_get\\_%%' OR p.proname LIKE 'pg\\_get\\_%%def'
       OR p.proname = ANY(%s))
ORDER BY 1
"""
REVOKED_FUNCTIONS: tuple[str, ...] = (
    "lowrite", "loread", "set_config", "pg_sleep", "pg_sleep_for", "pg_sleep_until",
    "query_to_xml", "query_to_xmlschema", "query_to_xml_and_xmlschema", "cursor_to_xml",
    "cursor_to_xmlschema", "table_to_xml", "table_to_xmlschema", "table_to_xml_and_xmlschema",
    "schema_to_xml", "schema_to_xmlschema", "schema_to_xml_and_xmlschema", "database_to_xml",
    "database_to_xmlschema", "database_to_xml_and_xmlschema", "ts_stat", "ts_rewrite",
    "pg_show_all_settings", "pg_show_all_file_settings", "pg_get_viewdef", "pg_get_functiondef",
    "pg_get_function_arguments", "pg_get_expr", "obj_description", "col_description",
    "shobj_description", "pg_notify", "pg_listening_channels", "pg_current_xact_id",
    "pg_current_xact_id_if_assigned", "txid_current", "txid_current_if_assigned",
    "pg_current_snapshot", "txid_current_snapshot", "inet_server_addr", "inet_server_port",
    "inet_client_addr", "inet_client_port", "pg_backend_pid", "pg_postmaster_start_time",
    "pg_conf_load_time", "pg_blocking_pids", "pg_safe_snapshot_blocking_pids",
    "pg_terminate_backend", "pg_cancel_backend", "pg_relation_size", "pg_table_size",
    "pg_total_relation_size", "pg_indexes_size", "pg_database_size", "pg_tablespace_size",
    "pg_relation_filepath", "pg_relation_filenode", "pg_ls_dir", "pg_read_file",
    "pg_read_binary_file", "pg_stat_file", "version", "current_setting",
)  # fmt: skip
"""What the reader role recipe revokes from PUBLIC in the warehouse database."""


def load_postgres(
    warehouse: Path,
    superuser_url: str,
    database: str = "t2s_demo",
    role: str = "t2s_reader",
    password: str = "t2s_reader",
) -> str:
    """Load ``warehouse`` into a fresh ``database`` and return the read-only role's URL.

    A previous database of that name is dropped (its connections closed). The role is created,
    or updated when it exists; its grants are on the allowlisted schemas only.
    """
    if not Path(warehouse).is_file():
        raise ExecutionError(f"warehouse {warehouse} does not exist; run `t2s demo build`")
    _recreate_database(superuser_url, database)
    target_url = with_database(superuser_url, database)
    _ensure_role(superuser_url, role, password)
    conn = _connect(target_url)
    try:
        with conn.cursor() as cursor:
            _create_tables(cursor)
            _copy_rows(cursor, Path(warehouse))
            grant_reader(cursor, database, role, ALLOWED_SCHEMAS)
        conn.commit()
    finally:
        conn.close()
    return with_credentials(target_url, role, password)


def drop_database(superuser_url: str, database: str) -> None:
    """Drop ``database`` if it exists, closing its connections."""
    conn = _connect(superuser_url, autocommit=True)
    try:
        with conn.cursor() as cursor:
            name = sql.Identifier(database)
            cursor.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))
    finally:
        conn.close()


def grant_reader(cursor: Any, database: str, role: str, schemas: tuple[str, ...]) -> None:
    """Give ``role`` SELECT on ``schemas`` and nothing else; take defaults away from PUBLIC."""
    who = sql.Identifier(role)
    cursor.execute(
        sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(sql.Identifier(database))
    )
    cursor.execute(
        sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(sql.Identifier(database), who)
    )
    cursor.execute("REVOKE ALL ON SCHEMA public FROM PUBLIC")
    for schema in sorted({t.schema for t in TABLES}):
        cursor.execute(
            sql.SQL("REVOKE ALL ON SCHEMA {} FROM PUBLIC").format(sql.Identifier(schema))
        )
    for schema in schemas:
        name = sql.Identifier(schema)
        cursor.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(name, who))
        cursor.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(name, who))
    cursor.execute(_REVOKED_FUNCTIONS_SQL, (sorted({*REVOKED_FUNCTIONS, *BYPASSING_FUNCTIONS}),))
    for (signature,) in cursor.fetchall():
        cursor.execute(f"REVOKE EXECUTE ON FUNCTION {signature} FROM PUBLIC")
    for table, columns in sorted(CATALOGUE_COLUMNS.items()):
        name = sql.Identifier("pg_catalog", table)
        cursor.execute(sql.SQL("REVOKE SELECT ON {} FROM PUBLIC").format(name))
        if columns:
            listed = sql.SQL(", ").join(sql.Identifier(c) for c in columns)
            cursor.execute(sql.SQL("GRANT SELECT ({}) ON {} TO PUBLIC").format(listed, name))


def with_database(url: str, database: str) -> str:
    """``url`` pointing at another database.

    >>> with_database("postgresql://u:p@h:5432/postgres?sslmode=disable", "t2s_demo")
    'postgresql://u:p@h:5432/t2s_demo?sslmode=disable'
    """
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path="/" + urllib.parse.quote(database)))


def with_credentials(url: str, user: str, password: str) -> str:
    """``url`` logging in as another user.

    >>> with_credentials("postgresql://postgres:pw@localhost:5432/db", "r", "s")
    'postgresql://r:s@localhost:5432/db'
    """
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    login = f"{urllib.parse.quote(user, safe='')}:{urllib.parse.quote(password, safe='')}"
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{login}@{host}"))


def _connect(url: str, autocommit: bool = False) -> Any:
    try:
        conn = psycopg2.connect(url, connect_timeout=5)
    except psycopg2.Error as error:
        raise ExecutionError(f"cannot connect to PostgreSQL: {str(error).strip()}") from error
    conn.autocommit = autocommit
    return conn


def _recreate_database(superuser_url: str, database: str) -> None:
    drop_database(superuser_url, database)
    conn = _connect(superuser_url, autocommit=True)
    try:
        with conn.cursor() as cursor:
            cursor.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    finally:
        conn.close()


def _ensure_role(superuser_url: str, role: str, password: str) -> None:
    conn = _connect(superuser_url, autocommit=True)
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,))
            verb = "ALTER" if cursor.fetchone() else "CREATE"
            cursor.execute(
                sql.SQL(
                    verb + " ROLE {} LOGIN PASSWORD {} NOSUPERUSER NOCREATEDB NOCREATEROLE"
                    " NOREPLICATION NOBYPASSRLS"
                ).format(sql.Identifier(role), sql.Literal(password))
            )
            for name, value in READER_SETTINGS.items():
                cursor.execute(
                    sql.SQL("ALTER ROLE {} SET {} = {}").format(
                        sql.Identifier(role), sql.Identifier(name), sql.Literal(value)
                    )
                )
    finally:
        conn.close()


def _create_tables(cursor: Any) -> None:
    for schema in sorted({t.schema for t in TABLES}):
        cursor.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    for definition in TABLES:
        for statement in create_statements(definition):
            cursor.execute(statement)


def _copy_rows(cursor: Any, warehouse: Path) -> None:
    source = duckdb.connect(str(warehouse), read_only=True)
    try:
        for definition in TABLES:
            for chunk in _chunks(source, definition):
                columns = ", ".join(c.name for c in definition.columns)
                cursor.copy_expert(
                    f"COPY {definition.qualified} ({columns}) FROM STDIN WITH (FORMAT csv)", chunk
                )
    finally:
        source.close()


def _chunks(source: duckdb.DuckDBPyConnection, definition: TableDef) -> Iterator[io.StringIO]:
    """The table's rows as CSV text, ``CHUNK_ROWS`` at a time (NULL is an unquoted empty field)."""
    columns = ", ".join(c.name for c in definition.columns)
    result = source.execute(f"SELECT {columns} FROM {definition.qualified}")
    while rows := result.fetchmany(CHUNK_ROWS):
        buffer = io.StringIO()
        csv.writer(buffer, quoting=csv.QUOTE_NONNUMERIC).writerows(rows)
        buffer.seek(0)
        yield buffer
