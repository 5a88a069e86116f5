"""The diagnose stage: the deterministic diagnosis (SPEC 11) of every item, from the stored
output, component and retrieval rows."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from t2s_pipeline.run.context import RunContext, StageResult
from t2s_pipeline.run.rows import write
from t2s_pipeline.run.test_suite import snapshot_only_finding
from t2s_pipeline.scoring.item import diagnosis_row, evidence
from t2s_pipeline.store import ResultsStore


def diagnosis_rows(store: ResultsStore, run_id: str) -> list[dict[str, object]]:
    """Diagnose every item from its stored family rows."""
    output = store.read("output_scores", run_id).set_index("item_id")
    components = store.read("component_scores", run_id).set_index("item_id")
    retrieval = store.read("retrieval_scores", run_id).set_index("item_id")
    suite = store.read("test_suite_matches", run_id).set_index("item_id")
    rows = []
    for item_id, out in output.iterrows():
        comp = components.loc[item_id].to_dict() if item_id in components.index else {}
        retr = retrieval.loc[item_id].to_dict() if item_id in retrieval.index else {}
        found = evidence(
            out.to_dict(),
            comp,
            retr,
            candidate_failed=out["candidate_status"] != "ok",
            gold_failed=out["gold_status"] != "ok",
        )
        if item_id in suite.index:
            found = replace(
                found, snapshot_only=snapshot_only_finding(suite.loc[item_id].to_dict())
            )
        rows.append(diagnosis_row(str(item_id), str(out["case_id"]), found))
    return rows


def materialise(run: RunContext) -> StageResult:
    """Deterministic diagnosis (SPEC 11) of every item."""
    rows = diagnosis_rows(run.store, run.run_id)
    write(run, "diagnoses", rows)
    counts = Counter(str(r["category"]) for r in rows)
    metadata: dict[str, object] = {"dagster/row_count": len(rows)}
    metadata |= {f"diagnosis/{k}": v for k, v in counts.most_common()}
    return StageResult({"diagnoses": metadata})
