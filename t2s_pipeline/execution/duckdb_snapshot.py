"""The DuckDB serving snapshot: a copy of the source holding only the allowlisted schemas.

The database layer never opens the source warehouse. It opens
``<stem>.serving-<hash8>.duckdb`` next to it, where the hash covers the folded allowlist and
the source's modification time and size, so a rebuilt source or a changed allowlist gets a new
snapshot and an unchanged one is reused. A snapshot is written to a temporary file and renamed
into place, so concurrent builders never see a half-written file. Only base tables are copied;
views, macros and other schemas (sensitive ones, ``meta``, ``main``) are not there to be read.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from pathlib import Path

import duckdb

from t2s_pipeline.errors import ExecutionError
from t2s_pipeline.execution.duckdb_catalogue import classify, read_definitions
from t2s_pipeline.execution.policy import fold_schema_names

logger = logging.getLogger("t2s.guard")
SNAPSHOT_FORMAT = 2
"""Bumped when what a snapshot holds changes (2: safe views and macros), so old ones are rebuilt."""


def serving_snapshot(source: Path, allowed_schemas: tuple[str, ...]) -> Path:
    """The path of the current serving snapshot of ``source``, built if it is missing.

    Raises ExecutionError when the source cannot be read or the snapshot cannot be written.
    """
    if not source.is_file():
        raise ExecutionError(f"DuckDB database {source} does not exist; build it first")
    path = snapshot_path(source, allowed_schemas)
    if not path.exists():
        _build(source, path, allowed_schemas)
    return path


def snapshot_path(source: Path, allowed_schemas: tuple[str, ...]) -> Path:
    """Where the snapshot of ``source`` for this allowlist lives.

    >>> snapshot_path(Path("/nonexistent/w.duckdb"), ("sales",)).name.startswith("w.serving-")
    True
    """
    digest = hashlib.sha256()
    digest.update(f"{SNAPSHOT_FORMAT}:{','.join(_fold(allowed_schemas))}".encode())
    with contextlib.suppress(OSError):
        stat = source.stat()
        digest.update(f"{stat.st_mtime_ns}:{stat.st_size}".encode())
    return source.with_name(f"{source.stem}.serving-{digest.hexdigest()[:8]}.duckdb")


def _fold(schemas: tuple[str, ...]) -> list[str]:
    return sorted(fold_schema_names(schemas, "duckdb"))


def _build(source: Path, path: Path, allowed_schemas: tuple[str, ...]) -> None:
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        con = duckdb.connect(str(tmp))
        try:
            _copy_tables(con, source, _fold(allowed_schemas))
            con.execute("CHECKPOINT")
        finally:
            con.close()
        os.replace(tmp, path)
    except (duckdb.Error, OSError) as error:
        raise ExecutionError(
            f"cannot build the serving snapshot {path} of {source}: {error}. "
            "The folder must be writable and the source must not be open for writing."
        ) from error
    finally:
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.wal").unlink(missing_ok=True)
    _remove_stale(source, path)


def _copy_tables(con: duckdb.DuckDBPyConnection, source: Path, schemas: list[str]) -> None:
    con.execute("ATTACH ? AS source (READ_ONLY)", [str(source)])
    tables = con.execute(
        "SELECT schema_name, table_name FROM duckdb_tables() "
        "WHERE database_name = 'source' AND lower(schema_name) IN (SELECT unnest(?)) "
        "ORDER BY 1, 2",
        [schemas],
    ).fetchall()
    for schema in sorted({schema for schema, _ in tables}):
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {_quote(schema)}")
    for schema, table in tables:
        name = f"{_quote(schema)}.{_quote(table)}"
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM source.{name}")
    _copy_definitions(con, frozenset(schemas))
    con.execute("DETACH source")


def _copy_definitions(con: duckdb.DuckDBPyConnection, allowed: frozenset[str]) -> None:
    """Recreate the safe views and macros of the allowed schemas; name the dropped ones."""
    definitions = read_definitions(con, allowed, "source")
    relations = frozenset(
        (str(s).lower(), str(n).lower())
        for s, n in con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'source' "
            "UNION ALL SELECT schema_name, view_name FROM duckdb_views() "
            "WHERE database_name = 'source' AND NOT internal"
        ).fetchall()
    )
    unsafe = classify(definitions, allowed, relations, "source")
    dropped = {(schema, name) for schema, name, _ in unsafe}
    pending = [d for d in definitions if (d.schema, d.name) not in dropped]
    while pending:  # a view may read another: create what binds, until nothing more does
        failed = []
        for definition in pending:
            try:
                con.execute(definition.create)
            except duckdb.Error:
                failed.append(definition)
        if len(failed) == len(pending):
            dropped |= {(d.schema, d.name) for d in failed}
            break
        pending = failed
    for schema, name, why in sorted(unsafe):
        logger.warning("serving snapshot: dropped %s.%s, which %s", schema, name, why)


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _remove_stale(source: Path, current: Path) -> None:
    """Delete snapshots built from an older source (open readers keep their inode on POSIX).

    Snapshots of the current source for other allowlists are newer than it and are kept.
    """
    built_from = source.stat().st_mtime_ns
    for other in source.parent.glob(f"{source.stem}.serving-*.duckdb"):
        with contextlib.suppress(OSError):
            if other != current and other.stat().st_mtime_ns < built_from:
                other.unlink()
