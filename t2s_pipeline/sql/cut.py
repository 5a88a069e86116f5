"""A top-k cut through a tie: which rows ``ORDER BY n DESC LIMIT 6`` keeps when the 6th and
the 7th row have the same ``n`` is luck (the engine's order among tied rows), so the verdict on
such a result would change between engines and between runs (SPEC 8).

The harness cannot see past the LIMIT, so it asks for one row more: :func:`cut_probe` writes
the query with its outermost LIMIT raised by one, the executor keeps the first ``k`` rows and
compares row ``k + 1`` with row ``k`` on the ORDER BY keys. Only a query whose outermost ORDER
BY keys are all output columns (``t2s_pipeline.sql.analysis.order_keys``), or that has no
ORDER BY at all (then any row could have been kept), and whose LIMIT is an integer literal is
probed; any other runs as written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from t2s_pipeline.errors import SqlAnalysisError
from t2s_pipeline.results import normalize_value
from t2s_pipeline.sql.analysis import order_keys
from t2s_pipeline.sql.names import get_dialect
from t2s_pipeline.sql.parse import parse_one_query


@dataclass(frozen=True)
class CutProbe:
    """The query asking for one row more than its LIMIT, and how to read the answer."""

    sql: str
    limit: int
    keys: tuple[int, ...]

    def read(self, rows: Sequence[tuple[Any, ...]]) -> tuple[list[tuple[Any, ...]], bool]:
        """The rows the original query returns, and whether its cut falls inside a tie.

        >>> probe = CutProbe("...", 2, (1,))
        >>> probe.read([("a", 9), ("b", 7), ("c", 7)])
        ([('a', 9), ('b', 7)], True)
        >>> probe.read([("a", 9), ("b", 7)])
        ([('a', 9), ('b', 7)], False)
        >>> CutProbe("...", 1, ()).read([("a", 1), ("b", 2)])
        ([('a', 1)], True)
        """
        kept = list(rows[: self.limit])
        if len(rows) <= self.limit or not kept:
            return kept, False
        last, next_ = kept[-1], rows[self.limit]
        if not self.keys:  # no ORDER BY: any row could have been kept, unless all are the same
            return kept, any(_normal(row) != _normal(next_) for row in kept)
        tied = all(normalize_value(last[k]) == normalize_value(next_[k]) for k in self.keys)
        return kept, tied


def _normal(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(normalize_value(v) for v in row)


def cut_probe(sql: str, dialect: str) -> CutProbe | None:
    """The probe for ``sql``, or None when its cut cannot be checked this way.

    >>> probe = cut_probe("SELECT a, COUNT(*) AS n FROM t GROUP BY a ORDER BY n DESC LIMIT 3",
    ...                   "duckdb")
    >>> probe.sql, probe.limit, probe.keys
    ('SELECT a, COUNT(*) AS n FROM t GROUP BY a ORDER BY n DESC LIMIT 4', 3, (1,))
    >>> cut_probe("SELECT a FROM t ORDER BY b LIMIT 3", "duckdb") is None
    True
    >>> cut_probe("SELECT a FROM t LIMIT 3", "duckdb").keys
    ()
    """
    if not _may_limit(sql, dialect):
        return None
    return parsed_cut_probe(sql, dialect)


_LIMITING = frozenset({TokenType.LIMIT, TokenType.TOP, TokenType.FETCH})


def _may_limit(sql: str, dialect: str) -> bool:
    """Whether sqlglot's tokens of ``sql`` include a LIMIT (or TOP, FETCH) anywhere: without
    one there is no cut to probe, and tokenizing costs about a third of parsing. Text the
    tokenizer rejects goes on to the parser, which decides."""
    try:
        tokens = get_dialect(dialect).tokenize(sql)
    except (SqlglotError, SqlAnalysisError):
        return True
    return any(token.token_type in _LIMITING for token in tokens)


def parsed_cut_probe(sql: str, dialect: str) -> CutProbe | None:
    """:func:`cut_probe` without its token check: every query parsed."""
    try:
        tree = parse_one_query(sql, dialect)
    except SqlAnalysisError:
        return None
    limit = tree.args.get("limit")
    count = limit.expression if isinstance(limit, exp.Limit) else None
    if not isinstance(count, exp.Literal) or not count.is_int or int(count.this) < 1:
        return None
    keys = order_keys(tree)
    if keys is None:
        return None
    k = int(count.this)
    count.replace(exp.Literal.number(k + 1))
    try:
        return CutProbe(tree.sql(dialect=dialect, copy=False), k, keys)  # parsed here alone
    except SqlglotError:
        return None
