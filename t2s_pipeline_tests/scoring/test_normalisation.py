"""Value normalisation (SPEC 6.5): the one place every comparison goes through."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t2s_pipeline.results import (
    ResultSet,
    Struct,
    Truth,
    normalize_column,
    normalize_value,
    round_float,
)

UTC = dt.UTC


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (1, 1.0),
        (1, decimal.Decimal("1.00")),
        (0.1 + 0.2, 0.3),
        (-0.0, 0.0),
        (decimal.Decimal("0.10"), 0.1),
        (None, float("nan")),
        (None, pd.NaT),
        (None, np.datetime64("NaT")),
        (None, decimal.Decimal("NaN")),
        (True, np.bool_(True)),
        (np.int64(7), 7),
        (np.float32(0.5), 0.5),
        (dt.date(2024, 1, 31), "2024-01-31"),
        (np.datetime64("2024-01-31"), dt.date(2024, 1, 31)),
        (pd.Timestamp("2024-01-31 10:00"), dt.datetime(2024, 1, 31, 10)),
        (
            dt.datetime(2024, 1, 31, 12, tzinfo=dt.timezone(dt.timedelta(hours=2))),
            dt.datetime(2024, 1, 31, 10, tzinfo=UTC),
        ),
        (dt.timedelta(days=1, seconds=1.5), pd.Timedelta("1 days 00:00:01.5")),
        (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
        ([1, 2.0], (1.0, 2)),
        ({"b": 1, "a": [True]}, {"a": (True,), "b": 1.0}),
        (b"\x00\xff", "\\x00ff"),
    ],
)
def test_values_that_mean_the_same_normalise_equal(left: Any, right: Any) -> None:
    """Drivers return the same answer in different types; the scorer must not care."""
    assert normalize_value(left) == normalize_value(right)
    assert hash(normalize_value(left)) == hash(normalize_value(right))


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (True, 1),
        (False, 0),
        (None, 0),
        (None, ""),
        ("1", 1),
        (0.3, 0.30001),
        ("abc", "ABC"),
        ([1, 2], [2, 1]),
    ],
)
def test_values_that_differ_stay_different(left: Any, right: Any) -> None:
    """Booleans are not integers, NULL is not zero, strings compare exactly (SPEC 6.5)."""
    assert normalize_value(left) != normalize_value(right)


def test_normalised_forms_are_documented_and_hashable() -> None:
    """Exotic values get the forms the module docstring promises, so stored results agree."""
    assert normalize_value(True) is Truth.TRUE
    assert normalize_value(dt.timedelta(days=1, seconds=3600.5)) == "P1DT3600.5S"
    assert normalize_value({"x": 1}) == Struct((("x", 1),))
    assert normalize_value(bytearray(b"\x0a")) == "\\x0a"
    assert normalize_value(dt.time(10, 30)) == "10:30:00"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=20))
def test_float_column_path_matches_scalar_path(values: list[float]) -> None:
    """Columns take a vectorised path; it must agree bit for bit with one value at a time."""
    assert _same(normalize_column(values), [normalize_value(v) for v in values])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=3)))
)
def test_mixed_column_matches_value_by_value(values: list[Any]) -> None:
    """Whatever path a column takes, the result is the per-value normalisation."""
    assert _same(normalize_column(values), [normalize_value(v) for v in values])


def test_huge_floats_are_not_rounded_into_infinity() -> None:
    """Scaling 1e308 by 10**6 overflows; integral magnitudes must pass through untouched."""
    assert normalize_column([1e308, -1e308]) == [1e308, -1e308]
    assert round_float(2.0**60) == 2.0**60


def test_ragged_rows_are_refused_with_a_clear_message() -> None:
    """A row with a missing value would shift cells between columns silently."""
    with pytest.raises(ValueError, match="one value per column"):
        ResultSet.from_names(["a", "b"], [[1, 2], [3]]).normalized_columns()


def _same(left: list[Any], right: list[Any]) -> bool:
    return len(left) == len(right) and all(
        a == b and type(a) is type(b) or (a is None and b is None)
        for a, b in zip(left, right, strict=True)
    )
