"""The benchmark's SQLite files: one per ``db_id`` at ``<db-dir>/<db_id>/<db_id>.sqlite``."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from t2s_pipeline.benchmarks.spider import SpiderSchema
from t2s_pipeline.errors import ConfigError
from t2s_pipeline.sql.schema import Schema, live_schema

PATTERN = "{db_id}/{db_id}.sqlite"


def database_file(db_dir: Path, db_id: str) -> Path:
    """Where the benchmark keeps one database.

    >>> database_file(Path("database"), "concert_singer").as_posix()
    'database/concert_singer/concert_singer.sqlite'
    """
    return db_dir / PATTERN.replace("{db_id}", db_id)


def domain_database(db_dir: Path, out: Path) -> str:
    """The ``database`` entry of ``domain.yaml``: absolute when ``db_dir`` is, else relative to
    the case folder (which is how :meth:`Domain.database_for` resolves it).

    >>> domain_database(Path("data/database"), Path("cases/spider-dev"))
    '../../data/database/{db_id}/{db_id}.sqlite'
    """
    if db_dir.is_absolute():
        return (db_dir / PATTERN).as_posix()
    return Path(os.path.relpath(db_dir, out), PATTERN).as_posix()


def require_databases(db_dir: Path, db_ids: Iterable[str], source: Path) -> dict[str, Path]:
    """Every database the questions use, or one error listing the missing files."""
    files = {db_id: database_file(db_dir, db_id) for db_id in sorted(set(db_ids))}
    missing = [f"{db_id} ({path})" for db_id, path in files.items() if not path.is_file()]
    if missing:
        raise ConfigError(
            f"{source}: {len(missing)} database(s) used by the questions are missing under "
            f"{db_dir}: {', '.join(missing[:10])}. Fix: pass --db-dir, the folder holding "
            "<db_id>/<db_id>.sqlite for every db_id"
        )
    return files


def read_schemas(files: Mapping[str, Path]) -> dict[str, Schema]:
    """The live schema of every database file, by ``db_id``."""
    return {db_id: live_schema(str(path), "sqlite") for db_id, path in files.items()}


def check_declared(
    declared: Mapping[str, SpiderSchema], live: Mapping[str, Schema], tables_json: Path
) -> None:
    """``tables.json`` agrees with the databases: every db_id declared, every table and column
    present (names compared case-insensitively, as SQLite does). One error lists every gap."""
    problems: list[str] = []
    for db_id, schema in sorted(live.items()):
        if db_id not in declared:
            problems.append(f"db_id {db_id!r} is used by the questions but not declared")
            continue
        problems += _gaps(declared[db_id], schema)
    if problems:
        raise ConfigError(
            f"{tables_json}: disagrees with the databases: {'; '.join(problems[:10])}"
            f"{' ...' if len(problems) > 10 else ''}. Fix: pass the tables.json that belongs to "
            "these databases (or the databases it describes)"
        )


def _gaps(declared: SpiderSchema, live: Schema) -> list[str]:
    """Declared tables and columns the database lacks. SQLite's own tables (``sqlite_sequence``,
    which Spider's official tables.json declares for AUTOINCREMENT databases) are not the
    database's data and are never required."""
    tables = {t.lower(): {c.lower() for c in cols} for t, cols in live.tables["main"].items()}
    gaps = [
        f"{declared.db_id}: table {table!r} is not in the database"
        for table in declared.tables
        if table.lower() not in tables and not _internal(table)
    ]
    gaps += [
        f"{declared.db_id}: column {table}.{column} is not in the database"
        for table, column in declared.columns
        if table.lower() in tables and column.lower() not in tables[table.lower()]
    ]
    return gaps


def _internal(table: str) -> bool:
    """SQLite reserves names starting ``sqlite_`` for its own tables."""
    return table.lower().startswith("sqlite_")


def column_names(schema: Schema) -> frozenset[str]:
    """Every column name of a database, lower-cased (SQLite compares names that way)."""
    return frozenset(
        column.lower()
        for tables in schema.tables.values()
        for cols in tables.values()
        for column in cols
    )
