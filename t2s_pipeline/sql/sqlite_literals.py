"""SQLite's double-quoted strings, made explicit.

SQLite reads ``"France"`` as a string when no column of that name is in scope (a legacy
behaviour Spider's and BIRD's gold queries rely on). sqlglot reads every double-quoted word as
an identifier, so the analysis would see ``country = "France"`` as a join between two columns.
Rewriting such words as ``'France'`` keeps the result SQLite computes and lets the component
family see a filter. Backquoted and bracketed names are always identifiers in SQLite, so they
are left alone.
"""

from __future__ import annotations

from sqlglot import exp

from t2s_pipeline.errors import SqlAnalysisError
from t2s_pipeline.sql.parse import parse_one_query


def literal_double_quotes(sql: str, columns: frozenset[str]) -> str:
    """``sql`` with every double-quoted word that names no column (nor output alias) as a
    string literal; ``sql`` unchanged, byte for byte, when there is none or it does not parse.

    ``columns`` are the database's column names, lower-cased.

    >>> literal_double_quotes('SELECT a FROM t WHERE b = "x"', frozenset({"a", "b"}))
    "SELECT a FROM t WHERE b = 'x'"
    >>> literal_double_quotes('SELECT "a", `x` FROM t', frozenset({"a"}))
    'SELECT "a", `x` FROM t'
    """
    if '"' not in sql:  # no double-quoted word at all: nothing to read, nothing to parse
        return sql
    try:
        tree = parse_one_query(sql, "sqlite")
    except SqlAnalysisError:
        return sql
    names = columns | {alias.alias.lower() for alias in tree.find_all(exp.Alias)}
    strings = [c for c in tree.find_all(exp.Column) if _is_string(c, sql, names)]
    if not strings:
        return sql
    for column in strings:
        column.replace(exp.Literal.string(column.name))
    return tree.sql(dialect="sqlite")


def _is_string(column: exp.Column, sql: str, names: frozenset[str]) -> bool:
    identifier = column.this
    return (
        not column.table
        and isinstance(identifier, exp.Identifier)
        and _double_quoted(identifier, sql)
        and identifier.name.lower() not in names
    )


def _double_quoted(identifier: exp.Identifier, sql: str) -> bool:
    """Written between double quotes in the source text (sqlglot keeps only 'quoted')."""
    start = identifier.meta.get("start")
    return (
        bool(identifier.args.get("quoted"))
        and isinstance(start, int)
        and sql[start : start + 1] == '"'
    )
