"""Parsing one query with sqlglot, with errors a user can act on."""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError

from t2s_pipeline.errors import SqlAnalysisError
from t2s_pipeline.sql.names import get_dialect


def parse_one_query(sql: str, dialect: str) -> exp.Expr:
    """Parse ``sql`` as exactly one read query (SELECT, WITH, set operation or VALUES).

    >>> parse_one_query("select 1 as x", "duckdb").sql()
    'SELECT 1 AS x'
    """
    get_dialect(dialect)
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except ParseError as error:
        raise SqlAnalysisError(f"cannot parse SQL as {dialect}: {_describe(error)}") from error
    except SqlglotError as error:
        raise SqlAnalysisError(f"cannot parse SQL as {dialect}: {error}") from error
    if len(statements) != 1:
        raise SqlAnalysisError(
            f"expected exactly one SQL statement, found {len(statements)}: "
            "send a single query without extra statements"
        )
    tree = statements[0]
    if not isinstance(tree, exp.Query | exp.Values):
        raise SqlAnalysisError(
            f"expected a read query (SELECT, WITH, UNION, VALUES), found {tree.key.upper()}"
        )
    return tree


def _describe(error: ParseError) -> str:
    """The first parse error with its position, without sqlglot's terminal colour codes."""
    if not error.errors:
        return str(error)
    first = error.errors[0]
    return f"{first.get('description')} (line {first.get('line')}, column {first.get('col')})"
