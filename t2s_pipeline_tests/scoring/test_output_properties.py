"""Invariants of the output family and exact match, checked on generated result sets."""

from __future__ import annotations

import decimal
import itertools
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from t2s_pipeline.results import Column, ResultSet, normalize_value
from t2s_pipeline.scoring.output import (
    OutputScore,
    OutputSettings,
    Pair,
    results_match,
    score_output,
)

# Small pools so that values collide often: that is where pairing, keys and shelves get hard.
_VALUES = st.one_of(
    st.integers(0, 3),
    st.sampled_from([0.5, 1.0, 2.0000000001, None, float("nan"), True, False, "a", "b"]),
    st.sampled_from([decimal.Decimal("1.00"), decimal.Decimal("0.50")]),
)
_FAST = settings(max_examples=120, deadline=None)


@st.composite
def result_sets(draw: st.DrawFn, width: int | None = None, values: Any = _VALUES) -> ResultSet:
    """A result set of 1-4 columns and 0-9 rows (column names are irrelevant to scoring)."""
    n_columns = width if width is not None else draw(st.integers(1, 4))
    n_rows = draw(st.integers(0, 9))
    rows = [tuple(draw(values) for _ in range(n_columns)) for _ in range(n_rows)]
    return ResultSet(tuple(Column() for _ in range(n_columns)), rows)


# Two values per column: keys stay weak-ish and shelves hold several distinct rows.
_BITS = st.sampled_from([0, 1])


@st.composite
def related_pairs(draw: st.DrawFn, values: Any = _VALUES) -> tuple[ResultSet, ResultSet]:
    """A reference and a candidate derived from it: rows dropped, duplicated, edited, extra."""
    reference = draw(result_sets(values=values))
    rows = [list(r) for r in reference.rows if draw(st.booleans()) or draw(st.booleans())]
    rows += [list(r) for r in reference.rows if not draw(st.integers(0, 4))]
    for row in rows:
        if not draw(st.integers(0, 3)):
            row[draw(st.integers(0, len(row) - 1))] = draw(st.integers(0, 3))
    return reference, ResultSet(reference.columns, [tuple(r) for r in rows])


def _pairs_of_any_kind() -> st.SearchStrategy[tuple[ResultSet, ResultSet]]:
    return st.one_of(
        related_pairs(),
        related_pairs(_BITS),
        st.tuples(result_sets(), result_sets()),
    )


def _shuffled(result: ResultSet, order: Sequence[int]) -> ResultSet:
    return ResultSet(result.columns, [result.rows[i] for i in order])


def _columns_permuted(result: ResultSet, order: Sequence[int]) -> ResultSet:
    columns = tuple(result.columns[i] for i in order)
    return ResultSet(columns, [tuple(row[i] for i in order) for row in result.rows])


def _summary(score: OutputScore) -> tuple[Any, ...]:
    """Everything that must not depend on candidate column positions."""
    return (*score.metrics, score.exact_match, score.key, score.selectivity, score.matched_cells)


@_FAST
@given(_pairs_of_any_kind(), st.randoms(use_true_random=False))
def test_row_order_never_changes_the_score(pair: tuple[ResultSet, ResultSet], rnd: Any) -> None:
    """Result sets are bags of rows; the order a database returns them in is arbitrary."""
    reference, candidate = pair
    ref_order = list(range(reference.n_rows))
    cand_order = list(range(candidate.n_rows))
    rnd.shuffle(ref_order)
    rnd.shuffle(cand_order)
    shuffled = score_output(_shuffled(reference, ref_order), _shuffled(candidate, cand_order))
    assert shuffled == score_output(reference, candidate)


