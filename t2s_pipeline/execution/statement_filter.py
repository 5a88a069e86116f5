"""Layer 1, the statement filter: one read-only query over allowlisted schemas, or a refusal.

The filter reads the statement **as the database will**, with the engine's own parser, and
fails closed on anything it cannot read (SPEC section 9):

- PostgreSQL: libpg_query through pglast (:mod:`~t2s_pipeline.execution.read_postgres`);
- DuckDB: DuckDB's parser through ``json_serialize_sql`` (:mod:`~.read_duckdb`);
- SQLite: SQLite's own compilation of ``EXPLAIN`` under an authorizer (:mod:`~.read_sqlite`);
- MySQL/MariaDB (no parser binding): sqlglot, failing closed on every construct the two could
  read differently, then the server's own reading of it in the backend (:mod:`~.read_mysql`).

Each reader allows exactly one query, functions from its engine's allowlist
(:mod:`~t2s_pipeline.execution.allowlists`) and relations that resolve, as the database
resolves them (:class:`~t2s_pipeline.execution.catalogue.Catalogue`), to allowlisted schemas.
sqlglot is not consulted: it is the tool for analysis, not for the security verdict, since any
construct it reads differently from the database would be a hole.

A statement longer than :data:`MAX_STATEMENT_CHARS` is refused unread. The filter is a pure
function of its inputs that never raises; verdicts are memoised.
"""

from __future__ import annotations

import functools

from t2s_pipeline.execution.catalogue import Catalogue
from t2s_pipeline.execution.engine import DUCKDB, MYSQL, POSTGRES, SQLITE
from t2s_pipeline.execution.guard import FILTER, Guard, Refusal
from t2s_pipeline.execution.policy import fold_schema_names
from t2s_pipeline.execution.read_duckdb import read_duckdb
from t2s_pipeline.execution.read_mysql import read_mysql
from t2s_pipeline.execution.read_postgres import read_postgres
from t2s_pipeline.execution.read_sqlite import read_sqlite
from t2s_pipeline.execution.reading import Refused
from t2s_pipeline.execution.registry import plugin_reader

MAX_STATEMENT_CHARS = 1_000_000
"""Longest statement the filter reads (about 1 MB): a longer one is refused without parsing,
so a huge IN-list costs nothing (a 6.9 MB one took 14.5 s to parse)."""


def check_statement(
    sql: str, guard: Guard, catalogue: Catalogue | None = None, schema_sql: tuple[str, ...] = ()
) -> Refusal | None:
    """The filter's verdict on one statement: ``None`` to let it through, else a Refusal.

    ``catalogue`` says how names resolve in the target (see :class:`StatementFilter`, which
    reads it from an open database); without it names resolve by the dialect's defaults.
    ``schema_sql`` is a SQLite target's schema, which SQLite compiles the statement against.

    >>> guard = Guard(allowed_schemas=("sales",))
    >>> check_statement("SELECT count(*) FROM sales.orders", guard) is None
    True
    >>> check_statement("SELECT * FROM hr.salaries", guard).reason
    "table hr.salaries is outside the allowlisted schemas ['sales']"
    """
    return _verdict(sql, str(guard.dialect), tuple(guard.allowed_schemas), catalogue, schema_sql)


class StatementFilter:
    """The filter bound to one target: its guard, catalogue and (SQLite) schema."""

    def __init__(
        self, guard: Guard, catalogue: Catalogue | None = None, schema_sql: tuple[str, ...] = ()
    ) -> None:
        self.guard = guard
        self.catalogue = catalogue
        self.schema_sql = schema_sql

    def check(self, sql: str) -> Refusal | None:
        """The verdict on ``sql`` for this target (None: let it through)."""
        return check_statement(sql, self.guard, self.catalogue, self.schema_sql)


def clear_verdict_cache() -> None:
    """Forget memoised verdicts (for benchmarks of the uncached path)."""
    _verdict.cache_clear()


@functools.lru_cache(maxsize=4096)
def _verdict(
    sql: str,
    dialect: str,
    allowed_schemas: tuple[str, ...],
    catalogue: Catalogue | None,
    schema_sql: tuple[str, ...],
) -> Refusal | None:
    if len(sql) > MAX_STATEMENT_CHARS:
        return _refuse(
            f"the statement is {len(sql):,} characters; the limit is {MAX_STATEMENT_CHARS:,}"
        )
    if "\x00" in sql:
        return _refuse("the statement contains a NUL byte: a C parser would read only part of it")
    allowed = fold_schema_names(allowed_schemas, dialect)
    try:
        if dialect == POSTGRES:
            read_postgres(sql, allowed, catalogue)
        elif dialect == DUCKDB:
            read_duckdb(sql, allowed, catalogue)
        elif dialect == SQLITE:
            read_sqlite(sql, allowed, catalogue, schema_sql)
        elif dialect == MYSQL:
            read_mysql(sql, allowed, catalogue)
        else:
            reader = plugin_reader(dialect)
            if reader is None:
                return _refuse(f"no reader for dialect {dialect!r}: no installed engine has one")
            reader(sql, allowed, catalogue)
    except Refused as refusal:
        return _refuse(str(refusal))
    except Exception as error:  # the filter never raises: anything unexpected refuses
        return _refuse(f"the filter could not read the statement: {type(error).__name__}: {error}")
    return None


def _refuse(reason: str) -> Refusal:
    return Refusal(layer=FILTER, reason=reason)
