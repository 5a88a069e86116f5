"""The encoding fast paths give the same numbering as factorising the values as Python objects."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from t2s_pipeline.results import Struct, Truth
from t2s_pipeline.scoring import encoding
from t2s_pipeline.scoring.encoding import encode_values, global_ids

# Normalised values of every kind; ints beyond 2**53 and beyond 64 bits force the slow paths.
_NORMALISED = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([2**53 + 1, 2**63 + 5, -(2**70)]),
    st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5, float(2**53 + 2)]),
    st.sampled_from(["a", "b", "1", ""]),
    st.sampled_from([Truth.TRUE, Truth.FALSE, None, (1, "a"), Struct((("k", 1),))]),
)
# One kind per column (NULLs aside): the per-kind numbering, not the object fallback.
_ONE_KIND = st.one_of(
    st.lists(st.one_of(st.integers(-3, 3), st.none()), max_size=8),
    st.lists(st.one_of(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5]), st.none()), max_size=8),
    st.lists(st.sampled_from([2**53 + 1, 2**53, 7]), max_size=8),
    st.lists(st.sampled_from([float(2**53), float(2**53 + 2), 7.0]), max_size=8),
    st.lists(st.one_of(st.sampled_from(["a", "b", "1"]), st.none()), max_size=8),
    st.lists(st.sampled_from([Truth.TRUE, Truth.FALSE, None]), max_size=8),
)


def _reference_numbering(columns: Sequence[Sequence[Hashable]]) -> list[list[int]]:
    """Id of each column's distinct values (in code order) by plain Python equality."""
    seen: dict[Hashable, int] = {}
    out = []
    for values in columns:
        encoded = encode_values(list(values))
        out.append([seen.setdefault(v, len(seen)) for v in encoded.uniques.tolist()])
    return out


def _same_partition(left: list[list[int]], right: list[list[int]]) -> bool:
    """True when both numberings split the values into the same classes."""
    flat_l = [i for ids in left for i in ids]
    flat_r = [i for ids in right for i in ids]
    return len(set(zip(flat_l, flat_r, strict=True))) == len(set(flat_l)) == len(set(flat_r))


@given(st.lists(_ONE_KIND, min_size=1, max_size=5))
@settings(max_examples=300, deadline=None)
def test_per_kind_ids_match_python_equality(columns: list[list[Hashable]]) -> None:
    encoded = [encode_values(values) for values in columns]
    ids = [a.tolist() for a in global_ids(encoded)]
    assert _same_partition(ids, _reference_numbering(columns))


@given(st.lists(st.lists(_NORMALISED, max_size=8), min_size=1, max_size=5))
@settings(max_examples=300, deadline=None)
def test_mixed_columns_ids_match_python_equality(columns: list[list[Hashable]]) -> None:
    encoded = [encode_values(values) for values in columns]
    ids = [a.tolist() for a in global_ids(encoded)]
    assert _same_partition(ids, _reference_numbering(columns))


@given(st.lists(st.one_of(st.integers(-5, 5), st.none()), max_size=12))
@settings(max_examples=200, deadline=None)
def test_nullable_integers_take_the_machine_path_with_object_codes(
    values: list[int | None],
) -> None:
    column = encode_values(values)
    objects = list(dict.fromkeys(v for v in values if v is not None))
    expected_uniques = objects + ([None] if None in values else [])
    assert column.uniques.tolist() == expected_uniques
    assert [column.uniques[c] for c in column.codes.tolist()] == values
    assert (column.machine is not None) == bool(objects)


def test_integer_and_float_columns_share_ids_for_equal_numbers() -> None:
    ints, floats = encode_values([1, 2, 2**53]), encode_values([2.0, 0.5, float(2**53)])
    int_ids, float_ids = (a.tolist() for a in global_ids([ints, floats]))
    assert int_ids[1] == float_ids[0] and int_ids[2] == float_ids[2]
    assert len(set(int_ids) | set(float_ids)) == 4


def test_integers_beyond_float_precision_never_merge_with_floats() -> None:
    ints, floats = encode_values([2**53 + 1]), encode_values([float(2**53 + 1)])
    int_ids, float_ids = (a.tolist() for a in global_ids([ints, floats]))
    assert int_ids != float_ids  # 2**53 + 1 is not equal to float(2**53 + 1) == 2**53


def test_machine_arrays_hold_the_non_null_values() -> None:
    assert np.array_equal(encode_values([3.5, None, -0.0, 0.0]).machine, [3.5, 0.0])
    assert encode_values(["a", None]).machine is None
    assert encode_values([2**70, 1]).machine is None


_SHORT = st.lists(
    st.one_of(
        _NORMALISED,
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([-0.0, float("nan"), 2**63 - 1, -(2**63), 2**63]),
    ),
    min_size=1,
    max_size=encoding.SMALL,
)


def _by_pandas(values: Sequence[Hashable]) -> encoding.EncodedColumn:
    small, encoding.SMALL = encoding.SMALL, 0
    try:
        return encode_values(values)
    finally:
        encoding.SMALL = small


@settings(max_examples=400, deadline=None)
@given(st.one_of(_SHORT, _ONE_KIND.filter(bool)))
def test_short_columns_are_numbered_as_pandas_numbers_them(values: list[Hashable]) -> None:
    """A column short enough for the dict numbering gets exactly pandas' codes, uniques (the
    same objects' types and values: the first of equal ones), machine array and kinds."""
    mine, theirs = encode_values(values), _by_pandas(values)
    assert mine.codes.dtype == theirs.codes.dtype and mine.codes.tolist() == theirs.codes.tolist()
    assert [(type(u), u) for u in mine.uniques] == [(type(u), u) for u in theirs.uniques]
    assert mine.kinds == theirs.kinds
    if theirs.machine is None:
        assert mine.machine is None
    else:
        assert mine.machine is not None and mine.machine.dtype == theirs.machine.dtype
        assert mine.machine.tolist() == theirs.machine.tolist()
        assert np.signbit(mine.machine).tolist() == np.signbit(theirs.machine).tolist()


# What codes_of may meet: normalised values, NumPy's own numbers, NaN and signed zero.
_CODED = st.one_of(
    _NORMALISED,
    st.sampled_from([-0.0, float("nan"), np.int64(3), np.float64(0.5), 2**64]),
)


@given(st.lists(_CODED, max_size=encoding.SMALL + 3))
@settings(max_examples=500, deadline=None)
def test_codes_of_equals_pandas_factorize(values: list[Hashable]) -> None:
    """The dict numbering of short arrays gives exactly pandas' codes (objects, floats, ints);
    longer arrays and other types are pandas' own."""
    import pandas as pd

    arrays = [np.array(values + [None], dtype=object)[:-1]]  # always a 1-D object array
    numbers = [v for v in values if type(v) in (int, float) and abs(v) < 2**53]
    arrays += [np.array(numbers, dtype=np.float64), np.array(numbers, dtype=np.float64)[:0]]
    integers = [v for v in numbers if type(v) is int]
    arrays += [np.array(integers, dtype=np.int64)]
    for array in arrays:
        expected = pd.factorize(array)[0].astype(np.int64)
        assert encoding.codes_of(array).tolist() == expected.tolist(), array