@st.composite
def distinguishable_pairs(draw: st.DrawFn) -> tuple[ResultSet, ResultSet]:
    """Columns over disjoint value domains, so no pairing tie is broken by position."""
    width = draw(st.integers(1, 4))
    domains = [st.sampled_from([f"{j}:{v}" for v in range(4)]) for j in range(width)]
    n_ref, n_cand = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    reference = [tuple(draw(d) for d in domains) for _ in range(n_ref)]
    candidate = [tuple(draw(d) for d in domains) for _ in range(n_cand)]
    columns = tuple(Column() for _ in range(width))
    return ResultSet(columns, reference), ResultSet(columns, candidate)


@_FAST
@given(distinguishable_pairs(), st.randoms(use_true_random=False))
def test_candidate_column_order_never_changes_the_metrics(
    pair: tuple[ResultSet, ResultSet], rnd: Any
) -> None:
    """Names and positions never pair columns (SPEC 6.1): moving columns changes nothing."""
    reference, candidate = pair
    order = list(range(candidate.n_columns))
    rnd.shuffle(order)
    moved = score_output(reference, _columns_permuted(candidate, order))
    assert _summary(moved) == _summary(score_output(reference, candidate))


@_FAST
@given(_pairs_of_any_kind(), st.randoms(use_true_random=False))
def test_exact_match_ignores_column_order_on_both_sides(
    pair: tuple[ResultSet, ResultSet], rnd: Any
) -> None:
    """SPEC 8 ignores column order; reordering either side must not flip EX."""
    reference, candidate = pair
    ref_order = list(range(reference.n_columns))
    cand_order = list(range(candidate.n_columns))
    rnd.shuffle(ref_order)
    rnd.shuffle(cand_order)
    moved = score_output(
        _columns_permuted(reference, ref_order), _columns_permuted(candidate, cand_order)
    )
    assert moved.exact_match == score_output(reference, candidate).exact_match


@_FAST
@given(_pairs_of_any_kind())
def test_exact_match_agrees_with_brute_force(pair: tuple[ResultSet, ResultSet]) -> None:
    """The signature-pruned search must decide exactly like trying every column permutation."""
    reference, candidate = pair
    assert score_output(reference, candidate).exact_match == _brute_exact(reference, candidate)


@_FAST
@given(_pairs_of_any_kind(), st.sampled_from([False, True, "auto"]))
def test_exact_match_alone_decides_as_the_full_score(
    pair: tuple[ResultSet, ResultSet], ordered: bool | str
) -> None:
    """``results_match`` (gold drift's check) skips the output family's work but must decide
    exact match as ``score_output`` does, whatever the order setting."""
    reference, candidate = pair
    settings = OutputSettings(ordered_compare=ordered)  # type: ignore[arg-type]
    full = score_output(reference, candidate, settings).exact_match
    assert results_match(reference, candidate, settings) == full


@_FAST
@given(result_sets())
def test_result_against_itself_is_exact_and_whole(result: ResultSet) -> None:
    """score(x, x): EX true; every metric 1.0 unless a constant column is left unpaired."""
    score = score_output(result, result)
    assert score.exact_match and not score.scorer_fault
    if result.n_rows == 0:
        assert score.metrics == (None, None, None, None)
        assert score.ceilings == ("empty_vs_empty",)
    elif result.n_rows == 1 or all(_distinct(result, j) >= 2 for j in range(result.n_columns)):
        assert score.metrics == (1.0, 1.0, 1.0, 1.0)
    else:
        assert "exact_but_partial" in score.ceilings


@_FAST
@given(_pairs_of_any_kind())
def test_every_metric_is_a_fraction_or_undefined(pair: tuple[ResultSet, ResultSet]) -> None:
    """Scores are proportions; a zero denominator is None (SPEC 10), never out of range."""
    score = score_output(*pair)
    for metric in (*score.metrics, score.selectivity):
        assert metric is None or 0.0 <= metric <= 1.0
    for each in score.pairs:
        assert 0.0 <= each.precision <= 1.0 and 0.0 <= each.recall <= 1.0


