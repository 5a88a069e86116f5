"""Where the hostile suite runs: one scratch database per engine, and how to see any change.

Each target is a throw-away copy the runner may damage: a copy of the DuckDB warehouse (and
its serving snapshot, built up front), a SQLite copy built from it, or a PostgreSQL database
loaded with :func:`~t2s_pipeline.demo.postgres.load_postgres` (queries run as its reader role;
the filter-alone runs use the superuser, so only the filter stands between them and the data).
A target's fingerprint is a hash of its files (DuckDB, SQLite) or of its catalogue and every
table's row count (PostgreSQL); any difference after an attack is a leak.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import shutil
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import psycopg2
from psycopg2 import sql

from t2s_pipeline.demo.generate import build_warehouse
from t2s_pipeline.demo.mysql import load_mysql, reader_url
from t2s_pipeline.demo.postgres import drop_database, load_postgres, with_database
from t2s_pipeline.demo.schema import ALLOWED_SCHEMAS, TABLES
from t2s_pipeline.errors import ExecutionError
from t2s_pipeline.execution.duckdb_snapshot import serving_snapshot
from t2s_pipeline.execution.engine import DUCKDB, MYSQL, POSTGRES, SQLITE
from t2s_pipeline.execution.mysql_engine import MySQLTarget, as_booleans
from t2s_pipeline.execution.sqlite_copy import build_sqlite_copy
from t2s_pipeline.suites.legitimate import (
    LEGITIMATE_OBJECTS,
    SEARCH_PATH_SCHEMAS,
    legitimate_object_names,
)

HOSTILE_DATABASE = "t2s_hostile"
HOSTILE_ROLE = "t2s_hostile_reader"
HOSTILE_PASSWORD = "t2s_hostile_reader"


@dataclass(frozen=True)
class EngineTarget:
    """One engine's scratch database, as the runner needs it."""

    engine: str
    dialect: str
    allowed_schemas: tuple[str, ...]
    guarded: str
    unguarded: str
    fingerprint: Callable[[], str]
    reset: Callable[[], None]
    placeholders: Mapping[str, str] = field(default_factory=dict)
    cleanup: Callable[[], None] = lambda: None
    owner_run: Callable[[Sequence[str]], None] = lambda statements: None
    """Run statements as the target's owner (an attack's setup and teardown)."""
    bare_rows: Callable[[str, int], list[tuple[Any, ...]]] = lambda sql, cap: []
    """A statement's first ``cap`` rows read by the owner with no guard (for controls)."""
    allowed_tables: tuple[str, ...] | None = None


def target_for(
    engine: str, warehouse: Path, workdir: Path, pg_url: str, mysql_url: str | None
) -> EngineTarget:
    """The scratch target of a built-in engine (a plugin builds its own EngineTarget); raises
    ExecutionError naming the fix when its server cannot be reached."""
    if engine == DUCKDB:
        return duckdb_target(warehouse, workdir)
    if engine == SQLITE:
        return sqlite_target(warehouse, workdir)
    if engine == POSTGRES:
        try:
            return postgres_target(warehouse, pg_url)
        except ExecutionError as error:
            raise ExecutionError(
                f"{error}. Start PostgreSQL or pass --pg-url, or run --engine duckdb/sqlite"
            ) from error
    if engine == MYSQL:
        if not mysql_url:
            raise ExecutionError("--engine mysql needs --mysql-url (or $T2S_MYSQL_URL)")
        return mysql_target(warehouse, mysql_url)
    raise ExecutionError(f"no hostile target for engine {engine!r}: a plugin brings its own")


def guard_warehouse(warehouse: Path, scratch: Path) -> Path:
    """The warehouse the hostile suite attacks: the demo warehouse when the project has one,
    else one generated once into ``scratch`` (the suite tests the executor, whose verdict does
    not depend on the domain's data; a project of its own needs no demo warehouse)."""
    if warehouse.exists():
        return warehouse
    generated = scratch / "warehouse.duckdb"
    if not generated.exists():
        build_warehouse(generated)
    return generated


