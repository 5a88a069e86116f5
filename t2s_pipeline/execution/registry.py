"""Which engine serves a target: the built-in four, and engines installed as plugins.

An engine is an :class:`EngineSpec`: its name, the sqlglot dialect its SQL is analysed in,
whether a target (file path or URL) is its, how to open a
:class:`~t2s_pipeline.execution.engine.Backend` for a target under a guard, and the reader the
statement filter uses for its statements. A package adds one by exposing an ``EngineSpec`` in
the entry-point group ``t2s_pipeline.engines``::

    [project.entry-points."t2s_pipeline.engines"]
    snowflake = "t2s_snowflake:ENGINE"

docs/engines.md says what the backend must do and what its layers must prove (the hostile
suite and the legitimate corpus are the acceptance test). Plugins are asked before the
built-in engines, so a plugin may claim a URL scheme the built-ins do not know.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from t2s_pipeline.errors import ExecutionError
from t2s_pipeline.execution import schema_rows
from t2s_pipeline.execution.catalogue import Catalogue
from t2s_pipeline.execution.duckdb_engine import DuckDBBackend
from t2s_pipeline.execution.engine import (
    DUCKDB,
    MYSQL,
    POSTGRES,
    SQLITE,
    Backend,
    detect_engine,
)
from t2s_pipeline.execution.guard import Guard
from t2s_pipeline.execution.mysql_engine import MySQLBackend
from t2s_pipeline.execution.mysql_engine import mask_password as mysql_masked
from t2s_pipeline.execution.postgres_engine import PostgresBackend
from t2s_pipeline.execution.postgres_engine import mask_password as postgres_masked
from t2s_pipeline.execution.schema_rows import Row
from t2s_pipeline.execution.sqlite_engine import SQLiteBackend

ENTRY_POINT_GROUP = "t2s_pipeline.engines"
logger = logging.getLogger("t2s.engines")

Reader = Callable[[str, frozenset[str], Catalogue | None], None]
"""The filter's reading of one statement: returns, or raises ``Refused`` with the reason."""


@dataclass(frozen=True)
class EngineSpec:
    """One engine as the harness uses it."""

    name: str
    dialect: str
    claims: Callable[[str], bool]
    """Whether a target (a path or URL) belongs to this engine."""
    open: Callable[[str, Guard], Backend]
    """Open a backend for a target under a guard (raises ExecutionError when it cannot)."""
    open_catalog: Callable[[str], Any]
    """A read-only DB-API connection for reading the catalogue (never for case SQL)."""
    schema_rows: Callable[[Any], list[Row]]
    """Every ``(schema, table, column, type)`` the catalogue connection sees."""
    read: Reader | None = None
    """The filter's reader for a plugin engine (the built-in ones are wired in the filter)."""
    search_path: tuple[str, ...] = ("main",)
    """Where an unqualified table name resolves when the target does not say."""
    served_over_network: bool = False
    """A URL to a server (a password may be in it), not a file that must exist."""
    shown: Callable[[str], str] = str
    """The target as messages show it (a URL's password masked)."""
    only_schema: str | None = None
    """The one schema every table is in, when the engine has no others (SQLite: ``main``):
    tables are then named without it."""
    snapshot_hash: Callable[[str], str] | None = None
    """The pinned snapshot a target records (``domain.yaml``'s ``snapshot:`` is checked
    against it and stored with each run); None: the engine has no snapshots."""
    test_suites: bool = False
    """Whether test-suite accuracy can build neighbour databases from the target (copies of a
    DuckDB file)."""
    title: str = ""
    """The engine's name in messages ("PostgreSQL"); ``name`` when empty."""
    bare_double_quotes: bool = False
    """Whether a double-quoted name that is no column is read as a string (SQLite)."""


BUILT_IN: tuple[EngineSpec, ...] = (
    EngineSpec(POSTGRES, POSTGRES, lambda t: detect_engine(t) == POSTGRES, PostgresBackend,
               schema_rows.open_postgres, schema_rows.information_schema_rows,
               search_path=("public",), served_over_network=True, shown=postgres_masked,
               title="PostgreSQL"),
    EngineSpec(MYSQL, MYSQL, lambda t: detect_engine(t) == MYSQL, MySQLBackend,
               schema_rows.open_mysql, schema_rows.mysql_rows, search_path=(),
               served_over_network=True, shown=mysql_masked, title="MySQL"),
    EngineSpec(SQLITE, SQLITE, lambda t: detect_engine(t) == SQLITE, SQLiteBackend,
               schema_rows.open_sqlite, schema_rows.sqlite_rows, only_schema="main",
               bare_double_quotes=True, title="SQLite"),
    EngineSpec(DUCKDB, DUCKDB, lambda t: detect_engine(t) == DUCKDB, DuckDBBackend,
               schema_rows.open_duckdb, schema_rows.information_schema_rows,
               snapshot_hash=schema_rows.duckdb_snapshot_hash, test_suites=True, title="DuckDB"),
)  # fmt: skip


@functools.cache
def plugins() -> tuple[EngineSpec, ...]:
    """Engines installed under the entry-point group, in name order; a broken one is skipped
    with a warning naming its package and the error (it never hides the built-in engines)."""
    found = []
    for point in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        try:
            spec = point.load()
        except Exception as error:  # a plugin's import error must not stop the harness
            logger.warning("engine plugin %s (%s) cannot load: %s", point.name, point.value, error)
            continue
        if not isinstance(spec, EngineSpec):
            logger.warning("engine plugin %s (%s) is not an EngineSpec", point.name, point.value)
            continue
        found.append(spec)
    return tuple(found)


def engines() -> tuple[EngineSpec, ...]:
    """Every engine: plugins first, then the built-in ones."""
    return (*plugins(), *BUILT_IN)


def engine_for(target: str) -> EngineSpec:
    """The engine that claims ``target`` (DuckDB, the last built-in, claims any file)."""
    for spec in engines():
        if spec.claims(target):
            return spec
    raise ExecutionError(f"no engine claims {target!r}")  # unreachable with the built-ins


def engine_names() -> tuple[str, ...]:
    """The name of every installed engine, plugins first."""
    return tuple(spec.name for spec in engines())


def engine_named(name: str) -> EngineSpec:
    """The engine called ``name``.

    >>> engine_named("mysql").dialect
    'mysql'
    """
    for spec in engines():
        if spec.name == name:
            return spec
    known = [spec.name for spec in engines()]
    raise ExecutionError(f"unknown engine {name!r}; installed engines: {known}")


def engine_speaking(dialect: str) -> EngineSpec | None:
    """The first engine whose SQL is ``dialect``, or None.

    >>> engine_speaking("sqlite").bare_double_quotes
    True
    """
    return next((spec for spec in engines() if spec.dialect == dialect), None)


def default_search_path(dialect: str) -> tuple[str, ...]:
    """Where an unqualified table resolves in ``dialect`` when the target does not say.

    >>> default_search_path("postgres"), default_search_path("mysql")
    (('public',), ())
    """
    for spec in engines():
        if spec.dialect == dialect:
            return spec.search_path
    return ()


def open_backend(target: str, guard: Guard) -> Backend:
    """Open ``target`` with the engine that claims it."""
    return engine_for(target).open(target, guard)


def plugin_reader(dialect: str) -> Reader | None:
    """The filter reader a plugin engine registered for ``dialect``, if any."""
    for spec in plugins():
        if spec.dialect == dialect and spec.read is not None:
            return spec.read
    return None
