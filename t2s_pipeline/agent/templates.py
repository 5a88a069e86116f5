"""Reusing a retrieved example's SQL when the example is the same question with other literals.

Both questions are read the same way (:func:`read_question` over the same offered tables).
When the two plans have the same shape (measure, grain, tables, filter columns and operators,
window, ordering) and differ only in filter values or the top-k cut, the example's SQL is
taken and its literals swapped: "How many orders were cancelled?" answered by the example
"How many orders were returned?" keeps the example's own conventions (aliases, rounding,
formatting). Anything else is not close, and the agent composes its own SQL.
"""

from __future__ import annotations

from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from t2s_pipeline.agent.dates import is_date_text
from t2s_pipeline.agent.plan import Plan


def adapt(sql: str, example: Plan, wanted: Plan, dialect: str) -> str | None:
    """The example's SQL turned into an answer for ``wanted``, or None when not close.

    >>> from t2s_pipeline.agent.knowledge import ColumnInfo
    >>> from t2s_pipeline.agent.plan import Condition, Measure
    >>> status = ColumnInfo("sales.orders", "status_cd", "VARCHAR")
    >>> plan = lambda v: Plan(("sales.orders",), (Measure("count"),), (), (Condition(status, "=", (v,)),))
    >>> adapt("SELECT COUNT(*) FROM sales.orders WHERE status_cd = 'returned'",
    ...       plan("returned"), plan("cancelled"), "duckdb")
    "SELECT COUNT(*) FROM sales.orders WHERE status_cd = 'cancelled'"
    """
    if example.shape != wanted.shape:
        return None
    swaps = _swaps(example, wanted)
    if swaps is None:
        return None
    parsed = example_tree(sql, dialect)
    if parsed is None or not explains(parsed, example):
        return None
    if not swaps and example.limit == wanted.limit:
        return sql
    tree = parsed.copy()  # the parsed example is shared by every question it comes back for
    for old, new in swaps:
        if not _swap_literal(tree, old, new):
            return None
    if example.limit != wanted.limit:
        limit = tree.args.get("limit")
        if not isinstance(limit, exp.Limit) or wanted.limit is None:
            return None
        limit.set("expression", exp.Literal.number(wanted.limit))
    return tree.sql(dialect=dialect, copy=False)  # a copy made for this answer alone


@lru_cache(maxsize=8192)
def example_tree(sql: str, dialect: str) -> exp.Expr | None:
    """An example's SQL parsed once, for templates and for the house style
    (:func:`t2s_pipeline.agent.compose.conventions`); never changed: :func:`adapt` edits a
    copy."""
    try:
        return sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return None


_BEYOND_A_PLAN = (
    exp.Subquery,
    exp.CTE,
    exp.Case,
    exp.Window,
    exp.Union,
    exp.Having,
    exp.If,
    exp.Filter,
)
_AGGREGATES = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max"}


def explains(tree: exp.Expr, plan: Plan) -> bool:
    """Whether the plan read from an example's question accounts for its SQL: the same
    tables, every text literal a filter value of the plan, the same aggregates, group-by and
    limit, and nothing a plan cannot say (subqueries, CASE, window functions, HAVING). Only
    then is the example a template and not a coincidence of two misreadings.

    >>> from t2s_pipeline.agent.plan import Measure
    >>> tree = sqlglot.parse_one("SELECT COUNT(*) FROM sales.orders WHERE status_cd = 'placed'")
    >>> explains(tree, Plan(("sales.orders",), (Measure("count"),)))
    False
    """
    if tree.find(*_BEYOND_A_PLAN) is not None:  # one walk for every kind
        return False
    if not isinstance(tree, exp.Select):
        return False
    if len(tree.expressions) != len(plan.groups) + len(plan.measures):
        return False
    tables = {f"{t.db}.{t.name}" if t.db else t.name for t in tree.find_all(exp.Table)}
    if tables != set(plan.tables):
        return False
    said = {str(v) for c in plan.conditions for v in c.values}
    for literal in tree.find_all(exp.Literal):
        if literal.is_string and not is_date_text(literal.this) and literal.this not in said:
            return False
    kinds = {
        name
        for node in tree.find_all(*_AGGREGATES)
        for node_type, name in _AGGREGATES.items()
        if isinstance(node, node_type)
    }
    wanted = {m.func for m in plan.measures if m.func in _AGGREGATES.values()}
    if kinds != wanted:
        return False
    if bool(tree.args.get("group")) != (bool(plan.groups) and plan.aggregated):
        return False
    return bool(tree.args.get("limit")) == (plan.limit is not None)


def _swaps(example: Plan, wanted: Plan) -> list[tuple[object, object]] | None:
    """Pairs (old literal, new literal) between conditions of the same shape."""
    mine = sorted(example.conditions, key=lambda c: c.shape)
    theirs = sorted(wanted.conditions, key=lambda c: c.shape)
    swaps: list[tuple[object, object]] = []
    for old, new in zip(mine, theirs, strict=True):
        if set(old.values) == set(new.values):
            continue
        if any(isinstance(v, bool) for v in (*old.values, *new.values)):
            return None  # a flag is written as a predicate, not a literal
        swaps.extend(zip(old.values, new.values, strict=True))
    return swaps


def _swap_literal(tree: exp.Expr, old: object, new: object) -> bool:
    found = False
    for literal in list(tree.find_all(exp.Literal)):
        if literal.is_string == isinstance(old, str) and literal.this == str(old):
            literal.replace(
                exp.Literal.string(str(new)) if isinstance(new, str) else exp.Literal.number(new)
            )
            found = True
    return found