def duckdb_target(warehouse: Path, workdir: Path) -> EngineTarget:
    """A copy of the DuckDB warehouse in ``workdir`` (with its serving snapshot built)."""
    folder = workdir / DUCKDB
    path = folder / "warehouse.duckdb"

    def reset() -> None:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        shutil.copyfile(warehouse, path)
        _duckdb_owner_run(path, LEGITIMATE_OBJECTS[DUCKDB])  # and builds the snapshot

    reset()
    return EngineTarget(
        engine=DUCKDB,
        dialect=DUCKDB,
        allowed_schemas=ALLOWED_SCHEMAS,
        guarded=str(path),
        unguarded=str(path),
        fingerprint=lambda: folder_fingerprint(folder),
        reset=reset,
        placeholders={"source_db": str(path), "catalog": path.stem, "scratch": str(folder)},
        owner_run=lambda statements: _duckdb_owner_run(path, statements),
        bare_rows=lambda text, cap: _duckdb_rows(path, text, cap),
    )


def _duckdb_owner_run(path: Path, statements: Sequence[str]) -> None:
    """Run statements on the source file read-write, then rebuild the serving snapshot."""
    con = duckdb.connect(str(path))
    try:
        for statement in statements:
            con.execute(statement)
    finally:
        con.close()
    # The scratch copy holds trap views and macros on purpose: dropping them is expected here.
    snapshot_log = logging.getLogger("t2s.guard")  # the snapshot's logger
    level = snapshot_log.level
    snapshot_log.setLevel(logging.ERROR)
    try:
        serving_snapshot(path, ALLOWED_SCHEMAS)
    finally:
        snapshot_log.setLevel(level)


def _duckdb_rows(path: Path, text: str, cap: int) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return [tuple(row) for row in con.execute(text).fetchmany(cap)]
    finally:
        con.close()


def sqlite_target(warehouse: Path, workdir: Path) -> EngineTarget:
    """A SQLite copy of the warehouse in ``workdir``; the allowlist is ``main``."""
    folder = workdir / SQLITE
    main = folder / "warehouse.sqlite"

    def reset() -> None:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        build_sqlite_copy(warehouse, main)
        _sqlite_owner_run(main, LEGITIMATE_OBJECTS[SQLITE])

    reset()
    sensitive = main.with_name(f"{main.stem}.sensitive{main.suffix}")
    tables = (*SQLITE_TABLES, *sorted(legitimate_object_names(SQLITE)))
    return EngineTarget(
        engine=SQLITE,
        dialect=SQLITE,
        allowed_schemas=("main",),
        guarded=str(main),
        unguarded=str(main),
        fingerprint=lambda: folder_fingerprint(folder),
        reset=reset,
        placeholders={"sensitive_db": str(sensitive), "catalog": "main", "scratch": str(folder)},
        owner_run=lambda statements: _sqlite_owner_run(main, statements),
        bare_rows=lambda text, cap: _sqlite_rows(main, text, cap),
        allowed_tables=tables,
    )


SQLITE_TABLES: tuple[str, ...] = tuple(
    sorted(t.name for t in TABLES if t.schema in ALLOWED_SCHEMAS)
)
"""The SQLite copy's allowlisted tables (its ``main`` holds them under plain names)."""


def _sqlite_owner_run(path: Path, statements: Sequence[str]) -> None:
    con = sqlite3.connect(path, isolation_level=None)
    try:
        for statement in statements:
            con.execute(statement)
    finally:
        con.close()


def _sqlite_rows(path: Path, text: str, cap: int) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [tuple(row) for row in con.execute(text).fetchmany(cap)]
    finally:
        con.close()


def postgres_target(
    warehouse: Path, superuser_url: str, database: str = HOSTILE_DATABASE
) -> EngineTarget:
    """The warehouse loaded into its own PostgreSQL database, read through its reader role."""
    owner_url = with_database(superuser_url, database)
    fingerprint = PostgresFingerprint(owner_url)
    readers: list[str] = []

    def reset() -> None:
        fingerprint.close()
        readers[:] = [
            load_postgres(warehouse, superuser_url, database, HOSTILE_ROLE, HOSTILE_PASSWORD)
        ]
        _postgres_owner_run(owner_url, _postgres_legitimate_setup(database))

    def cleanup() -> None:
        fingerprint.close()
        drop_database(superuser_url, database)

    reset()
    return EngineTarget(
        engine=POSTGRES,
        dialect=POSTGRES,
        allowed_schemas=ALLOWED_SCHEMAS,
        guarded=readers[0],
        unguarded=owner_url,
        fingerprint=fingerprint,
        reset=reset,
        placeholders={"catalog": database, "reader": HOSTILE_ROLE},
        cleanup=cleanup,
        owner_run=lambda statements: _postgres_owner_run(owner_url, statements),
        bare_rows=lambda text, cap: _postgres_rows(owner_url, text, cap),
    )


