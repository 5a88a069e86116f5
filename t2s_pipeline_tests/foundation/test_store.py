"""The results store replaces one run's rows by name, in one transaction."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from t2s_pipeline.store import ResultsStore


def test_replace_is_per_run_and_by_name(tmp_path: Path) -> None:
    """Columns match by name (any order, new ones added); other runs are untouched."""
    store = ResultsStore(tmp_path / "r.duckdb")
    store.replace_run("t", "r1", pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}))
    store.replace_run("t", "r2", pd.DataFrame({"b": ["z"], "a": [3], "c": [0.5]}))
    store.replace_run("t", "r1", pd.DataFrame({"a": [9], "b": [None]}))
    rows = store.read("t").sort_values("a")
    assert list(rows["run_id"]) == ["r2", "r1"]
    assert list(rows["a"]) == [3, 9] and rows["c"].iloc[0] == 0.5 and pd.isna(rows["c"].iloc[1])


def test_a_failed_replace_keeps_the_previous_rows(tmp_path: Path) -> None:
    """Nothing is lost when a write fails midway: the transaction rolls back."""
    store = ResultsStore(tmp_path / "r.duckdb")
    store.replace_run("t", "r1", pd.DataFrame({"a": [1, 2]}))
    with pytest.raises(Exception):  # noqa: B017 - DuckDB's conversion error type varies
        store.replace_run("t", "r1", pd.DataFrame({"a": ["not a number"]}))
    assert sorted(store.read("t", "r1")["a"]) == [1, 2]


def test_reading_what_does_not_exist_is_empty(tmp_path: Path) -> None:
    """A fresh store answers with empty frames, not errors."""
    store = ResultsStore(tmp_path / "missing.duckdb")
    assert store.read("t").empty and store.run_ids() == []
