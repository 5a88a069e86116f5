"""Two stores' tables of one run, compared row for row (for the runner and scale-out tests)."""

from __future__ import annotations

import json

import pandas as pd

from t2s_pipeline.execution.records import from_frame
from t2s_pipeline.store import ResultsStore
from t2s_pipeline.tables import TABLES

# Wall-clock figures differ between two evaluations of the same partition; nothing else may.
VOLATILE = {"latency_s", "seconds", "started_at", "ended_at", "code_version"}
# Figures aggregated over every item, so they include the unstable ones (see differing_tables).
AGGREGATES = {
    "runs": {"summary_json"},
    "judge_calibration": {"agreement", "kappa", "jaccard", "calibrated", "confusion_json"},
}


def _raw_orders(store: ResultsStore, run_id: str) -> dict[str, str]:
    results = from_frame(store.read("candidate_results", run_id))
    return {key: repr(result.rows) for key, result in results.items()}


def unstable_items(a: ResultsStore, b: ResultsStore, run_id: str) -> set[str]:
    """Items whose candidate came back in another row order the second time (same rows)."""
    left, right = _raw_orders(a, run_id), _raw_orders(b, run_id)
    return {k for k, rows in left.items() if right.get(k) != rows}


def normalised(store: ResultsStore, name: str, run_id: str, unstable: set[str]) -> pd.DataFrame:
    data = store.read(name, run_id)
    if "payload" in data.columns:
        # An unordered query may return its rows in another order on each execution (DuckDB
        # scans in parallel): compare each result as a multiset of rows.
        results = from_frame(data)
        data = data.assign(
            payload=[repr(sorted(map(repr, results[k].rows))) for k in data["key"]],
            preview_json=[
                json.dumps(sorted(map(json.dumps, json.loads(p)))) for p in data["preview_json"]
            ],
        )
    for column in ("item_id", "key"):
        if column in data.columns:
            data = data[~data[column].isin(unstable)]
    data = data.drop(columns=[c for c in data.columns if c in VOLATILE])
    if unstable:
        data = data.drop(columns=sorted(AGGREGATES.get(name, set())))
    key = [k for k in TABLES[name].key if k in data.columns]
    return data.sort_values(key).reset_index(drop=True)


def differing_tables(a: ResultsStore, b: ResultsStore, run_id: str) -> list[str]:
    """Every run table of ``run_id`` that differs between the stores (printed with the diff).

    The one allowance: an item whose candidate query has no order and came back from the
    database in another row order the second time (the same rows) may have different
    order-sensitive figures, so it is left out; such items must stay a small minority."""
    unstable = unstable_items(a, b, run_id)
    assert len(unstable) <= max(1, len(_raw_orders(a, run_id)) // 10), unstable
    differing = []
    for name, declared in TABLES.items():
        if declared.scope != "run":
            continue
        left, right = normalised(a, name, run_id, unstable), normalised(b, name, run_id, unstable)
        try:
            pd.testing.assert_frame_equal(left, right, check_dtype=True, obj=name)
        except AssertionError as error:
            print(f"{run_id} {name}: {str(error)[:3000]}")
            differing.append(name)
    if not len(normalised(a, "output_scores", run_id, set())):
        differing.append("output_scores (empty)")
    return differing
