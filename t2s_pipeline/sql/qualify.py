"""Qualification against the live schema: every column becomes ``table.column``, ``*`` expands.

Identifiers are folded by the dialect's rules and then quoted only where the dialect needs it,
so ``"Orders"`` and ``orders`` read the same in DuckDB and differently in PostgreSQL.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import traverse_scope, walk_in_scope

from t2s_pipeline.errors import SqlAnalysisError
from t2s_pipeline.sql.names import get_dialect
from t2s_pipeline.sql.schema import Schema


def qualify_query(
    tree: exp.Expr, dialect: str, schema: Schema | None, copy: bool = True
) -> exp.Expr:
    """A qualified copy of ``tree`` (``tree`` itself when ``copy`` is False); degrades to what
    can be qualified without the schema.

    >>> from t2s_pipeline.sql.parse import parse_one_query
    >>> schema = Schema({"sales": {"orders": {"id": "INT", "amount": "DOUBLE"}}}, "duckdb")
    >>> tree = parse_one_query("SELECT * FROM Orders o", "duckdb")
    >>> qualify_query(tree, "duckdb", schema).sql()
    'SELECT o.id AS id, o.amount AS amount FROM sales.orders AS o'
    """
    # A schema that disagrees with the query (a missing table, an ambiguous name) must not stop
    # the analysis: each fallback qualifies less, the last only names the tables.
    attempts = (
        _Attempt(schema),
        _Attempt(None, expand_alias_refs=False),
        _Attempt(None, expand_alias_refs=False, qualify_columns=False),
    )
    for attempt in attempts:
        try:
            # Without a copy a failed attempt leaves part of its work done; every step of
            # qualification preserves meaning, so the next attempt can start from there.
            qualified = _qualify(tree.copy() if copy else tree, dialect, attempt)
        except (SqlglotError, AssertionError):
            # sqlglot asserts where it cannot scope a construct (a DuckDB PIVOT statement:
            # "PIVOT (...) is not Selectable"); that is a query it cannot qualify, not a crash.
            continue
        return _quote_where_needed(qualified, dialect)
    raise SqlAnalysisError(f"cannot qualify the query against the {dialect} schema")


@dataclass(frozen=True)
class _Attempt:
    schema: Schema | None
    expand_alias_refs: bool = True
    qualify_columns: bool = True


def _qualify(tree: exp.Expr, dialect: str, attempt: _Attempt) -> exp.Expr:
    schema = attempt.schema
    unknown: list[exp.Table] = []

    def attach_schema(table: exp.Table) -> None:
        if not isinstance(table.this, exp.Identifier):
            return
        if schema is not None and not table.db:
            db = schema.resolve_schema_name(table.name)
            if db is not None:
                table.set("db", exp.to_identifier(db))
        if schema is None or not schema.has_table(table.db, table.name):
            unknown.append(table)

    qualified = qualify(
        tree,
        dialect=dialect,
        schema=schema.mapping_schema() if schema is not None else None,
        validate_qualify_columns=False,
        quote_identifiers=False,
        on_qualify=attach_schema,
        expand_alias_refs=attempt.expand_alias_refs,
        qualify_columns=attempt.qualify_columns,
    )
    return _attach_sole_source(qualified) if unknown else qualified


def _attach_sole_source(tree: exp.Expr) -> exp.Expr:
    """Qualify columns of unknown tables when a scope reads exactly one source.

    Subquery scopes are skipped: an unqualified name there may belong to the outer query.
    """
    for scope in traverse_scope(tree):
        if scope.is_subquery or len(scope.selected_sources) != 1:
            continue
        (alias,) = scope.selected_sources
        outputs = {p.alias_or_name for p in getattr(scope.expression, "expressions", [])}
        for column in walk_in_scope(scope.expression):
            if (
                not isinstance(column, exp.Column)
                or column.table
                or isinstance(column.this, exp.Star)
            ):
                continue
            if not _names_output(column, outputs):
                column.set("table", exp.to_identifier(alias))
    return tree


def _names_output(column: exp.Column, outputs: set[str]) -> bool:
    """An ORDER BY term that names an output column refers to that column, not a table's."""
    clause = column.find_ancestor(exp.Order, exp.Select)
    return column.name in outputs and isinstance(clause, exp.Order)


def _quote_where_needed(tree: exp.Expr, dialect: str) -> exp.Expr:
    """Drop quotes the dialect does not need, so quoting style never changes a rendering."""
    engine = get_dialect(dialect)
    for node in tree.walk():
        if isinstance(node, exp.Identifier) and node.quoted:
            node.set("quoted", False)
            engine.quote_identifier(node, identify=False)
    return tree
