"""Two-column row keys: shelves and key counts agree with plain Python grouping on both paths.

A small code space takes the dense-table path, a large one (radices inflated past four times
the rows) the hashing and sorting paths; each must group rows exactly as tuples of codes do.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from t2s_pipeline.scoring.columns import Pair
from t2s_pipeline.scoring.encoding import EncodedColumn, EncodedSide
from t2s_pipeline.scoring.keys import _key
from t2s_pipeline.scoring.rows import _Grid, _shelves

_CODES = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=30)
_CANDIDATE = st.lists(st.tuples(st.integers(-1, 5), st.integers(-1, 5)), max_size=30)


def _grid(
    reference: list[tuple[int, int]], candidate: list[tuple[int, int]], inflate: int
) -> _Grid:
    radices = (6 * inflate, 6 * inflate)  # every code below lies in [0, 6)
    return _Grid(
        reference=tuple(np.array([r[i] for r in reference], dtype=np.int64) for i in (0, 1)),
        candidate=tuple(np.array([c[i] for c in candidate], dtype=np.int64) for i in (0, 1)),
        radices=radices,
    )


@settings(max_examples=200, deadline=None)
@given(reference=_CODES, candidate=_CANDIDATE, inflate=st.sampled_from([1, 10**5]))
def test_two_column_shelves_group_rows_like_tuples(
    reference: list[tuple[int, int]], candidate: list[tuple[int, int]], inflate: int
) -> None:
    grid = _grid(reference, candidate, inflate)
    pairs = [Pair(0, 0, "values", 1.0, 1.0), Pair(1, 1, "values", 1.0, 1.0)]
    side = EncodedSide(
        tuple(
            EncodedColumn(codes, np.zeros(radix, dtype=object), frozenset({"number"}))
            for codes, radix in zip(grid.reference, grid.radices, strict=True)
        ),
        len(reference),
    )
    key = _key(side, pairs, (0, 1))
    shelves = _shelves(grid, key)

    assert key.distinct == shelves.count == len(set(reference))
    first: dict[tuple[int, int], int] = {}
    for row, shelf in zip(reference, shelves.reference.tolist(), strict=True):
        assert first.setdefault(row, shelf) == shelf  # equal rows share a shelf
    assert sorted(first.values()) == list(range(shelves.count))  # distinct rows do not
    for row, shelf in zip(candidate, shelves.candidate.tolist(), strict=True):
        assert shelf == first.get(row, -1)
