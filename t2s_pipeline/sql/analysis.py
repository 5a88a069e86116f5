"""Everything the scorers need to know about one query, computed once.

``analyse_query`` parses, qualifies against the live schema and reads off the output columns
(with their origins), the required tables, the component sets and the canonical form.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from t2s_pipeline.scoring.components import ComponentSets
from t2s_pipeline.sql.canonical import canonical_from_qualified
from t2s_pipeline.sql.clean import top_clauses
from t2s_pipeline.sql.components import extract_components
from t2s_pipeline.sql.meaning import sort_keys
from t2s_pipeline.sql.parse import parse_one_query
from t2s_pipeline.sql.qualify import qualify_query
from t2s_pipeline.sql.render import render
from t2s_pipeline.sql.resolve import Resolver
from t2s_pipeline.sql.schema import Schema


@dataclass(frozen=True)
class OutputColumn:
    """One result column: its base column (when it is one) and its alias-free expression.

    ``origin`` is ``schema.table.column`` when the projection is a bare column reference,
    followed through aliases, CTEs and subqueries; otherwise None.
    """

    origin: str | None
    expression: str


@dataclass(frozen=True)
class QueryAnalysis:
    """The prepared form of one query; see SPEC sections 2, 4, 6.1 and 7."""

    sql: str
    dialect: str
    output_columns: tuple[OutputColumn, ...]
    required_tables: frozenset[str]
    components: ComponentSets
    canonical: str | None
    """The canonical form (``sql.canonical``); None when it was not asked for."""
    has_order_by: bool
    has_limit: bool
    order_keys: tuple[int, ...] | None = ()
    """The output columns (0-based) the outermost ORDER BY sorts by, in order; ``()`` when
    the outermost query has no ORDER BY, None when it sorts by something not in the output."""
    top_clauses: frozenset[str] = frozenset()
    """Its top-level LIMIT, OFFSET and ORDER BY (``sql.clean.top_clauses``): what cleaning a
    candidate against this query as the gold keeps."""


def analyse_query(sql: str, dialect: str, schema: Schema | None) -> QueryAnalysis:
    """Parse and analyse ``sql``; raises SqlAnalysisError when it does not parse.

    >>> analysis = analyse_query("SELECT o.id FROM sales.orders o", "duckdb", None)
    >>> analysis.output_columns, analysis.required_tables
    ((OutputColumn(origin='sales.orders.id', expression='orders.id'),), frozenset({'sales.orders'}))
    """
    # The parsed tree is ours alone, so qualification may work on it without a copy.
    return analyse_tree(parse_one_query(sql, dialect), dialect, schema, sql, copy=False)


def analyse_tree(
    tree: exp.Expr,
    dialect: str,
    schema: Schema | None,
    sql: str | None = None,
    copy: bool = True,
    canonical: bool = True,
) -> QueryAnalysis:
    """Analyse an already parsed (and possibly cleaned) query; ``tree`` is modified only when
    ``copy`` is False. Without ``canonical`` the canonical form (a pass over the whole tree
    that scoring does not read) is left out.

    >>> tree = parse_one_query("SELECT 1 AS one LIMIT 5", "duckdb")
    >>> analyse_tree(tree, "duckdb", None).has_limit
    True
    """
    sql = sql if sql is not None else render(tree, dialect)
    has_order_by = tree.args.get("order") is not None
    keys = order_keys(tree)
    has_limit = tree.args.get("limit") is not None
    clauses = top_clauses(tree)
    qualified = qualify_query(tree, dialect, schema, copy=copy)
    resolver = Resolver(qualified, dialect, schema)
    components = extract_components(resolver) if resolver.scopes else ComponentSets()
    output_columns = _output_columns(resolver)
    # Last, because it renames the qualified tree in place.
    canonical_text = (
        canonical_from_qualified(qualified, dialect, copy=False, scopes=resolver.scopes)
        if canonical
        else None
    )
    return QueryAnalysis(
        sql=sql,
        dialect=dialect,
        output_columns=output_columns,
        required_tables=components.tables,
        components=components,
        canonical=canonical_text,
        has_order_by=has_order_by,
        has_limit=has_limit,
        order_keys=keys,
        top_clauses=clauses,
    )


def order_keys(tree: exp.Expr) -> tuple[int, ...] | None:
    """The output positions the outermost ORDER BY sorts by (SPEC 8, ``auto`` order).

    A key is an output column when it is a position (``ORDER BY 2``), an output alias or
    name, or the same expression as a projection. ``()``: no ORDER BY; None: a key that is
    not in the output (rows tied on the output may then come in any order, unseen).

    >>> order_keys(parse_one_query("SELECT a, COUNT(*) AS n FROM t GROUP BY a "
    ...                            "ORDER BY COUNT(*) DESC, 1", "duckdb"))
    (1, 0)
    >>> order_keys(parse_one_query("SELECT a FROM t ORDER BY b", "duckdb")) is None
    True
    """
    order = tree.args.get("order")
    if order is None:
        return ()
    selects = tree.selects if isinstance(tree, exp.Query) else []
    if any(isinstance(s, exp.Star) or isinstance(s, exp.Column) and s.is_star for s in selects):
        return None
    positions: list[int] = []
    for ordered in sort_keys(order):
        position = _output_position(ordered.this, selects)
        if position is None:
            return None
        positions.append(position)
    return tuple(positions)


def _output_position(key: exp.Expr, selects: list[exp.Expr]) -> int | None:
    if isinstance(key, exp.Literal) and key.is_int:
        position = int(key.this) - 1
        return position if 0 <= position < len(selects) else None
    if isinstance(key, exp.Column) and not key.table:
        names = [s.alias_or_name for s in selects]
        if names.count(key.name) == 1:
            return names.index(key.name)
    bare = [s.unalias() for s in selects]
    matches = [i for i, projection in enumerate(bare) if projection == key]
    return matches[0] if len(matches) == 1 else None


def _output_columns(resolver: Resolver) -> tuple[OutputColumn, ...]:
    if not resolver.scopes:
        return ()
    branches = resolver.output_branches(resolver.root)
    if not branches:
        return ()
    width = len(branches[0].expression.expressions)
    return tuple(_output_column(resolver, branches, i) for i in range(width))


def _output_column(resolver: Resolver, branches: list[Scope], position: int) -> OutputColumn:
    """Column ``position`` across the branches of a set operation (one branch for a SELECT)."""
    origins = set()
    texts: list[str] = []
    for branch in branches:
        projections = branch.expression.expressions
        if position >= len(projections):
            continue
        origins.add(resolver.origin(projections[position], branch))
        text = resolver.text(projections[position])
        if text not in texts:
            texts.append(text)
    # A set-operation column has one origin only when every branch agrees on it.
    origin = origins.pop() if len(origins) == 1 else None
    return OutputColumn(origin=origin, expression=" | ".join(texts))
