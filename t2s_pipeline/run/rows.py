"""Helpers every stage shares: writing a stage's rows, and its metadata means with their n."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from t2s_pipeline.run.context import RunContext
from t2s_pipeline.scoring.item import num
from t2s_pipeline.scoring.stats import mean_and_n


def frame(rows: Sequence[Mapping[str, object]], float_columns: Sequence[str] = ()) -> pd.DataFrame:
    """Rows to a frame, metric columns typed as nullable floats (undefined stays NULL)."""
    data = pd.DataFrame(list(rows))
    for column in float_columns:
        if column in data:
            data[column] = pd.to_numeric(data[column], errors="coerce").astype("Float64")
    return data


def family_metadata(
    rows: Sequence[Mapping[str, object]], columns: Sequence[str]
) -> dict[str, float | int]:
    """Mean and n of a few figures, for an asset's materialisation metadata (the run's
    summary gives their intervals)."""
    out: dict[str, float | int] = {"dagster/row_count": len(rows)}
    for column in columns:
        mean = mean_and_n(num(row.get(column)) for row in rows)
        out[f"{column}/n"] = mean.n
        if mean.mean is not None:
            out[column] = round(mean.mean, 6)
    return out


def write(run: RunContext, table: str, rows: Sequence[Mapping[str, object]]) -> int:
    """Replace the run's rows of ``table`` (typed by its declaration in ``tables.py``)."""
    return run.store.replace_run(table, run.run_id, pd.DataFrame(list(rows)))
