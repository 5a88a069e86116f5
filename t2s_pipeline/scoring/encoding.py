"""Integer codes for normalised values, so the scorer compares arrays instead of Python objects.

Each column of a result set is normalised (SPEC 6.5) and factorised once: every row gets the
code of its value and the column keeps its distinct values. A :class:`Crosswalk` translates a
candidate column's codes into a reference column's codes on demand (cached per column pair), and
:func:`row_ids` turns several code columns into one id per row. Pairing, keys, shelves and exact
match all work on these codes, which keeps per-cell Python work to the normalisation itself.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence, Set
from dataclasses import dataclass

import numpy as np
import pandas as pd

from t2s_pipeline.results import ResultSet, Struct, Truth, normalize_column_typed

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
    """One normalised column: a code per row and the distinct values the codes index.

    ``uniques`` holds Python objects with NULL (``None``) last when present. ``machine`` holds
    the same non-NULL values as an int64 or float64 array when the column has no other type,
    so cross-column work can hash machine numbers instead of Python objects.
    """

    codes: np.ndarray
    uniques: np.ndarray
    kinds: frozenset[str]
    machine: np.ndarray | None = None

    @property
    def distinct(self) -> int:
        """Number of distinct normalised values (NULL counts as one value)."""
        return len(self.uniques)

    @property
    def non_null(self) -> int:
        """Number of distinct values other than NULL (NULL is always the last unique)."""
        return len(self.uniques) - ("null" in self.kinds)


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
    result.check_width()
    columns = tuple(
        encode_values(*normalize_column_typed(result.column_values(i), float_decimals))
        for i in range(result.n_columns)
    )
    return EncodedSide(columns, result.n_rows)


def encode_values(values: Sequence[Hashable], types: Set[type] | None = None) -> EncodedColumn:
    """Factorise one already-normalised column (NULL gets a code like any other value).

    ``types`` is the set of Python types in ``values`` when the caller knows it already.

    >>> column = encode_values([3, None, 3, 7])
    >>> column.codes.tolist(), column.uniques.tolist(), column.machine.tolist()
    ([0, 2, 0, 1], [3, 7, None], [3, 7])
    """
    types = set(map(type, values)) if types is None else types
    if 0 < len(values) <= SMALL and types <= _SMALL_TYPES:
        return _encode_small(values, types)
    machine = _machine_array(values, types)
    if machine is None:
        array = np.fromiter(values, dtype=object, count=len(values))
        codes, found = pd.factorize(array)
        codes = codes.astype(np.int64, copy=False)
        uniques = np.asarray(found, dtype=object)
        found_machine = None
    else:
        numbers, nulls = machine
        if nulls is None:
            codes, found_machine = pd.factorize(numbers)
            codes = codes.astype(np.int64, copy=False)
        else:  # factorise the non-NULL rows; NULL rows take the sentinel below
            valid = ~nulls
            some, found_machine = pd.factorize(numbers[valid])
            codes = np.full(len(numbers), -1, dtype=np.int64)
            codes[valid] = some
        # Back to Python objects, so values compare across columns exactly as normalised.
        uniques = found_machine.astype(object)
    nulls_at = codes < 0
    if nulls_at.any():
        codes[nulls_at] = len(uniques)
        uniques = np.append(uniques, np.array([None], dtype=object))
    kinds = frozenset(_KIND_OF_TYPE.get(t, "other") for t in types)
    return EncodedColumn(codes, uniques, kinds, found_machine)


SMALL = 64
"""Columns of at most this many values are factorised with a dict: pandas' factorize costs
about 20 us a call whatever the size, more than hashing a few values (most result columns are
short: 10,000 items' output scoring called it 120,000 times)."""
_SMALL_TYPES = frozenset({int, float, str, Truth, type(None)})
"""Types a dict numbers as pandas' object hash table does (equal values, equal hashes); floats'
NaN is NULL to both. Tuples and structs (pandas equates NaN inside them) go to pandas."""


def _encode_small(values: Sequence[Hashable], types: Set[type]) -> EncodedColumn:
    """:func:`encode_values` by hand for a short column: the same codes (in order of first
    appearance, NULL last), uniques (the first of equal values, a machine column's as
    numbers) and machine array."""
    numbers = types - {type(None)}
    dtype = np.int64 if numbers == {int} else np.float64 if numbers == {float} else None
    if dtype is np.int64 and not all(
        _INT64_LOW <= v <= _INT64_HIGH for v in values if isinstance(v, int)
    ):
        dtype = None  # beyond 64 bits: compared as Python integers, as pandas does
    index: dict[Hashable, int] = {}
    codes = np.empty(len(values), dtype=np.int64)
    nulls = False
    for position, value in enumerate(values):
        if value is None or value != value:  # a float NaN is NULL too
            codes[position] = -1
            nulls = True
            continue
        if dtype is np.float64:
            value = value + 0.0  # type: ignore[operator]  # -0.0 is 0.0 (SPEC 6.5)
        codes[position] = index.setdefault(value, len(index))
    found = list(index)
    machine = None if dtype is None else np.array(found, dtype=dtype)
    uniques = np.empty(len(found), dtype=object)
    uniques[:] = found if machine is None else machine.astype(object)
    if nulls:
        codes[codes < 0] = len(uniques)
        uniques = np.append(uniques, np.array([None], dtype=object))
    kinds = frozenset(_KIND_OF_TYPE.get(t, "other") for t in types)
    return EncodedColumn(codes, uniques, kinds, machine)


_INT64_LOW, _INT64_HIGH = -(2**63), 2**63 - 1


def _machine_array(
    values: Sequence[Hashable], types: Set[type]
) -> tuple[np.ndarray, np.ndarray | None] | None:
    """A machine-typed copy of an all-int or all-float column and its NULL mask, else None.

    Hashing machine integers and floats is far cheaper and more cache-friendly than hashing
    Python objects, and factorising gives the same codes in the same order either way.
    """
    numbers = types - {type(None)}
    if numbers not in ({int}, {float}) or not values:
        return None
    dtype = np.int64 if numbers == {int} else np.float64
    try:
        if type(None) not in types:
            array = np.fromiter(values, dtype=dtype, count=len(values))
            nulls = None
        else:
            objects = np.fromiter(values, dtype=object, count=len(values))
            nulls = pd.isna(objects)
            objects[nulls] = 0
            array = objects.astype(dtype)
    except OverflowError:  # beyond 64 bits: the object path handles any integer
        return None
    # Adding 0.0 turns -0.0 into 0.0: they are one value (SPEC 6.5).
    return (array + 0.0 if dtype is np.float64 else array), nulls


def kinds_may_overlap(left: frozenset[str], right: frozenset[str]) -> bool:
    """False only when no value of one column can equal a value of the other."""
    return bool(left & right) or "other" in left or "other" in right


class Crosswalk:
    """Compares values across the two sides through one shared numbering of distinct values.

    Every distinct value of every column gets a *global id* (:func:`global_ids`: one numbering
    per kind of value), so overlaps and code translations are array lookups.
    """

    def __init__(self, reference: EncodedSide, candidate: EncodedSide) -> None:
        self.reference = reference
        self.candidate = candidate
        columns = reference.columns + candidate.columns
        self._ids = global_ids(columns)
        top = max((int(ids.max()) for ids in self._ids if len(ids)), default=-1)
        self._scratch = np.full(top + 1, -1, dtype=np.int64)
        self._tables: dict[tuple[int, int], np.ndarray] = {}

    def value_ids(self, side: int, index: int) -> np.ndarray:
        """Global ids of the distinct values of a column (side 0: reference, 1: candidate)."""
        return self._ids[index + side * len(self.reference.columns)]

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
        ref_ids = self.value_ids(0, reference)
        self._scratch[ref_ids] = np.arange(len(ref_ids))
        found = self._scratch[self.value_ids(1, candidate)]
        self._scratch[ref_ids] = -1
        return found

    def candidate_codes(self, candidate: int, reference: int) -> np.ndarray:
        """The candidate column's rows expressed in the reference column's codes (-1: absent)."""
        return self.table(candidate, reference)[self.candidate.columns[candidate].codes]


def global_ids(columns: Sequence[EncodedColumn]) -> list[np.ndarray]:
    """For each column, one id per distinct value, equal across columns exactly for equal values.

    Values of different kinds never compare equal (SPEC 6.5 normalisation makes the kinds
    disjoint), so each kind is numbered on its own: numbers as machine int64/float64 arrays
    when every number column has one, text and the rest as Python objects. A column mixing
    kinds, or holding values of a foreign type, sends everything through one object numbering.

    >>> a, b = encode_values([1, 2, None]), encode_values([2.0, 3.5])
    >>> [ids.tolist() for ids in global_ids([a, b, encode_values(["2"])])]
    [[0, 1, 4], [1, 2], [3]]
    """
    groups: dict[str, list[int]] = {}
    for position, column in enumerate(columns):
        kinds = column.kinds - {"null"}
        if len(kinds) > 1 or "other" in kinds:
            return _object_ids(columns)
        for kind in kinds:
            groups.setdefault(kind, []).append(position)
    ids = [np.empty(c.distinct, dtype=np.int64) for c in columns]
    offset = 0
    for kind in sorted(groups):
        members = [columns[p] for p in groups[kind]]
        numbered = _number_group(members) if kind == "number" else None
        if numbered is None:
            values = np.concatenate([c.uniques[: c.non_null] for c in members])
            numbered = codes_of(values)
        bounds = np.cumsum([0] + [c.non_null for c in members])
        for position, start, stop in zip(groups[kind], bounds[:-1], bounds[1:], strict=True):
            ids[position][: stop - start] = numbered[start:stop] + offset
        offset += int(numbered.max(initial=-1)) + 1
    for position, column in enumerate(columns):
        if "null" in column.kinds:
            ids[position][-1] = offset  # NULL: one id of its own, shared by every column
    return ids


# Integers up to 2**53 in magnitude are exactly representable as float64.
_EXACT_FLOAT_INT = 2**53


def _number_group(members: Sequence[EncodedColumn]) -> np.ndarray | None:
    """Codes of the number columns' non-NULL values from their machine arrays, else None."""
    arrays = [c.machine for c in members]
    if any(a is None for a in arrays):
        return None
    machine = [a for a in arrays if a is not None]
    if len({a.dtype.kind for a in machine}) > 1:
        ints = [a for a in machine if a.dtype.kind == "i"]
        if any(
            len(a) and (a.min() < -_EXACT_FLOAT_INT or a.max() > _EXACT_FLOAT_INT) for a in ints
        ):
            return None  # an integer float64 cannot hold exactly: compare as Python objects
        machine = [a.astype(np.float64) for a in machine]
    return codes_of(np.concatenate(machine))


def _object_ids(columns: Sequence[EncodedColumn]) -> list[np.ndarray]:
    """One numbering of every column's distinct values as Python objects (the general path)."""
    everything = np.concatenate([c.uniques for c in columns]) if columns else np.zeros(0, object)
    ids = codes_of(everything)
    # Only NULL can take the sentinel; it gets its own id after the others.
    ids[ids < 0] = ids.max(initial=-1) + 1
    bounds = np.cumsum([0] + [c.distinct for c in columns])
    return [ids[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


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
    codes = codes_of(ids)
    return codes, max(int(codes.max(initial=-1)) + 1, 1)


def codes_of(values: np.ndarray) -> np.ndarray:
    """``pd.factorize(values)[0]`` as int64: a code per value in order of first appearance,
    equal values equal codes, NULL (None, NaN) -1. An array of at most :data:`SMALL` values,
    of an int or float dtype or holding only Python ints, floats, text, ``Truth`` and None, is
    numbered with a dict (pandas costs about 20 us a call whatever the size; output scoring
    calls it a few times an item).

    >>> codes_of(np.array(["b", "a", "b", None], dtype=object)).tolist()
    [0, 1, 0, -1]
    >>> codes_of(np.array([0.0, -0.0, 2.5, float("nan")])).tolist()
    [0, 0, 1, -1]
    """
    items = values.tolist() if len(values) <= SMALL else None
    if items is None or (values.dtype == object and not set(map(type, items)) <= _SMALL_TYPES):
        return pd.factorize(values)[0].astype(np.int64, copy=False)
    seen: dict[Hashable, int] = {}
    codes = [
        -1 if value is None or value != value else seen.setdefault(value, len(seen))
        for value in items
    ]
    return np.array(codes, dtype=np.int64)