def _postgres_legitimate_setup(database: str) -> list[str]:
    """The corpus's views, readable by the reader, and the search path its unqualified
    statements rely on (for the reader and the owner the filter-alone runs use)."""
    path = ", ".join(SEARCH_PATH_SCHEMAS)
    grants = [
        f"GRANT SELECT ON ALL TABLES IN SCHEMA {s} TO {HOSTILE_ROLE}" for s in ALLOWED_SCHEMAS
    ]
    roles = [f'ALTER ROLE {r} IN DATABASE "{database}" SET search_path = {path}'
             for r in (HOSTILE_ROLE, "CURRENT_USER")]  # fmt: skip
    return [*LEGITIMATE_OBJECTS[POSTGRES], *grants, *roles]


def _postgres_owner_run(owner_url: str, statements: Sequence[str]) -> None:
    conn = psycopg2.connect(owner_url, connect_timeout=5)
    conn.autocommit = True
    try:
        with conn.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
    finally:
        conn.close()


def _postgres_rows(owner_url: str, text: str, cap: int) -> list[tuple[Any, ...]]:
    conn = psycopg2.connect(owner_url, connect_timeout=5)
    try:
        with conn.cursor() as cursor:
            cursor.execute(text)
            return [tuple(row) for row in cursor.fetchmany(cap)]
    finally:
        conn.rollback()
        conn.close()


MYSQL_DATABASES: tuple[str, ...] = tuple(sorted({t.schema for t in TABLES}))
"""The databases the MySQL target loads (one per demo schema): replaced on its server."""


def mysql_target(warehouse: Path, admin_url: str) -> EngineTarget:
    """The warehouse loaded into a MySQL/MariaDB server (one database per demo schema, which
    replaces databases of those names), read through its SELECT-only account; the filter-alone
    runs use the administrator."""
    owner_url = reader_url(admin_url, *_admin_login(admin_url), ALLOWED_SCHEMAS[0])
    readers: list[str] = []

    def reset() -> None:
        readers[:] = [load_mysql(warehouse, admin_url, HOSTILE_ROLE, HOSTILE_PASSWORD)]
        MySQLTarget.parse(owner_url).run(LEGITIMATE_OBJECTS.get(MYSQL, ()))

    def cleanup() -> None:
        MySQLTarget.parse(owner_url).run(
            [*(f"DROP DATABASE IF EXISTS `{d}`" for d in MYSQL_DATABASES),
             f"DROP USER IF EXISTS '{HOSTILE_ROLE}'@'%'"],
        )  # fmt: skip

    reset()
    return EngineTarget(
        engine=MYSQL,
        dialect=MYSQL,
        allowed_schemas=ALLOWED_SCHEMAS,
        guarded=readers[0],
        unguarded=owner_url,
        fingerprint=lambda: mysql_fingerprint(owner_url),
        reset=reset,
        placeholders={"catalog": ALLOWED_SCHEMAS[0], "reader": f"'{HOSTILE_ROLE}'@'%'"},
        cleanup=cleanup,
        owner_run=MySQLTarget.parse(owner_url).run,
        bare_rows=lambda text, cap: _mysql_rows(owner_url, text, cap),
    )


def _admin_login(admin_url: str) -> tuple[str, str]:
    target = MySQLTarget.parse(admin_url)
    return target.user, target.password


def _mysql_rows(owner_url: str, text: str, cap: int) -> list[tuple[Any, ...]]:
    conn = MySQLTarget.parse(owner_url).connect()
    try:
        with conn.cursor() as cursor:
            cursor.execute(text)
            # as the backend returns them (BOOLEAN columns as booleans), to compare like for like
            return as_booleans([tuple(row) for row in cursor.fetchmany(cap)], cursor.description)
    finally:
        conn.close()


