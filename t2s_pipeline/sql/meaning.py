"""The meaning of an expression: one normal form for spellings that mean the same (SPEC 7).

Works on a standalone, resolved copy (``Resolver.resolved``) so the query itself is never
touched. Before and after sqlglot's ``simplify`` (which turns ``BETWEEN`` into its two bounds
and pushes ``NOT`` into comparisons), a few rewrites that hold under SQL's three-valued logic:

- ``x = TRUE`` / ``x <> FALSE`` -> ``x``; ``x = FALSE`` / ``x <> TRUE`` -> ``NOT x``;
  ``NOT NOT x`` -> ``x``;
- ``a = 1 OR a = 2`` -> ``a IN (1, 2)``, and the values of every ``IN`` list sorted;
- a date-shaped string cast to a date or timestamp -> the string, when compared: the dialect
  applies that cast to the bare string anyway (``d >= DATE '2025-01-01'`` is
  ``d >= '2025-01-01'``);
- ``COUNT(1)`` (any non-NULL constant) -> ``COUNT(*)``;
- an ORDER BY item that only places NULLs (``CASE WHEN x IS NULL THEN 1 ELSE 0 END`` before
  ``x``, as written for engines without NULLS FIRST/LAST) is dropped, as in ``sort_keys``;
- ``AGG(x) FILTER (WHERE c)`` -> ``AGG(CASE WHEN c THEN x END)`` (how engines without FILTER
  spell it; ``COUNT(*) FILTER (WHERE c)`` -> ``COUNT(CASE WHEN c THEN 1 END)``);
- ``x NOT LIKE y`` -> ``NOT x LIKE y`` (sqlglot keeps the first as a flag of the LIKE).

Then ``render`` writes commutative operands in one order.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import operator
from collections.abc import Callable
from decimal import Decimal, InvalidOperation

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.simplify import simplify

from t2s_pipeline.sql.render import render

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between, exp.In)
_DATE_TYPES = frozenset(
    {exp.DataType.Type.DATE, exp.DataType.Type.TIMESTAMP, exp.DataType.Type.DATETIME}
)


def meaning_text(node: exp.Expr, dialect: str) -> str:
    """The normal form of a resolved expression, as comparable text.

    >>> import sqlglot
    >>> read = lambda sql: meaning_text(sqlglot.parse_one(sql, read="duckdb"), "duckdb")
    >>> read("i.is_active = FALSE") == read("NOT i.is_active")
    True
    >>> read("a = 2 OR 1 = a"), read("a BETWEEN 1 AND 5")
    ('a IN (1, 2)', 'a <= 5 AND a >= 1')
    >>> read("d >= DATE '2025-01-01'"), read("COUNT(1)")
    ("d >= '2025-01-01'", 'COUNT(*)')
    >>> read("COUNT(*) FILTER (WHERE s = 'x')"), read("SUM(a) FILTER (WHERE NOT b)")
    ("COUNT(CASE WHEN s = 'x' THEN 1 END)", 'SUM(CASE WHEN NOT b THEN a END)')
    """
    return render(normalise(node, dialect), dialect)


def normalise(node: exp.Expr, dialect: str, copy: bool = True) -> exp.Expr:
    """A normalised copy of ``node`` (the node itself is left as it is); without ``copy``,
    ``node`` itself is rewritten (for a standalone copy nobody else holds)."""
    tree = (node.copy() if copy else node).transform(_rewrite, copy=False)
    # Keep the rewritten form where simplify gives up: it is an improvement, not a requirement.
    with contextlib.suppress(SqlglotError, RecursionError, ValueError, TypeError):
        tree = simplify(tree, dialect=dialect)
    return tree.transform(_rewrite, copy=False)


def conjuncts(node: exp.Expr) -> list[exp.Expr]:
    """The top-level AND terms of a condition; a term that is simply TRUE adds nothing.

    >>> import sqlglot
    >>> [t.sql() for t in conjuncts(sqlglot.parse_one("(a = 1 AND TRUE) AND (b OR c)"))]
    ['a = 1', 'b OR c']
    """
    node = node.unnest()
    if isinstance(node, exp.And):
        return [term for part in node.flatten() for term in conjuncts(part)]
    if isinstance(node, exp.Boolean) and node.this is True:
        return []
    return [node]


def _rewrite(node: exp.Expr) -> exp.Expr:
    if isinstance(node, (exp.Like, exp.ILike)) and node.args.get("negate"):
        node.set("negate", None)  # sqlglot reads ``x NOT LIKE y`` as a negated LIKE
        return exp.Not(this=_rewrite(node))
    if isinstance(node, (exp.EQ, exp.NEQ)):
        return _boolean_comparison(node) or node
    if isinstance(node, exp.Not):
        inner = node.this.unnest()
        return inner.this if isinstance(inner, exp.Not) else node
    if isinstance(node, exp.Or):
        return _or_of_equalities(node) or node
    if isinstance(node, exp.In) and node.expressions:
        node.set("expressions", sorted(node.expressions, key=lambda e: e.sql()))
        return node
    if isinstance(node, exp.Cast) and isinstance(node.parent, _COMPARISONS):
        return _date_literal(node) or node
    if isinstance(node, exp.Literal) and not node.is_string:
        return _number(node)
    if isinstance(node, exp.Order):
        node.set("expressions", sort_keys(node))
        return node
    if isinstance(node, exp.Filter) and isinstance(node.this, exp.AggFunc):
        return filter_as_case(node) or node
    if isinstance(node, exp.Count):
        argument = node.this
        if isinstance(argument, exp.Literal) or (
            isinstance(argument, exp.Boolean) and argument.this is not None
        ):
            return exp.Count(this=exp.Star())
    return node


def filter_as_case(node: exp.Filter) -> exp.Expr | None:
    """``AGG(x) FILTER (WHERE c)`` -> ``AGG(CASE WHEN c THEN x END)``: the aggregate skips the
    NULLs the CASE gives the other rows, so it sees exactly the filtered rows' values
    (``COUNT(*)`` counts the rows: ``COUNT(CASE WHEN c THEN 1 END)``)."""
    aggregate, where = node.this, node.expression
    if not isinstance(where, exp.Where) or len([a for a in aggregate.args.values() if a]) > 2:
        return None
    argument = aggregate.this
    distinct = isinstance(argument, exp.Distinct) and len(argument.expressions) == 1
    value = argument.expressions[0] if distinct else argument
    if value is None or isinstance(value, exp.Star):
        value = exp.Literal.number(1)
    elif not isinstance(value, exp.Expr) or isinstance(argument, exp.Distinct) and not distinct:
        return None
    case = exp.Case(ifs=[exp.If(this=where.this, true=value)])
    aggregate.set("this", exp.Distinct(expressions=[case]) if distinct else case)
    return aggregate


def _number(node: exp.Literal) -> exp.Expr:
    """A numeric literal in one spelling: ``30.0`` and ``30`` are the same number.

    >>> _number(exp.Literal.number("30.0")).sql(), _number(exp.Literal.number("2.50")).sql()
    ('30', '2.5')
    """
    try:
        value = Decimal(str(node.this))
    except InvalidOperation:
        return node
    if not value.is_finite():
        return node
    text = format(value.normalize(), "f")
    return exp.Literal.number(text) if text != node.this else node


def _boolean_comparison(node: exp.EQ | exp.NEQ) -> exp.Expr | None:
    sides = (node.this, node.expression), (node.expression, node.this)
    for value, constant in sides:
        if isinstance(constant, exp.Boolean) and not isinstance(value, exp.Boolean):
            keeps = constant.this == isinstance(node, exp.EQ)
            return value if keeps else exp.Not(this=value)
    return None


def _or_of_equalities(node: exp.Or) -> exp.Expr | None:
    """``a = 1 OR a = 2 OR a IN (3)`` -> ``a IN (1, 2, 3)``; None unless every term is such."""
    subject: exp.Expr | None = None
    values: list[exp.Expr] = []
    for term in node.flatten():
        term = term.unnest()
        if isinstance(term, exp.EQ):
            pairs = [(term.this, term.expression), (term.expression, term.this)]
            found = [
                (s, v)
                for s, v in pairs
                if isinstance(v, exp.Literal) and not isinstance(s, exp.Literal)
            ]
            if not found:
                return None
            side, value = found[0]
            options = [value]
        elif isinstance(term, exp.In) and term.expressions and not term.args.get("query"):
            side, options = term.this, list(term.expressions)
        else:
            return None
        if subject is None:
            subject = side
        elif side != subject:
            return None
        values += options
    if subject is None:
        return None
    unique = {v.sql(): v for v in values}
    return exp.In(this=subject.copy(), expressions=[unique[k].copy() for k in sorted(unique)])


def _date_literal(node: exp.Cast) -> exp.Expr | None:
    target = node.args.get("to")
    value = node.this
    if not (isinstance(target, exp.DataType) and target.this in _DATE_TYPES):
        return None
    if not (isinstance(value, exp.Literal) and value.is_string):
        return None
    text = str(value.this)
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if target.this == exp.DataType.Type.DATE and (parsed.time() != dt.time() or len(text) > 10):
        return None
    return exp.Literal.string(text)


def sort_keys(
    order: exp.Expr | None, same: Callable[[exp.Expr, exp.Expr], bool] = operator.eq
) -> list[exp.Ordered]:
    """The ORDER BY items that sort, without those that only place NULLs.

    Where an engine cannot say NULLS FIRST/LAST, the placement is spelled as a sort item of
    its own just before the key (``CASE WHEN x IS NULL THEN 1 ELSE 0 END, x``, as sqlglot
    writes it for MySQL, or ``x IS NULL, x``); that item is part of the key, not another one.
    ``same`` tells whether two sort expressions are one (after qualification an output alias
    and its expression are).

    >>> import sqlglot
    >>> tree = sqlglot.parse_one("SELECT a FROM t ORDER BY CASE WHEN a IS NULL THEN 1 ELSE 0 "
    ...                          "END, a, b IS NULL, b DESC", read="mysql")
    >>> [o.sql() for o in sort_keys(tree.args["order"])]
    ['a', 'b DESC']
    """
    items = list(order.expressions) if order is not None else []
    return [
        item
        for i, item in enumerate(items)
        if not (
            i + 1 < len(items)
            and (placed := _null_placement(item.this)) is not None
            and same(placed, items[i + 1].this)
        )
    ]


def _null_placement(node: exp.Expr) -> exp.Expr | None:
    """``x`` when ``node`` is ``x IS NULL`` or ``CASE WHEN x IS NULL THEN 1 ELSE 0 END``."""
    ifs = node.args.get("ifs") or [] if isinstance(node, exp.Case) else []
    if len(ifs) == 1 and all(
        isinstance(v, exp.Literal) for v in (ifs[0].args.get("true"), node.args.get("default"))
    ):
        node = ifs[0].this
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        return node.this
    return None