@_FAST
@given(_pairs_of_any_kind())
def test_cell_precision_over_recall_is_the_row_ratio(pair: tuple[ResultSet, ResultSet]) -> None:
    """Cells share a numerator, so P/R must equal reference rows / candidate rows (SPEC 6.4)."""
    reference, candidate = pair
    score = score_output(reference, candidate)
    if score.cells_precision and score.cells_recall:
        ratio = score.cells_precision / score.cells_recall
        assert abs(ratio - reference.n_rows / candidate.n_rows) < 1e-9


@_FAST
@given(_pairs_of_any_kind())
def test_duplicates_never_collect_a_reference_row_twice(
    pair: tuple[ResultSet, ResultSet],
) -> None:
    """A fan-out must not inflate recall: each reference row is used at most once."""
    reference, candidate = pair
    score = score_output(reference, candidate)
    width = len(score.pairs)
    assert score.matched_cells <= reference.n_rows * width
    assert score.matched_cells <= candidate.n_rows * width


@settings(max_examples=150, deadline=None)
@given(_pairs_of_any_kind(), st.integers(1, 4))
def test_matched_cells_agree_with_plain_hungarian(
    pair: tuple[ResultSet, ResultSet], shelf_bound: int
) -> None:
    """The shortcuts (exact rows first, one-row shelves, vectorised maxima) lose nothing."""
    reference, candidate = pair
    score = score_output(reference, candidate, OutputSettings(shelf_bound=shelf_bound))
    if not score.pairs or not reference.n_rows or not candidate.n_rows:
        return
    weak = "no_usable_key" in score.ceilings
    expected = _plain_cells(reference, candidate, score.pairs, score.key, shelf_bound, weak)
    assert score.matched_cells == expected


def _normal_rows(result: ResultSet) -> list[tuple[Hashable, ...]]:
    return [tuple(normalize_value(v) for v in row) for row in result.rows]


def _distinct(result: ResultSet, column: int) -> int:
    return len({row[column] for row in _normal_rows(result)})


def _brute_exact(reference: ResultSet, candidate: ResultSet) -> bool:
    if reference.n_columns != candidate.n_columns:
        return False
    wanted = Counter(_normal_rows(reference))
    rows = _normal_rows(candidate)
    for order in itertools.permutations(range(candidate.n_columns)):
        if Counter(tuple(row[i] for i in order) for row in rows) == wanted:
            return True
    return False


def _plain_cells(
    reference: ResultSet,
    candidate: ResultSet,
    pairs: Sequence[Pair],
    key: Sequence[int],
    shelf_bound: int,
    weak: bool,
) -> int:
    """SPEC 6.3 read literally: shelves, then Hungarian on every shelf, no shortcuts."""
    ref = [tuple(r[p.reference] for p in pairs) for r in _normal_rows(reference)]
    cand = [tuple(r[p.candidate] for p in pairs) for r in _normal_rows(candidate)]
    width = len(pairs)
    if weak:
        return width * _multiset(ref, cand)
    at = [i for i, p in enumerate(pairs) if p.reference in key]
    shelves: dict[tuple[Hashable, ...], tuple[list[Any], list[Any]]] = {}
    for row in ref:
        shelves.setdefault(tuple(row[i] for i in at), ([], []))[0].append(row)
    for row in cand:
        shelf = shelves.get(tuple(row[i] for i in at))
        if shelf is not None:
            shelf[1].append(row)
    total = 0
    for refs, cands in shelves.values():
        if len(refs) > shelf_bound or len(cands) > shelf_bound:
            total += width * _multiset(refs, cands)
        elif cands:
            weights = np.array(
                [[sum(a == b for a, b in zip(r, c, strict=True)) for c in cands] for r in refs]
            )
            rows, cols = linear_sum_assignment(weights, maximize=True)
            total += int(weights[rows, cols].sum())
    return total


def _multiset(left: Sequence[Any], right: Sequence[Any]) -> int:
    return sum((Counter(left) & Counter(right)).values())
