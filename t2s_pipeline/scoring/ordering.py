"""What row order an exact match may hold a candidate to (SPEC 8, ``ordered_compare: auto``).

When the reference sorts its outermost result, its rows are a sequence. The order of the
candidate's rows is fixed only as far as its own query fixes it; beyond that it is luck (a
hash aggregate, a parallel scan, MariaDB's sorted GROUP BY), and a verdict that depends on luck
differs between engines and between runs. So the comparison reads both queries' ORDER BY keys
(when they are output columns) and decides the same way whatever order the rows came in:

- rows **tied on the reference's keys** may come in either order on both sides (the
  reference's own order among them is luck too);
- rows **tied on the candidate's keys** (all of them, when it has no ORDER BY) may come in
  either order only where the reference does not order them either: where it does, the
  candidate leaves open an order the question fixes, and it does not match (its data may
  still be right: the diagnosis then says "rows in another order"). Rows that are all the
  same need no order.

Keys that are not output columns cannot be read off the rows: that side's rows are then
taken in the order they came.
"""

from __future__ import annotations

from collections.abc import Hashable
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


@dataclass(frozen=True)
class Arranged:
    """Both sides with tied rows in one canonical order, and whether the candidate leaves
    open an order the reference fixes."""

    reference: ResultSet
    candidate: ResultSet
    undetermined: bool = False


def arrange(
    reference: ResultSet, candidate: ResultSet, order: RowOrder, float_decimals: int = 6
) -> Arranged:
    """Sort the rows inside each of the reference's tie groups the same way on both sides
    (by a key that does not depend on column order, so equal rows line up whatever column
    assignment exact match finds); ``undetermined`` when a run of rows tied on the candidate's
    keys spans rows the reference orders.

    >>> ref = ResultSet.from_names(["c", "n"], [["FR", 91], ["NL", 91], ["IT", 85]])
    >>> cand = ResultSet.from_names(["c", "n"], [["NL", 91], ["FR", 91], ["IT", 85]])
    >>> arrange(ref, cand, RowOrder(reference=(1,), candidate=(1,))).candidate.rows
    [('FR', 91), ('NL', 91), ('IT', 85)]
    >>> arrange(ref, cand, RowOrder(reference=(1, 0), candidate=(1,))).undetermined
    True
    """
    n = reference.n_rows
    if n != candidate.n_rows or n < 2:
        return Arranged(reference, candidate)
    fixed = _starts(reference, order.reference, float_decimals)
    free = _starts(candidate, order.candidate, float_decimals)
    rows = list(zip(*candidate.normalized_columns(float_decimals), strict=True))
    for start, end in _runs(free):
        if any(fixed[start + 1 : end]) and len(set(rows[start:end])) > 1:
            return Arranged(reference, candidate, undetermined=True)
    if all(fixed[1:]):
        return Arranged(reference, candidate)
    return Arranged(
        _sorted_in_groups(reference, fixed, float_decimals),
        _sorted_in_groups(candidate, fixed, float_decimals),
    )


def _runs(starts: list[bool]) -> list[tuple[int, int]]:
    """The [start, end) ranges of the groups ``starts`` marks."""
    bounds = [i for i, new in enumerate(starts) if new or i == 0] + [len(starts)]
    return list(zip(bounds, bounds[1:], strict=False))


def _starts(result: ResultSet, keys: OrderKeys, float_decimals: int) -> list[bool]:
    """Per row, whether it starts a new tie group: every row when the keys are unknown (the
    rows stay as they came), only the first when there are none (one group)."""
    if keys is None or any(k >= result.n_columns for k in keys):
        return [True] * result.n_rows
    if not keys:
        return [i == 0 for i in range(result.n_rows)]
    columns = [normalize_column(result.column_values(k), float_decimals) for k in keys]
    values = list(zip(*columns, strict=True))
    return [i == 0 or values[i] != values[i - 1] for i in range(result.n_rows)]


def _sorted_in_groups(result: ResultSet, starts: list[bool], float_decimals: int) -> ResultSet:
    columns = result.normalized_columns(float_decimals)
    keys = [tuple(sorted(map(_text, row))) for row in zip(*columns, strict=True)]
    rows: list[tuple[object, ...]] = []
    for start, end in _runs(starts):
        rows += [result.rows[j] for j in sorted(range(start, end), key=keys.__getitem__)]
    return ResultSet(result.columns, rows)


def _text(value: Hashable) -> str:
    return f"{type(value).__name__}:{value!r}"
