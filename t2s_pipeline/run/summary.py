"""The summary stage: every family's means with n and CI, EX by band, ceilings, diagnoses and
robustness of one run, from the stored per-item tables."""

from __future__ import annotations

import pandas as pd

from t2s_pipeline.judge.report import CALIBRATION_TABLE, judge_section
from t2s_pipeline.run.context import RunContext, StageResult
from t2s_pipeline.run.output import ceiling_counts
from t2s_pipeline.run.record import record_run_end
from t2s_pipeline.scoring.stats import mean_with_ci
from t2s_pipeline.scoring.summary import (
    RunSummary,
    count_ceilings,
    diagnosis_histograms,
    ex_by_band,
    family_means,
    robustness,
)
from t2s_pipeline.store import KeptWhileUnchanged, ResultsStore

# Joined to exact_matches by item, each without the columns it repeats.
_JOINS = (
    ("output_scores", ["case_id", "exact_match", "scorer_fault"]),
    ("retrieval_scores", ["case_id"]),
    ("component_scores", ["case_id"]),
    ("test_suite_matches", ["case_id", "exact_match", "neighbours", "suite_key"]),
    ("diagnoses", ["case_id"]),
)
SUMMARISED = ("exact_matches", *(t for t, _ in _JOINS), CALIBRATION_TABLE, "judge_diagnoses")
"""The tables a run's summary is computed from."""


def joined_items(store: ResultsStore, run_id: str) -> pd.DataFrame:
    """One row per item with every family's figures, the band and the diagnosis."""
    data = store.read("exact_matches", run_id)
    for table, drop in _JOINS:
        other = store.read(table, run_id)
        if other.empty:
            continue
        other = other.drop(columns=[c for c in [*drop, "run_id"] if c in other])
        data = data.merge(other, on="item_id", how="left")
    return data


# The summary stage, the ceilings check, the comparison and the launcher each summarise the
# same run; a summary is computed again only when one of the run's files changed.
_SUMMARIES: KeptWhileUnchanged[RunSummary] = KeptWhileUnchanged(kept=16)


def summarise_run(store: ResultsStore, run_id: str) -> RunSummary:
    """The run's :class:`RunSummary`, from its stored tables (kept while they are unchanged)."""
    return _SUMMARIES.get(store, run_id, SUMMARISED, lambda: _summarise(store, run_id))


def _summarise(store: ResultsStore, run_id: str) -> RunSummary:
    data = joined_items(store, run_id)
    counts = (
        ceiling_counts(data.to_dict("records")) if "ceilings_json" in data else count_ceilings({})
    )
    return RunSummary(
        run_id=run_id,
        n_items=len(data),
        n_cases=int(data["case_id"].nunique()) if not data.empty else 0,
        families=family_means(data),
        ceilings=counts,
        ex_by_difficulty=ex_by_band(data) if not data.empty else {},
        diagnoses=diagnosis_histograms(data) if "category" in data else {},
        robustness=robustness(data) if not data.empty else mean_with_ci([]),
        extra=judge_section(store, run_id),
    )


def materialise(run: RunContext) -> StageResult:
    """Every family's means with n and 95% CI, EX by band, ceilings, diagnoses, robustness;
    recorded as the run's end. The value is the :class:`RunSummary`."""
    summary = summarise_run(run.store, run.run_id)
    record_run_end(run.store, run.spec, summary)
    return StageResult({"run_summary": {"dagster/row_count": summary.n_items}}, value=summary)
