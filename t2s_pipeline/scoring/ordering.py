"""What row order an exact match may hold a candidate to (SPEC 8, ``ordered_compare: auto``).

When the reference sorts its outermost result, its rows are a sequence. A candidate can only
be held to the part of that sequence its own query fixes:

- a candidate with no outermost ORDER BY returns its rows in no order: the engine's order is
  luck (a hash aggregate, a parallel scan, MariaDB's sorted GROUP BY), so such a candidate
  matches an ordered reference only when there is nothing to order (at most one distinct
  row). Without this, the same answer passes on one engine and fails on another.
- rows tied on either side's ORDER BY keys (when the keys are output columns) may come in
  either order: ``ORDER BY n DESC`` cannot promise which of two rows with the same ``n``
  comes first, so neither side is held to the other's order among them.

``arrange`` puts both sides' tied rows in one canonical order, so the sequence comparison that
follows sees only the order the queries fix.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from t2s_pipeline.results import ResultSet, normalize_column

OrderKeys = tuple[int, ...] | None
"""Output positions a query's outermost ORDER BY sorts by: ``()`` none, None not all in the
output (see ``t2s_pipeline.sql.analysis.order_keys``)."""


@dataclass(frozen=True)
class RowOrder:
    """The two queries' order keys, for a comparison in which row order counts."""

    reference: OrderKeys = None
    candidate: OrderKeys = None

    @property
    def candidate_unordered(self) -> bool:
        """The candidate query sets no order at all."""
        return self.candidate == ()


def arrange(
    reference: ResultSet, candidate: ResultSet, order: RowOrder, float_decimals: int = 6
) -> tuple[ResultSet, ResultSet]:
    """Both sides with the rows inside each tie group in one canonical order.

    A tie group is a run of positions over which neither side's key values change. Inside a
    group rows are sorted by a key that does not depend on column order (the row's sorted
    values), so equal rows line up whatever column assignment exact match finds.

    >>> ref = ResultSet.from_names(["c", "n"], [["FR", 91], ["NL", 91], ["IT", 85]])
    >>> cand = ResultSet.from_names(["c", "n"], [["NL", 91], ["FR", 91], ["IT", 85]])
    >>> arranged = arrange(ref, cand, RowOrder(reference=(1, 0), candidate=(1,)))
    >>> [r[0] for r in arranged[0].rows], [r[0] for r in arranged[1].rows]
    (['FR', 'NL', 'IT'], ['FR', 'NL', 'IT'])
    """
    n = reference.n_rows
    if n != candidate.n_rows or n < 2 or not order.candidate:
        return reference, candidate
    starts = _starts(candidate, order.candidate, float_decimals)
    if order.reference:
        fixed = _starts(reference, order.reference, float_decimals)
        starts = [a and b for a, b in zip(starts, fixed, strict=True)]
    if all(starts[1:]):
        return reference, candidate
    return (
        _sorted_in_groups(reference, starts, float_decimals),
        _sorted_in_groups(candidate, starts, float_decimals),
    )


def _starts(result: ResultSet, keys: Sequence[int], float_decimals: int) -> list[bool]:
    """Per row, whether its key values differ from the row before (a new tie group)."""
    if any(k >= result.n_columns for k in keys):
        return [True] * result.n_rows
    columns = [normalize_column(result.column_values(k), float_decimals) for k in keys]
    values = list(zip(*columns, strict=True))
    return [i == 0 or values[i] != values[i - 1] for i in range(result.n_rows)]


def _sorted_in_groups(result: ResultSet, starts: list[bool], float_decimals: int) -> ResultSet:
    columns = result.normalized_columns(float_decimals)
    keys = [tuple(sorted(map(_text, row))) for row in zip(*columns, strict=True)]
    rows: list[tuple[object, ...]] = []
    group: list[int] = []
    for i in range(result.n_rows + 1):
        if i == result.n_rows or starts[i]:
            rows += [result.rows[j] for j in sorted(group, key=keys.__getitem__)]
            group = []
        if i < result.n_rows:
            group.append(i)
    return ResultSet(result.columns, rows)


def _text(value: Hashable) -> str:
    return f"{type(value).__name__}:{value!r}"
