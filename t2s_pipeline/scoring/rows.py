"""Pairing rows and counting matched cells (SPEC 6.3).

Reference rows are grouped on *shelves* by key value; each candidate row visits the shelf of its
key. On a shelf, rows pair by maximum-weight assignment where the weight is the number of paired
columns whose values agree. Three facts keep this fast and bounded:

- a shelf with one reference row needs no assignment: its value is the best candidate's weight,
  computed for all such shelves at once with array operations;
- pairing identical rows first never lowers the optimum (if a candidate row equals reference
  row ``b``, every cell another row agrees on with both ``b`` and its partner is one it would
  also agree on after swapping), so exact duplicates are matched as multisets and only the
  rest goes to :func:`scipy.optimize.linear_sum_assignment`;
- shelves with more than ``shelf_bound`` rows on either side, and every shelf under a weak key,
  use whole-row multiset matching only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.optimize import linear_sum_assignment

from t2s_pipeline.scoring.columns import Pair
from t2s_pipeline.scoring.encoding import Crosswalk, EncodedSide, codes_of, row_ids
from t2s_pipeline.scoring.keys import Key

WEAK_KEY_SELECTIVITY = 0.5


@dataclass(frozen=True)
class RowMatch:
    """Matched cells over all paired columns, and the ceilings met on the way."""

    matched_cells: int
    ceilings: tuple[str, ...]


@dataclass(frozen=True)
class _Grid:
    """Paired columns as codes: reference codes, and candidate codes in reference terms."""

    reference: tuple[np.ndarray, ...]
    candidate: tuple[np.ndarray, ...]
    radices: tuple[int, ...]

    @property
    def width(self) -> int:
        return len(self.radices)

    @cached_property
    def reference_rows(self) -> np.ndarray:
        """The reference codes row-major: one gather fetches a whole row from one cache line."""
        return _row_major(self.reference, self.radices)

    @cached_property
    def candidate_rows(self) -> np.ndarray:
        """The candidate codes row-major (-1 where a value is absent from the reference)."""
        return _row_major(self.candidate, self.radices)


def _row_major(columns: tuple[np.ndarray, ...], radices: tuple[int, ...]) -> np.ndarray:
    dtype = np.int32 if max(radices, default=0) < 2**31 else np.int64
    rows = np.empty((len(columns[0]) if columns else 0, len(columns)), dtype=dtype)
    for j, codes in enumerate(columns):
        rows[:, j] = codes
    return rows


@dataclass(frozen=True)
class _Shelves:
    """Shelf number of every reference row and every candidate row (-1: no shelf)."""

    reference: np.ndarray
    candidate: np.ndarray
    count: int


def match_rows(
    pairs: Sequence[Pair],
    key: Key,
    reference: EncodedSide,
    crosswalk: Crosswalk,
    shelf_bound: int = 512,
) -> RowMatch:
    """Matched cells between the two result sets, given the column pairs and the row key."""
    grid = _grid(pairs, reference, crosswalk)
    if key.selectivity(reference.n_rows) < WEAK_KEY_SELECTIVITY:
        everything_r = np.arange(reference.n_rows)
        everything_c = np.arange(crosswalk.candidate.n_rows)
        exact = _multiset_matches(grid, everything_r, everything_c)[0]
        return RowMatch(grid.width * exact, ("no_usable_key",))
    shelves = _shelves(grid, key)
    return _match_on_shelves(grid, shelves, shelf_bound)


def _grid(pairs: Sequence[Pair], reference: EncodedSide, crosswalk: Crosswalk) -> _Grid:
    return _Grid(
        reference=tuple(reference.columns[p.reference].codes for p in pairs),
        candidate=tuple(crosswalk.candidate_codes(p.candidate, p.reference) for p in pairs),
        radices=tuple(reference.columns[p.reference].distinct for p in pairs),
    )


def _shelves(grid: _Grid, key: Key) -> _Shelves:
    """Number the distinct reference key values; candidate keys absent there get -1."""
    if len(key.pairs) == 1:
        (p,) = key.pairs
        return _Shelves(grid.reference[p], grid.candidate[p], grid.radices[p])
    a, b = key.pairs
    reference = grid.reference[a] * grid.radices[b] + grid.reference[b]
    known = (grid.candidate[a] >= 0) & (grid.candidate[b] >= 0)
    candidate = grid.candidate[a][known] * grid.radices[b] + grid.candidate[b][known]
    size = grid.radices[a] * grid.radices[b]
    if size <= 4 * (len(reference) + len(candidate)):  # a dense table numbers the values
        seen = np.bincount(reference, minlength=size) > 0
        number = np.where(seen, np.cumsum(seen) - 1, -1)
        ref_shelf, cand_known, count = number[reference], number[candidate], int(seen.sum())
    else:  # one hashing pass; codes follow first appearance, so reference values come first
        codes = codes_of(np.concatenate([reference, candidate]))
        ref_shelf, cand_known = codes[: len(reference)], codes[len(reference) :]
        count = int(ref_shelf.max()) + 1
        cand_known[cand_known >= count] = -1
    cand_shelf = np.full(len(known), -1, dtype=np.int64)
    cand_shelf[known] = cand_known
    return _Shelves(ref_shelf, cand_shelf, count)


def _match_on_shelves(grid: _Grid, shelves: _Shelves, shelf_bound: int) -> RowMatch:
    on_shelf = shelves.candidate >= 0
    ref_count = np.bincount(shelves.reference, minlength=shelves.count)
    cand_count = np.bincount(shelves.candidate[on_shelf], minlength=shelves.count)
    oversized = (ref_count > shelf_bound) | (cand_count > shelf_bound)
    simple = (ref_count == 1) & ~oversized
    crowded = ~simple & (cand_count > 0)
    matched = _single_reference_shelves(grid, shelves, simple)
    matched += _crowded_shelves(grid, shelves, crowded, oversized)
    ceilings = ("oversized_shelf",) if bool(np.any(oversized & (cand_count > 0))) else ()
    return RowMatch(matched, ceilings)


def _single_reference_shelves(grid: _Grid, shelves: _Shelves, simple: np.ndarray) -> int:
    """Shelves with one reference row: the best candidate row on the shelf takes it."""
    ref_row = np.full(shelves.count, -1, dtype=np.int64)
    ref_row[shelves.reference] = np.arange(len(shelves.reference))
    candidates = _rows_on(shelves.candidate, simple)
    shelf = shelves.candidate[candidates]
    return _best_per_shelf(grid, ref_row[shelf], candidates, shelf, shelves.count)


def _crowded_shelves(
    grid: _Grid, shelves: _Shelves, crowded: np.ndarray, oversized: np.ndarray
) -> int:
    """Shelves with several reference rows, or too many rows: multisets, then assignment."""
    ref_rows = _rows_on(shelves.reference, crowded)
    cand_rows = _rows_on(shelves.candidate, crowded)
    if not len(ref_rows) or not len(cand_rows):
        return 0
    exact, ref_left, cand_left = _multiset_matches(grid, ref_rows, cand_rows)
    ref_left = ref_left[~oversized[shelves.reference[ref_left]]]
    cand_left = cand_left[~oversized[shelves.candidate[cand_left]]]
    return grid.width * exact + _residual(grid, shelves, ref_left, cand_left)


def _residual(grid: _Grid, shelves: _Shelves, ref_rows: np.ndarray, cand_rows: np.ndarray) -> int:
    """Rows left after exact matches: one-row sides take a maximum, the rest an assignment."""
    ref_shelf = shelves.reference[ref_rows]
    cand_shelf = shelves.candidate[cand_rows]
    n_ref = np.bincount(ref_shelf, minlength=shelves.count)
    n_cand = np.bincount(cand_shelf, minlength=shelves.count)
    one_ref = (n_ref == 1) & (n_cand > 0)
    one_cand = (n_cand == 1) & (n_ref > 1)
    many = (n_ref > 1) & (n_cand > 1)
    total = _one_against_many(
        grid, shelves.count, ref_rows, ref_shelf, cand_rows, cand_shelf, one_ref
    )
    total += _one_against_many(
        grid, shelves.count, cand_rows, cand_shelf, ref_rows, ref_shelf, one_cand, flipped=True
    )
    return total + _assignments(grid, ref_rows, ref_shelf, cand_rows, cand_shelf, many)


def _one_against_many(
    grid: _Grid,
    count: int,
    single_rows: np.ndarray,
    single_shelf: np.ndarray,
    other_rows: np.ndarray,
    other_shelf: np.ndarray,
    chosen: np.ndarray,
    *,
    flipped: bool = False,
) -> int:
    """Shelves where one side has a single row: it pairs with its best partner."""
    single = np.full(count, -1, dtype=np.int64)
    keep = chosen[single_shelf]
    single[single_shelf[keep]] = single_rows[keep]
    others = chosen[other_shelf]
    shelf = other_shelf[others]
    partner = single[shelf]
    if flipped:
        return _best_per_shelf(grid, other_rows[others], partner, shelf, count)
    return _best_per_shelf(grid, partner, other_rows[others], shelf, count)


def _assignments(
    grid: _Grid,
    ref_rows: np.ndarray,
    ref_shelf: np.ndarray,
    cand_rows: np.ndarray,
    cand_shelf: np.ndarray,
    many: np.ndarray,
) -> int:
    """Maximum-weight assignment per shelf with several rows on both sides."""
    ref_groups = _group_by_shelf(ref_rows[many[ref_shelf]], ref_shelf[many[ref_shelf]])
    cand_groups = _group_by_shelf(cand_rows[many[cand_shelf]], cand_shelf[many[cand_shelf]])
    total = 0
    for shelf, refs in ref_groups.items():
        weights = _weight_matrix(grid, refs, cand_groups[shelf])
        rows, cols = linear_sum_assignment(weights, maximize=True)
        total += int(weights[rows, cols].sum())
    return total


def _group_by_shelf(rows: np.ndarray, shelf: np.ndarray) -> dict[int, np.ndarray]:
    if not len(shelf):
        return {}
    order = np.argsort(shelf, kind="stable")
    rows, shelf = rows[order], shelf[order]
    bounds = np.r_[np.flatnonzero(np.r_[True, shelf[1:] != shelf[:-1]]), len(shelf)]
    return {int(shelf[s]): rows[s:e] for s, e in zip(bounds[:-1], bounds[1:], strict=True)}


def _weight_matrix(grid: _Grid, ref_rows: np.ndarray, cand_rows: np.ndarray) -> np.ndarray:
    weights = np.zeros((len(ref_rows), len(cand_rows)), dtype=np.int64)
    for ref, cand in zip(grid.reference, grid.candidate, strict=True):
        weights += ref[ref_rows][:, None] == cand[cand_rows][None, :]
    return weights


def _weights(grid: _Grid, ref_rows: np.ndarray, cand_rows: np.ndarray) -> np.ndarray:
    """Agreeing paired cells of each (reference row, candidate row) pair, element-wise."""
    same = grid.reference_rows[ref_rows] == grid.candidate_rows[cand_rows]
    return same.sum(axis=1, dtype=np.int64)


def _best_per_shelf(
    grid: _Grid, ref_rows: np.ndarray, cand_rows: np.ndarray, shelf: np.ndarray, count: int
) -> int:
    if not len(shelf):
        return 0
    best = np.zeros(count, dtype=np.int64)
    np.maximum.at(best, shelf, _weights(grid, ref_rows, cand_rows))
    return int(best.sum())


def _rows_on(shelf_of_row: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """Rows whose shelf is chosen (rows without a shelf never are)."""
    on_shelf = shelf_of_row >= 0
    rows = np.flatnonzero(on_shelf)
    return rows[chosen[shelf_of_row[rows]]]


def _multiset_matches(
    grid: _Grid, ref_rows: np.ndarray, cand_rows: np.ndarray
) -> tuple[int, np.ndarray, np.ndarray]:
    """Whole-row multiset matches, plus the reference and candidate rows left unmatched."""
    # Shift by one so a candidate value absent from the reference (-1) can never match.
    columns = [
        np.concatenate([ref[ref_rows], cand[cand_rows]]) + 1
        for ref, cand in zip(grid.reference, grid.candidate, strict=True)
    ]
    ids = row_ids(columns, [r + 1 for r in grid.radices])
    ref_ids, cand_ids = ids[: len(ref_rows)], ids[len(ref_rows) :]
    size = int(ids.max()) + 1 if len(ids) else 0
    both = np.minimum(np.bincount(ref_ids, minlength=size), np.bincount(cand_ids, minlength=size))
    ref_left = ref_rows[_rank_within(ref_ids) >= both[ref_ids]]
    cand_left = cand_rows[_rank_within(cand_ids) >= both[cand_ids]]
    return int(both.sum()), ref_left, cand_left


def _rank_within(ids: np.ndarray) -> np.ndarray:
    """For each element, how many earlier elements share its id."""
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]] if len(ids) else np.zeros(0, dtype=bool)
    group_start = np.maximum.accumulate(np.where(starts, np.arange(len(ids)), 0))
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids)) - group_start
    return rank
