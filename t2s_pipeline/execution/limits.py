"""Row bounds: the serving path's appended LIMIT and the capped fetch of every path.

The serving path appends ``LIMIT n + 1`` to the text of a top-level query that has no LIMIT,
FETCH or OFFSET (sqlglot decides; the text is not regenerated), then returns at most ``n`` rows: the extra row only tells whether the limit cut
the result, so ``truncated`` is exact. Every path fetches at most ``cap`` rows plus one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType

_LIMITABLE = (exp.Select, exp.SetOperation)

MAX_NESTING = 256
"""The deepest parenthesis nesting served. Parsers recurse (sqlglot's, Python's own JSON reader,
some engines' binders), so deeper text is refused by the limits layer in every layer setting
rather than left to exhaust a stack; ordinary SQL stays far below (the legitimate corpus: 4)."""


def nesting_depth(sql: str) -> int:
    """The deepest parenthesis nesting of ``sql``, by DuckDB's tokenizer (strings and comments
    skipped; no recursion, so any depth is measured).

    >>> nesting_depth("SELECT ((1)), ')' -- (")
    2
    >>> nesting_depth("SELECT 'é', (((1)))"), nesting_depth("SELECT '\\ud800', ((1))")
    (3, 2)
    """
    try:
        tokens = duckdb.tokenize(sql)
        text = sql.encode("utf-8")  # the tokenizer's positions are byte offsets
    except (duckdb.Error, TypeError, UnicodeError):  # e.g. a lone surrogate: count every mark
        return _character_depth(sql)
    depth = deepest = 0
    for start, kind in tokens:
        if kind == duckdb.token_type.operator:
            mark = text[start : start + 1]
            depth += (mark == b"(") - (mark == b")")
            deepest = max(deepest, depth)
    return deepest


def _character_depth(sql: str) -> int:
    """Parenthesis depth counting every character (an over-estimate inside string literals)."""
    depth = deepest = 0
    for mark in sql:
        depth += (mark == "(") - (mark == ")")
        deepest = max(deepest, depth)
    return deepest


def with_row_limit(sql: str, dialect: str, row_limit: int) -> str:
    """``sql`` with ``LIMIT row_limit + 1`` appended when its top-level query has no limit.

    sqlglot only decides whether to append; the text itself is never regenerated (a rewrite can
    change what the statement means, e.g. sqlglot 30 drops the table qualifiers inside a DuckDB
    PIVOT, and the filter checked the text as written). The clause goes after the last token, so
    a trailing comment or semicolon cannot swallow it. Anything else (unparseable text, several
    statements, a statement that is not a SELECT or set operation, one with LIMIT, FETCH or
    OFFSET) is returned unchanged: the capped fetch still bounds it.

    >>> with_row_limit("SELECT a FROM t ORDER BY a -- newest first", "duckdb", 1000)
    'SELECT a FROM t ORDER BY a LIMIT 1001'
    >>> with_row_limit("SELECT a FROM t LIMIT 5", "duckdb", 1000)
    'SELECT a FROM t LIMIT 5'
    >>> with_row_limit("SELECT * FROM (VALUES (1)) AS v(id);", "sqlite", 1000)
    'SELECT * FROM (VALUES (1)) AS v(id) LIMIT 1001'
    """
    try:
        reader = Dialect.get_or_raise(dialect)
        every = reader.tokenize(sql)  # read once: the parse and the clause's place share it
        parsed = [s for s in reader.parser().parse(every, sql) if s is not None]
    except (sqlglot.errors.SqlglotError, RecursionError):  # deep nesting: the engine decides
        return sql
    tokens = [t for t in every if t.token_type != TokenType.SEMICOLON]
    if len(parsed) != 1 or not isinstance(parsed[0], _LIMITABLE) or not tokens:
        return sql
    query = parsed[0]
    if any(query.args.get(key) is not None for key in ("limit", "fetch", "offset")):
        return sql
    return f"{sql[: tokens[-1].end + 1]} LIMIT {row_limit + 1}"


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
