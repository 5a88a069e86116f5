"""One way to write an expression as a comparable string.

The dialect's own generator, with its handlers for a few node types replaced, writes
commutative conditions with their operands in one order (``a = 1`` and ``1 = a`` read the
same; ``1 < a`` reads ``a > 1``; the terms of ``AND``/``OR`` are sorted) and, when asked,
writes each column as a resolver says. Everything happens while writing, so no tree is copied
or rewritten. Arithmetic keeps its order because ``+`` is string concatenation in some
dialects.

The replacement goes through the generator instance's dispatch table (node type -> handler),
not a subclass: compiled sqlglot (``sqlglot[c]``) does not let Python classes inherit from its
generators. Pure-Python and compiled sqlglot both dispatch every node through that table.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from sqlglot import exp
from sqlglot.generator import Generator

from t2s_pipeline.sql.names import get_dialect

ColumnText = Callable[[exp.Column], "str | None"]
_Handler = Callable[[Generator, Any], str]

_SYMMETRIC: dict[type[exp.Expr], str] = {exp.EQ: "=", exp.NEQ: "<>"}
_MIRRORED: dict[type[exp.Expr], tuple[str, str]] = {
    exp.GT: (">", "<"),
    exp.LT: ("<", ">"),
    exp.GTE: (">=", "<="),
    exp.LTE: ("<=", ">="),
}
_CONSTANTS = (exp.Literal, exp.Null, exp.Boolean, exp.Placeholder)


def render(node: exp.Expr, dialect: str, column_text: ColumnText | None = None) -> str:
    """Canonical text of ``node``; ``column_text`` may replace how columns are written.

    >>> import sqlglot
    >>> render(sqlglot.parse_one("(2 = b OR 1 < a) AND c"), "duckdb")
    '(a > 1 OR b = 2) AND c'
    >>> render(sqlglot.parse_one("x = 1"), "duckdb", lambda column: "t.x")
    't.x = 1'
    """
    return make_generator(dialect, column_text).sql(node)


def make_generator(dialect: str, column_text: ColumnText | None = None) -> Generator:
    """A canonical generator for ``dialect``, reusable for many ``.sql(node)`` calls."""
    generator = get_dialect(dialect).generator(comments=False)
    dispatch = _canonical_dispatch(dialect)
    if column_text is not None:
        dispatch = {**dispatch, exp.Column: _column_handler(column_text, dispatch[exp.Column])}
    generator._dispatch = dispatch  # type: ignore[attr-defined]  # sqlglot's per-node table
    return generator


@cache
def _canonical_dispatch(dialect: str) -> dict[type[exp.Expr], _Handler]:
    """The dialect generator's dispatch table with the canonical handlers in place."""
    table: dict[type[exp.Expr], _Handler] = dict(
        get_dialect(dialect).generator()._dispatch  # type: ignore[attr-defined]
    )
    for kind in _SYMMETRIC:
        table[kind] = _symmetric
    for kind in _MIRRORED:
        table[kind] = _mirrored
    table[exp.And] = _and
    table[exp.Or] = _or
    return table


def _column_handler(column_text: ColumnText, original: _Handler) -> _Handler:
    def column(generator: Generator, expression: exp.Column) -> str:
        text = column_text(expression)
        return text if text is not None else original(generator, expression)

    return column


def _operands(generator: Generator, expression: exp.Expr) -> tuple[tuple[bool, str], ...]:
    # Constants sort last so the usual "column op value" order is the canonical one.
    left, right = expression.this, expression.expression
    return (
        (isinstance(left, _CONSTANTS), generator.sql(left)),
        (isinstance(right, _CONSTANTS), generator.sql(right)),
    )


def _symmetric(generator: Generator, expression: exp.Expr) -> str:
    left, right = sorted(_operands(generator, expression))
    return f"{left[1]} {_SYMMETRIC[type(expression)]} {right[1]}"


def _mirrored(generator: Generator, expression: exp.Expr) -> str:
    left, right = _operands(generator, expression)
    operator, mirror = _MIRRORED[type(expression)]
    if left <= right:
        return f"{left[1]} {operator} {right[1]}"
    return f"{right[1]} {mirror} {left[1]}"


def _and(generator: Generator, expression: exp.And) -> str:
    return _terms(generator, expression, "AND")


def _or(generator: Generator, expression: exp.Or) -> str:
    return _terms(generator, expression, "OR")


def _terms(generator: Generator, expression: exp.Connector, word: str) -> str:
    return f" {word} ".join(sorted(_term(generator, t) for t in _flatten(expression)))


def _term(generator: Generator, term: exp.Expr) -> str:
    # Flattening removed the parentheses around a nested connector; put them back.
    text = generator.sql(term)
    return f"({text})" if isinstance(term, exp.Connector) else text


def _flatten(node: exp.Connector) -> list[exp.Expr]:
    """``a AND (b AND c)`` gives ``[a, b, c]``, looking through parentheses."""
    terms: list[exp.Expr] = []
    stack: list[exp.Expr] = [node]
    while stack:
        current = stack.pop()
        for term in current.flatten():
            if type(term) is type(node):
                stack.append(term)
            else:
                terms.append(term)
    return terms
