"""Row bounds: the serving path's appended LIMIT and the capped fetch of every path.

The serving path appends ``LIMIT n + 1`` (built with sqlglot) to a top-level query that has no
LIMIT or FETCH, then returns at most ``n`` rows: the extra row only tells whether the limit cut
the result, so ``truncated`` is exact. Every path fetches at most ``cap`` rows plus one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel

_LIMITABLE = (exp.Select, exp.SetOperation)


def with_row_limit(sql: str, dialect: str, row_limit: int) -> str:
    """``sql`` with ``LIMIT row_limit + 1`` appended when its top-level query has no limit.

    Anything the rewrite cannot handle (unparseable text, several statements, a statement that
    is not a SELECT or set operation, or one sqlglot cannot write back in the dialect without
    losing part of it) is returned unchanged: the capped fetch still bounds it.

    >>> with_row_limit("SELECT a FROM t ORDER BY a", "duckdb", 1000)
    'SELECT a FROM t ORDER BY a LIMIT 1001'
    >>> with_row_limit("SELECT a FROM t LIMIT 5", "duckdb", 1000)
    'SELECT a FROM t LIMIT 5'
    >>> with_row_limit("SELECT * FROM (VALUES (1)) AS v(id)", "sqlite", 1000)  # would drop (id)
    'SELECT * FROM (VALUES (1)) AS v(id)'
    """
    try:
        parsed = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except sqlglot.errors.SqlglotError:
        return sql
    if len(parsed) != 1 or not isinstance(parsed[0], _LIMITABLE):
        return sql
    query = parsed[0]
    if query.args.get("limit") is not None or query.args.get("fetch") is not None:
        return sql
    try:
        return query.limit(row_limit + 1).sql(dialect=dialect, unsupported_level=ErrorLevel.RAISE)
    except sqlglot.errors.UnsupportedError:
        return sql


def fetch_capped(
    fetchmany: Callable[[int], Sequence[Any]],
    fetchall: Callable[[], Sequence[Any]],
    cap: int | None,
) -> tuple[list[tuple[Any, ...]], bool]:
    """At most ``cap`` rows and whether more were there, reading ``cap + 1`` rows at most.

    >>> rows = [(i,) for i in range(5)]
    >>> fetch_capped(lambda n: rows[:n], lambda: rows, 3)
    ([(0,), (1,), (2,)], True)
    """
    if cap is None:
        return [tuple(row) for row in fetchall()], False
    rows = [tuple(row) for row in fetchmany(cap + 1)]
    return rows[:cap], len(rows) > cap
