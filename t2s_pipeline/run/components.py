"""The component stage: which SQL parts of each candidate are missing or extra (SPEC 7)."""

from __future__ import annotations

from t2s_pipeline.run.analyse import analyses_from_frame
from t2s_pipeline.run.context import RunContext, StageResult
from t2s_pipeline.run.rows import family_metadata, write
from t2s_pipeline.scoring.item import component_row
from t2s_pipeline.scoring.summary import COMPONENT_SETS


def materialise(run: RunContext) -> StageResult:
    """Component family: which SQL parts are missing or extra."""
    analyses = analyses_from_frame(run.store.read("sql_analyses", run.run_id))
    rows = [component_row(a) for a in analyses.values()]
    write(run, "component_scores", rows)
    recalls = [f"{n}_recall" for n in COMPONENT_SETS]
    return StageResult({"component_scores": dict(family_metadata(rows, recalls))})
