"""One way to write an expression as a comparable string.

A generator derived from the dialect's own writes commutative conditions with their operands
in one order (``a = 1`` and ``1 = a`` read the same; ``1 < a`` reads ``a > 1``; the terms of
``AND``/``OR`` are sorted) and, when asked, writes each column as a resolver says. Everything
happens while writing, so no tree is copied or rewritten. Arithmetic keeps its order because
``+`` is string concatenation in some dialects.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from sqlglot import exp
from sqlglot.generator import Generator

from t2s_pipeline.sql.names import get_dialect

ColumnText = Callable[[exp.Column], "str | None"]

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
    """
    return make_generator(dialect, column_text).sql(node)


def make_generator(dialect: str, column_text: ColumnText | None = None) -> Generator:
    """A canonical generator for ``dialect``, reusable for many ``.sql(node)`` calls."""
    generator = _generator_class(dialect)(dialect=dialect, comments=False)
    generator.column_text = column_text  # type: ignore[attr-defined]
    return generator


@cache
def _generator_class(dialect: str) -> type[Generator]:
    base = type(get_dialect(dialect).generator())
    overridden = {exp.Column, exp.And, exp.Or, *_SYMMETRIC, *_MIRRORED}
    transforms = {k: v for k, v in base.TRANSFORMS.items() if k not in overridden}
    attributes = {"TRANSFORMS": transforms, "column_text": None}
    return type(f"Canonical{base.__name__}", (_CanonicalMixin, base), attributes)


class _CanonicalMixin:
    """Overrides mixed into a dialect's generator class (see ``_generator_class``)."""

    column_text: ColumnText | None

    if TYPE_CHECKING:  # provided by the generator this is mixed into

        def sql(self, expression: Any, key: str | None = None, comment: bool = True) -> str: ...

    def column_sql(self, expression: exp.Column) -> str:
        text = self.column_text(expression) if self.column_text is not None else None
        return text if text is not None else super().column_sql(expression)  # type: ignore[misc]

    def eq_sql(self, expression: exp.EQ) -> str:
        return self._symmetric(expression)

    def neq_sql(self, expression: exp.NEQ) -> str:
        return self._symmetric(expression)

    def gt_sql(self, expression: exp.GT) -> str:
        return self._mirrored(expression)

    def lt_sql(self, expression: exp.LT) -> str:
        return self._mirrored(expression)

    def gte_sql(self, expression: exp.GTE) -> str:
        return self._mirrored(expression)

    def lte_sql(self, expression: exp.LTE) -> str:
        return self._mirrored(expression)

    def and_sql(self, expression: exp.And, stack: list[Any] | None = None) -> str:
        return self._terms(expression, "AND")

    def or_sql(self, expression: exp.Or, stack: list[Any] | None = None) -> str:
        return self._terms(expression, "OR")

    def _operands(self, expression: exp.Expr) -> tuple[tuple[bool, str], tuple[bool, str]]:
        # Constants sort last so the usual "column op value" order is the canonical one.
        left, right = expression.this, expression.expression
        return (
            (isinstance(left, _CONSTANTS), self.sql(left)),
            (isinstance(right, _CONSTANTS), self.sql(right)),
        )

    def _symmetric(self, expression: exp.Expr) -> str:
        left, right = sorted(self._operands(expression))
        return f"{left[1]} {_SYMMETRIC[type(expression)]} {right[1]}"

    def _mirrored(self, expression: exp.Expr) -> str:
        left, right = self._operands(expression)
        operator, mirror = _MIRRORED[type(expression)]
        if left <= right:
            return f"{left[1]} {operator} {right[1]}"
        return f"{right[1]} {mirror} {left[1]}"

    def _terms(self, expression: exp.Connector, word: str) -> str:
        texts = sorted(self._term(term) for term in _flatten(expression))
        return f" {word} ".join(texts)

    def _term(self, term: exp.Expr) -> str:
        # Flattening removed the parentheses around a nested connector; put them back.
        text = self.sql(term)
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
