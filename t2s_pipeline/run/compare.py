"""Comparing runs: the previous comparable run, paired deltas, the regression verdict, and the
shared comparison tables refreshed after every run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from t2s_pipeline.run.summary import joined_items
from t2s_pipeline.scoring.compare import Comparison, compare_runs, load_decision, unaccepted
from t2s_pipeline.store import ResultsStore


@dataclass(frozen=True)
class RegressionVerdict:
    previous: str
    n_shared: int
    n_regressed: int
    unaccepted: list[str]


def previous_run(store: ResultsStore, run_id: str) -> str | None:
    """The latest completed run before ``run_id`` on the same case folder."""
    runs = store.read("runs")
    if runs.empty or run_id not in set(runs["run_id"]):
        return None
    this = runs[runs["run_id"] == run_id].iloc[0]
    earlier = runs[
        (runs["cases_dir"] == this["cases_dir"])
        & (runs["run_id"] != run_id)
        & runs["ended_at"].notna()
        & (runs["started_at"] < this["started_at"])
    ]
    return None if earlier.empty else str(earlier.sort_values("started_at").iloc[-1]["run_id"])


def compare(store: ResultsStore, run_a: str, run_b: str) -> Comparison:
    return compare_runs(run_a, joined_items(store, run_a), run_b, joined_items(store, run_b))


def regression_verdict(
    store: ResultsStore, run_id: str, decisions: str
) -> RegressionVerdict | None:
    previous = previous_run(store, run_id)
    if previous is None:
        return None
    comparison = compare(store, previous, run_id)
    decision = load_decision(Path(decisions), run_id)
    return RegressionVerdict(
        previous,
        comparison.n_shared,
        len(comparison.regressed_items()),
        unaccepted(comparison, decision),
    )


def compare_all(store: ResultsStore) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every completed run against its previous run: deltas and regressions, stacked."""
    deltas, regressions = [], []
    for run_id in store.run_ids():
        previous = previous_run(store, run_id)
        if previous is None:
            continue
        comparison = compare(store, previous, run_id)
        deltas.append(comparison.to_frame())
        regressions.append(comparison.regressions_frame())
    empty = pd.DataFrame({"run_a": pd.Series(dtype="string"), "run_b": pd.Series(dtype="string")})
    return (
        pd.concat(deltas, ignore_index=True) if deltas else empty,
        pd.concat(regressions, ignore_index=True) if regressions else empty,
    )


def materialise_comparisons(store: ResultsStore) -> dict[str, int]:
    """Every finished run against the run before it: paired deltas per family and the
    regressed items, replacing the shared comparison tables (not a per-run stage)."""
    deltas, regressions = compare_all(store)
    store.replace_all("run_comparisons", deltas)
    store.replace_all("regressions", regressions)
    return {"dagster/row_count": len(deltas), "regressions": len(regressions)}
