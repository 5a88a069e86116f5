"""The retrieval stage: required tables against the tables the SUT offered (its trace) and
the tables its retriever returns when probed directly."""

from __future__ import annotations

import json
from typing import Any

from t2s_pipeline.run.analyse import analyses_from_frame
from t2s_pipeline.run.ask import stored_outcomes
from t2s_pipeline.run.context import RunContext, StageResult
from t2s_pipeline.run.rows import family_metadata, write
from t2s_pipeline.scoring.item import ItemAnalysis
from t2s_pipeline.scoring.retrieval import score_retrieval
from t2s_pipeline.sut.client import ItemOutcome


def retrieval_row(
    analysis: ItemAnalysis, outcome: ItemOutcome | None, dialect: str
) -> dict[str, object]:
    """The retrieval family for the SUT's own trace and for the direct probe."""
    required = frozenset(analysis.required_tables)
    row: dict[str, object] = {"item_id": analysis.item_id, "case_id": analysis.case_id}
    row["required_json"] = json.dumps(sorted(required))
    traces = {
        "": _trace_tables(outcome),
        "probe_": None if outcome is None or outcome.probe is None else outcome.probe.tables,
    }
    for prefix, tables in traces.items():
        if tables is None:
            row.update(
                {f"{prefix}recall": None, f"{prefix}precision": None, f"{prefix}spurious": None}
            )
            row[f"{prefix}offered_json"] = None
            row[f"{prefix}missing_json"] = None
            continue
        offered = [t.name for t in tables]
        score = score_retrieval(required, offered, dialect)
        row[f"{prefix}recall"] = score.recall
        row[f"{prefix}precision"] = score.precision
        row[f"{prefix}spurious"] = score.spurious
        row[f"{prefix}offered_json"] = json.dumps(offered)
        row[f"{prefix}missing_json"] = json.dumps(list(score.missing))
    return row


def _trace_tables(outcome: ItemOutcome | None) -> list[Any] | None:
    """Tables the SUT says it was offered; None (not "nothing") when it reports no trace."""
    if outcome is None or outcome.response is None or outcome.response.retrieval is None:
        return None
    return list(outcome.response.retrieval.tables)


def materialise(run: RunContext) -> StageResult:
    """Retrieval family: required tables vs offered (SUT trace) and vs probed."""
    store = run.store
    analyses = analyses_from_frame(store.read("sql_analyses", run.run_id))
    outcomes = stored_outcomes(store, run.run_id, probes=True)
    dialect = run.case_set.domain.dialect
    rows = [retrieval_row(a, outcomes.get(i), dialect) for i, a in analyses.items()]
    write(run, "retrieval_scores", rows)
    metadata = family_metadata(rows, ["recall", "precision", "probe_recall"])
    return StageResult({"retrieval_scores": dict(metadata)})
