"""Integer codes for normalised values, so the scorer compares arrays instead of Python objects.

Each column of a result set is normalised (SPEC 6.5) and factorised once: every row gets the
code of its value and the column keeps its distinct values. A :class:`Crosswalk` translates a
candidate column's codes into a reference column's codes on demand (cached per column pair), and
:func:`row_ids` turns several code columns into one id per row. Pairing, keys, shelves and exact
match all work on these codes, which keeps per-cell Python work to the normalisation itself.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from t2s_pipeline.results import ResultSet, Struct, Truth

# Mixed-radix row ids are squeezed back to dense ids before they could overflow int64.
_ID_LIMIT = 2**62

_KIND_OF_TYPE: dict[type, str] = {
    int: "number",
    float: "number",
    str: "text",
    Truth: "boolean",
    type(None): "null",
    tuple: "list",
    Struct: "struct",
}


@dataclass(frozen=True)
class EncodedColumn:
    """One normalised column: a code per row and the distinct values the codes index."""

    codes: np.ndarray
    uniques: np.ndarray
    kinds: frozenset[str]

    @property
    def distinct(self) -> int:
        """Number of distinct normalised values (NULL counts as one value)."""
        return len(self.uniques)


@dataclass(frozen=True)
class EncodedSide:
    """A whole result set as code columns."""

    columns: tuple[EncodedColumn, ...]
    n_rows: int


def encode(result: ResultSet, float_decimals: int = 6) -> EncodedSide:
    """Normalise and factorise every column of ``result``.

    >>> side = encode(ResultSet.from_names(["a"], [[1], [1.0], [True]]))
    >>> side.columns[0].codes.tolist(), side.columns[0].distinct
    ([0, 0, 1], 2)
    """
    columns = tuple(encode_values(values) for values in result.normalized_columns(float_decimals))
    return EncodedSide(columns, result.n_rows)


def encode_values(values: Sequence[Hashable]) -> EncodedColumn:
    """Factorise one already-normalised column (NULL gets a code like any other value)."""
    array = _primitive_array(values)
    if array is None:
        array = np.fromiter(values, dtype=object, count=len(values))
    codes, found = pd.factorize(array)
    codes = codes.astype(np.int64, copy=False)
    # Back to Python objects, so values compare across columns exactly as normalised.
    uniques = np.asarray(found, dtype=object) if array.dtype == object else found.astype(object)
    nulls = codes < 0
    if nulls.any():
        codes[nulls] = len(uniques)
        uniques = np.append(uniques, np.array([None], dtype=object))
    kinds = frozenset(_KIND_OF_TYPE.get(t, "other") for t in set(map(type, uniques)))
    return EncodedColumn(codes, uniques, kinds)


def _primitive_array(values: Sequence[Hashable]) -> np.ndarray | None:
    """A machine-typed copy of an all-int or all-float column (no NULLs), else None.

    Hashing machine integers and floats is far cheaper and more cache-friendly than hashing
    Python objects, and factorising gives the same codes in the same order either way.
    """
    types = set(map(type, values))
    if types == {int}:
        try:
            return np.fromiter(values, dtype=np.int64, count=len(values))
        except OverflowError:  # beyond 64 bits: the object path handles any integer
            return None
    if types == {float}:
        # Adding 0.0 turns -0.0 into 0.0: they are one value (SPEC 6.5).
        return np.fromiter(values, dtype=np.float64, count=len(values)) + 0.0
    return None


def kinds_may_overlap(left: frozenset[str], right: frozenset[str]) -> bool:
    """False only when no value of one column can equal a value of the other."""
    return bool(left & right) or "other" in left or "other" in right


class Crosswalk:
    """Compares values across the two sides through one shared numbering of distinct values.

    Every distinct value of every column gets a *global id* (one factorisation of all the
    columns' distinct values), so overlaps and code translations are array lookups.
    """

    def __init__(self, reference: EncodedSide, candidate: EncodedSide) -> None:
        self.reference = reference
        self.candidate = candidate
        columns = reference.columns + candidate.columns
        everything = np.concatenate([c.uniques for c in columns]) if columns else np.zeros(0)
        ids = pd.factorize(everything)[0].astype(np.int64, copy=False)
        # Only NULL can take the sentinel; it gets its own id after the others.
        ids[ids < 0] = ids.max(initial=-1) + 1
        bounds = np.cumsum([0] + [c.distinct for c in columns])
        self._ids = [ids[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        self._scratch = np.full(int(ids.max(initial=-1)) + 1, -1, dtype=np.int64)
        self._tables: dict[tuple[int, int], np.ndarray] = {}

    def overlap(self, candidate: int, reference: int) -> int:
        """Size of the intersection of the two columns' distinct value sets."""
        cand = self.candidate.columns[candidate]
        ref = self.reference.columns[reference]
        if not kinds_may_overlap(cand.kinds, ref.kinds):
            return 0
        known = self._tables.get((candidate, reference))
        if known is None:  # not cached: most overlaps are asked once, during pairing
            known = self._translate(candidate, reference)
        return int(np.count_nonzero(known >= 0))

    def table(self, candidate: int, reference: int) -> np.ndarray:
        """For each distinct candidate value: its reference code, or -1 if absent there."""
        found = self._tables.get((candidate, reference))
        if found is None:
            found = self._translate(candidate, reference)
            self._tables[(candidate, reference)] = found
        return found

    def _translate(self, candidate: int, reference: int) -> np.ndarray:
        ref_ids = self._ids[reference]
        self._scratch[ref_ids] = np.arange(len(ref_ids))
        found = self._scratch[self._ids[len(self.reference.columns) + candidate]]
        self._scratch[ref_ids] = -1
        return found

    def candidate_codes(self, candidate: int, reference: int) -> np.ndarray:
        """The candidate column's rows expressed in the reference column's codes (-1: absent)."""
        return self.table(candidate, reference)[self.candidate.columns[candidate].codes]


def row_ids(columns: Sequence[np.ndarray], radices: Sequence[int]) -> np.ndarray:
    """Dense ids (0..k-1) such that two rows share an id exactly when all their codes agree.

    Codes in ``columns[i]`` must lie in ``[0, radices[i])``.

    >>> row_ids([np.array([0, 1, 0]), np.array([2, 2, 2])], [2, 3]).tolist()
    [0, 1, 0]
    """
    ids = np.zeros(len(columns[0]) if columns else 0, dtype=np.int64)
    bound = 1
    for codes, radix in zip(columns, radices, strict=True):
        if bound * max(radix, 1) >= _ID_LIMIT:
            ids, bound = dense_ids(ids)
        ids = ids * max(radix, 1) + codes
        bound *= max(radix, 1)
    return dense_ids(ids)[0]


def dense_ids(ids: np.ndarray) -> tuple[np.ndarray, int]:
    """Renumber ids to 0..k-1 in order of first appearance; returns the ids and k."""
    codes, uniques = pd.factorize(ids)
    return codes.astype(np.int64, copy=False), max(len(uniques), 1)
