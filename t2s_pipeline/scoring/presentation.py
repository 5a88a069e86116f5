"""Presentation (SPEC 11): the answer's data is right but shown differently.

When exact match fails, the two results are compared again after showing both the same way:
numbers at the reference's own precision, dates and months in one form, a fraction scaled to a
percentage (or back), one extra column of the candidate's or one missing descriptive column of
the reference's left out, rows in any order. The first view under which they are equal names
what differed, as findings; none means the data itself differs.

Each view is a full exact match (section 8) over the transformed values, so "equal" means the
same thing here as in EX. The views are tried only for results of at most ``MAX_ROWS`` rows and
``MAX_COLUMNS`` columns: beyond that the item is simply not called a presentation difference.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Hashable, Iterator
from dataclasses import dataclass

from t2s_pipeline.results import ResultSet, normalize_column_typed, round_float
from t2s_pipeline.scoring.encoding import Crosswalk, EncodedColumn, EncodedSide, encode_values
from t2s_pipeline.scoring.exact import exact_match

MAX_ROWS = 20_000
MAX_COLUMNS = 12
ORDER_FINDING = "rows in another order than the reference's ORDER BY"

Columns = list[list[Hashable]]


@dataclass(frozen=True)
class _View:
    """Both sides' normalised columns as one view shows them, and what the view changed."""

    reference: Columns
    candidate: Columns
    reference_names: tuple[str, ...]
    candidate_names: tuple[str, ...]
    findings: tuple[str, ...]


def presentation_findings(
    reference: ResultSet,
    candidate: ResultSet,
    *,
    ordered: bool,
    order_undetermined: bool = False,
    float_decimals: int = 6,
    permutation_bound: int = 5040,
) -> tuple[str, ...]:
    """What differs only in presentation, or ``()`` when the data differs (or is equal).

    ``order_undetermined``: the candidate leaves open an order the reference fixes (see
    ``exact_match``).

    >>> ref = ResultSet.from_names(["avg"], [[128.58]])
    >>> presentation_findings(ref, ResultSet.from_names(["a"], [[128.5804]]), ordered=False)
    ("values equal after rounding to the reference's 2 decimals",)
    >>> presentation_findings(ref, ResultSet.from_names(["a"], [[128.61]]), ordered=False)
    ()
    """
    if not _small(reference) or not _small(candidate) or reference.n_rows == 0:
        return ()
    plain = _View(
        reference.normalized_columns(float_decimals),
        candidate.normalized_columns(float_decimals),
        _names(reference),
        _names(candidate),
        (),
    )
    # A bare base column of whole numbers (an identifier such as order_id) describes a row.
    attributes = frozenset(i for i, c in enumerate(reference.columns) if c.origin is not None)
    encoded = _Encodings()
    for view in _views(plain, attributes):
        verdict = exact_match(
            Crosswalk(encoded.side(view.reference), encoded.side(view.candidate)),
            ordered=ordered,
            permutation_bound=permutation_bound,
            order_undetermined=order_undetermined,
        )
        if verdict.match:
            return view.findings
        if verdict.match_ignoring_order:
            return (*view.findings, ORDER_FINDING)
    return ()


def _small(result: ResultSet) -> bool:
    return result.n_rows <= MAX_ROWS and 0 < result.n_columns <= MAX_COLUMNS


def _names(result: ResultSet) -> tuple[str, ...]:
    return tuple(c.name or f"column {i + 1}" for i, c in enumerate(result.columns))


class _Encodings:
    """Each column of the views encoded once: a view shares every column it does not change
    with the view it comes from (the reference is the same list in nearly every view), so
    columns are kept by identity (the list is kept too, so its id is never reused)."""

    def __init__(self) -> None:
        self._kept: dict[int, tuple[list[Hashable], EncodedColumn]] = {}

    def side(self, columns: Columns) -> EncodedSide:
        """The columns encoded as :func:`~t2s_pipeline.scoring.encoding.encode` encodes the
        result set they make (values normalised again at 15 decimals)."""
        if len({len(column) for column in columns}) > 1:
            raise ValueError("the columns of a view differ in length")
        return EncodedSide(tuple(map(self._column, columns)), len(columns[0]) if columns else 0)

    def _column(self, column: list[Hashable]) -> EncodedColumn:
        kept = self._kept.get(id(column))
        if kept is None:
            kept = (column, encode_values(*normalize_column_typed(column, 15)))
            self._kept[id(column)] = kept
        return kept[1]


def _views(plain: _View, attributes: frozenset[int] = frozenset()) -> Iterator[_View]:
    """Plain first (only the row order may differ), then the formatted view, then each of them
    with one column rescaled, one extra candidate column dropped or one missing reference
    column dropped."""
    bases = [plain]
    formatted = _formatted(plain)
    if formatted is not None:
        bases.append(formatted)
    for base in bases:
        yield base
    for base in bases:
        yield from _rescaled(base)
        yield from _dropped(base, attributes)


