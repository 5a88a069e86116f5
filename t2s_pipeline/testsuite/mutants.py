"""Mutants of a gold query: small edits that change its meaning (issue 22, after Zhong et al.).

Each mutant is one edit of the reference query, the kind of near miss a text-to-SQL system
makes: a condition dropped or negated, a constant or a window shifted by one unit, ``<`` and
``<=`` swapped, another aggregate, DISTINCT dropped, another join type, a grouping column
dropped. A test suite is good when every mutant that differs in meaning returns other rows than
the reference on at least one of its databases.

>>> sorted({m.kind for m in mutate("SELECT COUNT(*) FROM t WHERE d >= DATE '2025-04-02'", "duckdb")})
['drop_condition', 'flip_comparison', 'negate_condition', 'shift_constant']
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.errors import SqlglotError

from t2s_pipeline.errors import SqlAnalysisError
from t2s_pipeline.sql.parse import parse_one_query

KINDS: tuple[str, ...] = (
    "drop_condition",
    "negate_condition",
    "shift_constant",
    "flip_comparison",
    "swap_aggregate",
    "drop_distinct",
    "change_join",
    "change_group_by",
)
_FLIPS: dict[type[exp.Expr], type[exp.Expr]] = {
    exp.GT: exp.GTE,
    exp.GTE: exp.GT,
    exp.LT: exp.LTE,
    exp.LTE: exp.LT,
}
_AGGREGATE_SWAPS: dict[type[exp.Expr], type[exp.Expr]] = {
    exp.Sum: exp.Avg,
    exp.Avg: exp.Sum,
    exp.Min: exp.Max,
    exp.Max: exp.Min,
}
_PREDICATES = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike,
               exp.In, exp.Between, exp.Is)  # fmt: skip
_DATE_TYPES = {exp.DataType.Type.DATE}
_TIMESTAMP_TYPES = {
    exp.DataType.Type.TIMESTAMP,
    exp.DataType.Type.TIMESTAMPNTZ,
    exp.DataType.Type.TIMESTAMPTZ,
    exp.DataType.Type.DATETIME,
}


@dataclass(frozen=True)
class Mutant:
    """One edit of the reference query: its class, what changed, and the edited SQL."""

    kind: str
    change: str
    sql: str


def mutate(sql: str, dialect: str) -> list[Mutant]:
    """Every mutant of ``sql`` (one edit each), distinct and different from the query's text.

    Raises SqlAnalysisError when ``sql`` cannot be parsed as one query.
    """
    tree = parse_one_query(sql, dialect)
    original = tree.sql(dialect=dialect)
    seen: set[str] = {original}
    mutants: list[Mutant] = []
    for index, node in enumerate(tree.walk()):
        for kind, edit in _EDITS:
            if not edit(node, apply=False):
                continue
            copy = tree.copy()
            target = _nth(copy, index)
            try:
                change = edit(target, apply=True)
                text = copy.sql(dialect=dialect)
            except (SqlglotError, ValueError, decimal.InvalidOperation):
                continue
            if isinstance(change, str) and text not in seen:
                seen.add(text)
                mutants.append(Mutant(kind, change, text))
    return mutants


def _nth(tree: exp.Expr, index: int) -> exp.Expr:
    for position, node in enumerate(tree.walk()):
        if position == index:
            return node
    raise SqlAnalysisError("mutation target vanished from the copied tree")


# --- the edits: each answers whether it applies (apply=False) or applies and says what it did


def _in_condition(node: exp.Expr) -> bool:
    """Whether ``node`` lies inside a WHERE, HAVING, QUALIFY or JOIN ... ON condition."""
    parent = node.parent
    while parent is not None:
        if isinstance(parent, exp.Where | exp.Having | exp.Qualify):
            return True
        if isinstance(parent, exp.Join):
            return node is parent.args.get("on")
        if isinstance(parent, exp.Query):
            return False
        node, parent = parent, parent.parent
    return False


def _is_conjunct(node: exp.Expr) -> bool:
    parent = node.parent
    if isinstance(parent, exp.And):
        return _in_condition(node)
    return isinstance(parent, exp.Where | exp.Having) and node is parent.this


def drop_condition(node: exp.Expr, apply: bool) -> str | bool:
    """Remove one conjunct of a WHERE, HAVING or JOIN condition (a whole WHERE if it is one)."""
    if isinstance(node, exp.And) or not _is_conjunct(node):
        return False
    if not apply:
        return True
    text = node.sql()
    parent = node.parent
    assert parent is not None
    if isinstance(parent, exp.And):
        other = parent.expression if node is parent.this else parent.this
        parent.replace(other.copy())
    elif isinstance(parent.parent, exp.Filter):
        # COUNT(*) FILTER (WHERE c) without its only condition is COUNT(*)
        parent.parent.replace(parent.parent.this.copy())
    else:
        parent.pop()
    return f"dropped condition {text}"


def negate_condition(node: exp.Expr, apply: bool) -> str | bool:
    """Negate one comparison of a WHERE, HAVING or JOIN condition."""
    if not isinstance(node, _PREDICATES) or isinstance(node.parent, exp.Not):
        return False
    if not _in_condition(node) or _joins_two_sources(node):
        return False
    if not apply:
        return True
    text = node.sql()
    node.replace(exp.Not(this=exp.Paren(this=node.copy())))
    return f"negated condition {text}"


def _joins_two_sources(node: exp.Expr) -> bool:
    """A column = column equality (a join key): negating it makes a near cross join."""
    return isinstance(node, exp.EQ) and all(
        isinstance(side, exp.Column) for side in (node.this, node.expression)
    )


def flip_comparison(node: exp.Expr, apply: bool) -> str | bool:
    """``<`` for ``<=`` (and back), ``>`` for ``>=``: an off-by-one boundary."""
    flipped = _FLIPS.get(type(node))
    if flipped is None or not _in_condition(node):
        return False
    if not apply:
        return True
    text = node.sql()
    node.replace(flipped(this=node.this.copy(), expression=node.expression.copy()))
    return f"flipped {text}"


def swap_aggregate(node: exp.Expr, apply: bool) -> str | bool:
    """SUM for AVG (and back), MIN for MAX, COUNT(x) for COUNT(DISTINCT x) (and back)."""
    if isinstance(node, exp.Count):
        argument = node.this
        if isinstance(argument, exp.Star) or argument is None:
            return False
        if not apply:
            return True
        text = node.sql()
        if isinstance(argument, exp.Distinct):
            if len(argument.expressions) != 1:
                raise ValueError("COUNT(DISTINCT a, b) has no plain COUNT")
            node.set("this", argument.expressions[0].copy())
        else:
            node.set("this", exp.Distinct(expressions=[argument.copy()]))
        return f"counted {node.sql()} where the reference has {text}"
    swapped = _AGGREGATE_SWAPS.get(type(node))
    if swapped is None or isinstance(node.parent, exp.Window):
        return False
    if not apply:
        return True
    text = node.sql()
    node.replace(swapped(this=node.this.copy()))
    return f"aggregated with {swapped.__name__.upper()} where the reference has {text}"


def drop_distinct(node: exp.Expr, apply: bool) -> str | bool:
    """SELECT DISTINCT ... as SELECT ...."""
    if not isinstance(node, exp.Select) or not node.args.get("distinct"):
        return False
    if not apply:
        return True
    node.set("distinct", None)
    return "dropped DISTINCT"


def change_join(node: exp.Expr, apply: bool) -> str | bool:
    """An inner join as a LEFT join, a LEFT join as an inner one."""
    if not isinstance(node, exp.Join) or node.args.get("kind") in ("CROSS", "SEMI", "ANTI"):
        return False
    side = (node.args.get("side") or "").upper()
    if side not in ("", "LEFT") or not (node.args.get("on") or node.args.get("using")):
        return False
    if not apply:
        return True
    node.set("side", None if side == "LEFT" else "LEFT")
    node.set("kind", None)
    table = node.this.sql()
    return f"joined {table} {'inner' if side == 'LEFT' else 'LEFT'} where the reference joins it {side or 'inner'}"


def change_group_by(node: exp.Expr, apply: bool) -> str | bool:
    """Drop one grouping column (and its place in the select list): a coarser grain."""
    group = node.parent
    if not isinstance(group, exp.Group) or len(group.expressions) < 2:
        return False
    select = group.parent
    if not isinstance(select, exp.Select) or not isinstance(node, exp.Column):
        return False
    shown = [e for e in select.expressions if _projects(e, node)]
    if len(shown) == len(select.expressions):
        return False
    if not apply:
        return True
    text = node.sql()
    for projection in shown:
        projection.pop()
    node.pop()
    return f"grouped without {text}"


def _projects(projection: exp.Expr, column: exp.Column) -> bool:
    inner = projection.this if isinstance(projection, exp.Alias) else projection
    return isinstance(inner, exp.Column) and inner.name == column.name


def shift_constant(node: exp.Expr, apply: bool) -> str | bool:
    """A number, date or interval in a condition or a LIMIT moved by one unit, both ways.

    One edit per direction is one mutant; the walk visits the literal once, so the second
    direction is produced by :func:`shift_constant_down`.
    """
    return _shift(node, apply, +1)


def shift_constant_down(node: exp.Expr, apply: bool) -> str | bool:
    return _shift(node, apply, -1)


def _shift(node: exp.Expr, apply: bool, direction: int) -> str | bool:
    if not isinstance(node, exp.Literal) or not _shiftable_place(node):
        return False
    shifted = _shifted_literal(node, direction)
    if shifted is None:
        return False
    if not apply:
        return True
    before = node.parent.sql() if isinstance(node.parent, exp.Cast) else node.sql()
    target = node.parent if isinstance(node.parent, exp.Cast) else node
    replacement = target.copy()
    literal = replacement.this if isinstance(replacement, exp.Cast) else replacement
    literal.set("this", shifted)
    target.replace(replacement)
    return f"shifted {before} to {replacement.sql()}"


def _shiftable_place(node: exp.Literal) -> bool:
    parent = node.parent
    if isinstance(parent, exp.Limit):
        return True
    if isinstance(parent, exp.Interval):
        return _in_condition(parent)
    if isinstance(parent, exp.Cast):
        return parent.to.this in _DATE_TYPES | _TIMESTAMP_TYPES and _in_condition(parent)
    return not node.is_string and _in_condition(node)


def _shifted_literal(node: exp.Literal, direction: int) -> str | None:
    text = str(node.this)
    parent = node.parent
    if isinstance(parent, exp.Cast):
        return _shift_temporal(text, parent.to.this in _DATE_TYPES, direction)
    try:
        value = decimal.Decimal(text.strip())
    except decimal.InvalidOperation:
        return None
    exponent = value.as_tuple().exponent
    unit = decimal.Decimal(1).scaleb(exponent if isinstance(exponent, int) else 0)
    shifted = value + direction * unit
    if isinstance(parent, exp.Limit | exp.Interval) and shifted < 1:
        return None
    return str(shifted)


def _shift_temporal(text: str, is_date: bool, direction: int) -> str | None:
    try:
        if is_date:
            return (dt.date.fromisoformat(text) + dt.timedelta(days=direction)).isoformat()
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    step = (
        dt.timedelta(days=direction)
        if moment.time() == dt.time()
        else dt.timedelta(seconds=direction)
    )
    return (moment + step).isoformat(sep=" ")


_EDITS: tuple[tuple[str, Callable[..., str | bool]], ...] = (
    ("drop_condition", drop_condition),
    ("negate_condition", negate_condition),
    ("shift_constant", shift_constant),
    ("shift_constant", shift_constant_down),
    ("flip_comparison", flip_comparison),
    ("swap_aggregate", swap_aggregate),
    ("drop_distinct", drop_distinct),
    ("change_join", change_join),
    ("change_group_by", change_group_by),
)
