"""Case-folding of identifiers and table names by a dialect's rules.

Required tables, offered tables, origins and the live schema are compared as strings, so every
one of them passes through the same folding here.
"""

from __future__ import annotations

import functools

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError

from t2s_pipeline.errors import SqlAnalysisError


@functools.lru_cache(maxsize=8192)
def fold_catalog_name(name: str, dialect: str) -> str:
    """Fold a name read from a database catalog as that database resolves it.

    Catalog names are exact, so they are treated as quoted identifiers: DuckDB and SQLite
    ignore case even then, PostgreSQL keeps it.

    >>> fold_catalog_name("Orders", "duckdb"), fold_catalog_name("Orders", "postgres")
    ('orders', 'Orders')
    """
    identifier = exp.to_identifier(name, quoted=True)
    return get_dialect(dialect).normalize_identifier(identifier).name


def table_key(table: exp.Table) -> str:
    """``schema.table`` of an already normalised table node (just ``table`` if unqualified).

    >>> table_key(exp.to_table("sales.orders"))
    'sales.orders'
    """
    return f"{table.db}.{table.name}" if table.db else table.name


@functools.lru_cache(maxsize=8192)
def split_table_name(name: str, dialect: str) -> tuple[str, str]:
    """``(schema, table)`` of a catalog table name, folded as the database resolves it.

    Table names handed around (required tables, tables offered by a retriever) are catalog
    names, so each part is folded like a quoted identifier; the schema may be ``""``. The
    few names of a warehouse come back for every item, so each is read once (memoised).

    >>> split_table_name("Sales.Orders", "duckdb"), split_table_name("Sales.Orders", "postgres")
    (('sales', 'orders'), ('Sales', 'Orders'))
    """
    try:
        table = exp.to_table(name, dialect=dialect)
    except SqlglotError as error:
        raise SqlAnalysisError(f"cannot read table name {name!r}: {error}") from error
    return fold_catalog_name(table.db, dialect) if table.db else "", fold_catalog_name(
        table.name, dialect
    )


@functools.lru_cache(maxsize=64)
def get_dialect(dialect: str) -> Dialect:
    """The sqlglot dialect called ``dialect``, or a SqlAnalysisError naming the known ones.
    One instance per name, shared (sqlglot builds a new, stateless one on every call; a query's
    analysis asked for it about ten times).

    >>> type(get_dialect("duckdb")).__name__
    'DuckDB'
    """
    try:
        return Dialect.get_or_raise(dialect)
    except ValueError as error:
        raise SqlAnalysisError(
            f"unknown SQL dialect {dialect!r}: use a sqlglot dialect name such as "
            "'duckdb', 'postgres' or 'sqlite'"
        ) from error