def _formatted(view: _View) -> _View | None:
    """Numbers at the reference's precision and dates in one form; None if nothing changed."""
    findings: list[str] = []
    reference, candidate = view.reference, view.candidate
    decimals = _reference_decimals(reference)
    if decimals is not None:
        rounded = [[_round(v, decimals) for v in column] for column in candidate]
        if rounded != candidate:
            findings.append(f"values equal after rounding to the reference's {decimals} decimals")
            candidate = rounded
    months = _has_months(reference) or _has_months(candidate)
    shown_ref = [[_temporal(v, months) for v in column] for column in reference]
    shown_cand = [[_temporal(v, months) for v in column] for column in candidate]
    example = _first_change(candidate, shown_cand) or _first_change(reference, shown_ref)
    if example is not None:
        findings.append(f"a date or month shown in another form ({example[0]!r} is {example[1]!r})")
    if not findings:
        return None
    return _View(
        shown_ref,
        shown_cand,
        view.reference_names,
        view.candidate_names,
        (*view.findings, *findings),
    )


def _rescaled(view: _View) -> Iterator[_View]:
    decimals = _reference_decimals(view.reference) or 6
    for index, column in enumerate(view.candidate):
        if not any(_is_number(v) for v in column):
            continue
        for factor, shown, wanted in (
            (100.0, "fraction", "percentage"),
            (0.01, "percentage", "fraction"),
        ):
            scaled = [_scale(v, factor, decimals) for v in column]
            finding = (
                f"column {view.candidate_names[index]} is a {shown} where the reference shows "
                f"a {wanted} (x{factor:g})"
            )
            yield _View(
                view.reference,
                [*view.candidate[:index], scaled, *view.candidate[index + 1 :]],
                view.reference_names,
                view.candidate_names,
                (*view.findings, finding),
            )


def _dropped(view: _View, attributes: frozenset[int] = frozenset()) -> Iterator[_View]:
    """One extra candidate column, or one missing descriptive reference column: not numeric,
    or whole numbers read straight from a table column (``attributes``: an identifier)."""
    if len(view.candidate) == len(view.reference) + 1:
        for index in range(len(view.candidate)):
            yield _View(
                view.reference,
                _without(view.candidate, index),
                view.reference_names,
                view.candidate_names,
                (*view.findings, f"extra column {view.candidate_names[index]}"),
            )
    if len(view.reference) == len(view.candidate) + 1 and len(view.candidate) > 0:
        for index, column in enumerate(view.reference):
            numbers = [v for v in column if _is_number(v)]
            identifier = index in attributes and all(isinstance(v, int) for v in numbers)
            if numbers and not identifier:
                continue  # a missing measure is a wrong answer, not a presentation
            yield _View(
                _without(view.reference, index),
                view.candidate,
                view.reference_names,
                view.candidate_names,
                (*view.findings, f"missing descriptive column {view.reference_names[index]}"),
            )


def _without(columns: Columns, index: int) -> Columns:
    return [*columns[:index], *columns[index + 1 :]]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _reference_decimals(columns: Columns) -> int | None:
    """Most decimals any non-integral reference number shows; None if all are integral."""
    found = [_decimals(v) for column in columns for v in column if isinstance(v, float) and v % 1]
    return max(found) if found else None


def _decimals(value: float) -> int:
    exponent = decimal.Decimal(repr(value)).normalize().as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0


def _round(value: Hashable, decimals: int) -> Hashable:
    return round_float(value, decimals) if isinstance(value, float) else value


def _scale(value: Hashable, factor: float, decimals: int) -> Hashable:
    if not _is_number(value):
        return value
    return round_float(float(value) * factor, decimals)  # type: ignore[arg-type]


def _month(value: str) -> bool:
    if len(value) != 7 or value[4] != "-":  # what "%Y-%m" needs, before the slow parse
        return False
    try:
        dt.datetime.strptime(value, "%Y-%m")
    except ValueError:
        return False
    return True


def _has_months(columns: Columns) -> bool:
    return any(isinstance(v, str) and _month(v) for column in columns for v in column)


def _temporal(value: Hashable, months: bool) -> Hashable:
    """ISO dates and midnight timestamps as ``YYYY-MM-DD``; the first of a month as ``YYYY-MM``
    when either side shows months."""
    if not isinstance(value, str) or len(value) < 10 or _month(value):
        return value
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        return value
    if moment.time() != dt.time(0) or moment.tzinfo is not None:
        return value
    if months and moment.day == 1:
        return moment.strftime("%Y-%m")
    return moment.date().isoformat()


def _first_change(before: Columns, after: Columns) -> tuple[Hashable, Hashable] | None:
    for old_column, new_column in zip(before, after, strict=True):
        for old, new in zip(old_column, new_column, strict=True):
            if old != new:
                return old, new
    return None