_MYSQL_CATALOGUE_SQL = """
SELECT 'table', TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES
WHERE TABLE_SCHEMA NOT IN ('information_schema', 'performance_schema', 'sys')
UNION ALL
SELECT 'routine', ROUTINE_SCHEMA, ROUTINE_NAME, ROUTINE_TYPE FROM information_schema.ROUTINES
UNION ALL
SELECT 'trigger', TRIGGER_SCHEMA, TRIGGER_NAME, EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS
UNION ALL
SELECT 'event', EVENT_SCHEMA, EVENT_NAME, STATUS FROM information_schema.EVENTS
UNION ALL
SELECT 'user', User, Host, '' FROM mysql.user
UNION ALL
SELECT 'grant', GRANTEE, TABLE_SCHEMA, PRIVILEGE_TYPE FROM information_schema.SCHEMA_PRIVILEGES
UNION ALL
SELECT 'global', GRANTEE, PRIVILEGE_TYPE, IS_GRANTABLE FROM information_schema.USER_PRIVILEGES
ORDER BY 1, 2, 3, 4
"""


def mysql_fingerprint(owner_url: str) -> str:
    """SHA-256 over the server's tables, views, routines, triggers, events, accounts and grants,
    and the row count of every table in the demo's databases."""
    conn = MySQLTarget.parse(owner_url).connect()
    try:
        with conn.cursor() as cursor:
            cursor.execute(_MYSQL_CATALOGUE_SQL)
            catalogue = cursor.fetchall()
            counts = []
            for kind, schema, name, table_type in catalogue:
                if kind == "table" and schema in MYSQL_DATABASES and table_type == "BASE TABLE":
                    cursor.execute(f"SELECT count(*) FROM `{schema}`.`{name}`")
                    counts.append((schema, name, cursor.fetchone()[0]))
    except Exception as error:
        raise ExecutionError(f"cannot fingerprint the hostile MySQL databases: {error}") from error
    finally:
        conn.close()
    return hashlib.sha256(repr((catalogue, counts)).encode()).hexdigest()


def folder_fingerprint(folder: Path) -> str:
    """SHA-256 over the names and content hashes of every file in ``folder``."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.name.encode())
        digest.update(file_hash(path).encode())
    return digest.hexdigest()


_FILE_HASHES: dict[tuple[str, int, int, int], str] = {}


def file_hash(path: Path) -> str:
    """SHA-256 of a file's bytes, re-read only when its inode, size or mtime changed.

    Any write through the file system updates the modification time, so an unchanged
    ``(inode, size, mtime_ns)`` means unchanged bytes; this keeps a fingerprint per attack cheap.
    """
    stat = path.stat()
    key = (str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns)
    if key not in _FILE_HASHES:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _FILE_HASHES[key] = digest.hexdigest()
    return _FILE_HASHES[key]


_CATALOGUE_SQL = """
SELECT n.nspname, c.relname, c.relkind::text
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%%'
UNION ALL
SELECT n.nspname, p.proname, 'function' FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%%'
UNION ALL
SELECT 'large objects', count(*)::text, 'count' FROM pg_largeobject_metadata
UNION ALL
SELECT 'role settings', r.rolname, array_to_string(s.setconfig, ',')
FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole WHERE r.rolname = %s
  AND s.setdatabase IN (0, (SELECT oid FROM pg_database WHERE datname = current_database()))
ORDER BY 1, 2, 3
"""


class PostgresFingerprint:
    """SHA-256 over the database's relations, functions, large objects, the reader's settings
    and every table's row count, read over one owner connection kept open between calls."""

    def __init__(self, owner_url: str) -> None:
        self.owner_url = owner_url
        self._conn: Any = None

    def __call__(self) -> str:
        conn = self._connection()
        try:
            with conn.cursor() as cursor:
                cursor.execute(_CATALOGUE_SQL, (HOSTILE_ROLE,))
                catalogue = cursor.fetchall()
                counts = [_row_count(cursor, schema, name) for schema, name, kind in catalogue
                          if kind == "r"]  # fmt: skip
        finally:
            conn.rollback()
        return hashlib.sha256(repr((catalogue, counts)).encode()).hexdigest()

    def close(self) -> None:
        """Close the owner connection (it is reopened on the next call)."""
        if self._conn is not None:
            with contextlib.suppress(psycopg2.Error):
                self._conn.close()
        self._conn = None

    def _connection(self) -> Any:
        if self._conn is None or self._conn.closed:
            try:
                self._conn = psycopg2.connect(self.owner_url, connect_timeout=5)
            except psycopg2.Error as error:
                raise ExecutionError(f"cannot fingerprint the hostile database: {error}") from error
        return self._conn


def _row_count(cursor: Any, schema: str, name: str) -> tuple[str, str, int]:
    cursor.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(schema, name)))
    return schema, name, int(cursor.fetchone()[0])
