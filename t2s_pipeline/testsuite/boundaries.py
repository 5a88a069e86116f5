"""The values gold queries compare columns with: where a neighbour's boundary rows go.

``created_on BETWEEN DATE '2025-04-02' AND DATE '2025-06-30'`` gives two boundaries on
``sales.customers.created_on``; ``o.order_date >= DATE '2025-06-30' - INTERVAL 30 DAY`` gives
one whose value the database works out (the expression is evaluated through the guarded
executor, as every harness query is).

>>> from t2s_pipeline.sql.schema import Schema
>>> schema = Schema({"sales": {"customers": {"created_on": "DATE"}}}, "duckdb")
>>> [t.column for t in boundary_terms(
...     "SELECT COUNT(*) FROM sales.customers WHERE created_on >= DATE '2025-04-02'",
...     "duckdb", schema)]
['created_on']
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from t2s_pipeline.sql.parse import parse_one_query
from t2s_pipeline.sql.qualify import qualify_query
from t2s_pipeline.sql.schema import Schema

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


@dataclass(frozen=True)
class Term:
    """One column compared with a constant expression (its SQL in the query's dialect)."""

    schema: str
    table: str
    column: str
    constant: str


def boundary_terms(sql: str, dialect: str, schema: Schema | None) -> list[Term]:
    """Every ``column <op> constant`` (and BETWEEN, IN) of ``sql`` whose column belongs to a
    base table; an unparsable query has none."""
    try:
        tree = qualify_query(parse_one_query(sql, dialect), dialect, schema)
        scopes = traverse_scope(tree)
    except Exception:  # noqa: BLE001 - a query that cannot be qualified has no boundaries
        return []
    terms: list[Term] = []
    for scope in scopes:
        for node in scope.expression.find_all(*_COMPARISONS, exp.Between, exp.In):
            for column, constant in _sides(node):
                source = scope.sources.get(column.table)
                if isinstance(source, exp.Table) and source.db:
                    terms.append(
                        Term(source.db, source.name, column.name, constant.sql(dialect=dialect))
                    )
    return list(dict.fromkeys(terms))


def _sides(node: exp.Expr) -> list[tuple[exp.Column, exp.Expr]]:
    if isinstance(node, exp.Between):
        if isinstance(node.this, exp.Column):
            return [(node.this, b) for b in (node.args["low"], node.args["high"]) if _constant(b)]
        return []
    if isinstance(node, exp.In):
        if isinstance(node.this, exp.Column) and not node.args.get("query"):
            return [(node.this, e) for e in node.expressions if _constant(e)]
        return []
    left, right = node.this, node.expression
    if isinstance(left, exp.Column) and _constant(right):
        return [(left, right)]
    if isinstance(right, exp.Column) and _constant(left):
        return [(right, left)]
    return []


def _constant(node: exp.Expr | None) -> bool:
    """An expression with no column and no subquery: the database can work out its value."""
    if node is None:
        return False
    return node.find(exp.Column, exp.Query, exp.Star, exp.Placeholder) is None


@dataclass(frozen=True)
class TopK:
    """A gold query's top-k cut over one base table: the query that returns that table's row
    at rank k (every column of the table), so a neighbour can add a tie right at the cut."""

    schema: str
    table: str
    kth_row: str


def top_k_cut(sql: str, dialect: str, schema: Schema | None) -> TopK | None:
    """The cut of ``... FROM t ... ORDER BY t.c LIMIT k`` (no grouping, DISTINCT or aggregate;
    the first sort key a column of a base table), or None.

    >>> from t2s_pipeline.sql.schema import Schema
    >>> schema = Schema({"sales": {"items": {"item_id": "VARCHAR", "list_price": "DOUBLE"}}}, "duckdb")
    >>> top_k_cut("SELECT item_id FROM sales.items ORDER BY list_price DESC LIMIT 5",
    ...           "duckdb", schema).kth_row
    'SELECT items.* FROM sales.items AS items ORDER BY items.list_price DESC LIMIT 1 OFFSET 4'
    """
    try:
        tree = qualify_query(parse_one_query(sql, dialect), dialect, schema)
    except Exception:  # noqa: BLE001 - an unreadable query has no cut
        return None
    if not isinstance(tree, exp.Select) or tree.args.get("group") or tree.args.get("distinct"):
        return None
    limit, order = tree.args.get("limit"), tree.args.get("order")
    count = limit.expression if isinstance(limit, exp.Limit) else None
    if order is None or not isinstance(count, exp.Literal) or count.is_string:
        return None
    if any(e.find(exp.AggFunc, exp.Window) for e in tree.expressions):
        return None
    first = _through_alias(order.expressions[0].this, tree)
    if not isinstance(first, exp.Column):
        return None
    scope = traverse_scope(tree)[-1]
    source = scope.sources.get(first.table)
    if not isinstance(source, exp.Table) or not source.db:
        return None
    k = int(count.this)
    kth = tree.copy()
    kth.set("expressions", [exp.Column(this=exp.Star(), table=exp.to_identifier(first.table))])
    kth.set("limit", exp.Limit(expression=exp.Literal.number(1)))
    kth.set("offset", exp.Offset(expression=exp.Literal.number(k - 1)))
    return TopK(source.db, source.name, kth.sql(dialect=dialect))


def _through_alias(node: exp.Expr, select: exp.Select) -> exp.Expr:
    """An ORDER BY name that is an output column's alias, read as what it names."""
    if isinstance(node, exp.Column) and not node.table:
        for projection in select.expressions:
            if isinstance(projection, exp.Alias) and projection.alias == node.name:
                return projection.this
    return node
