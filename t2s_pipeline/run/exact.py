"""The exact stage: headline EX per item, with its phrasing and difficulty band."""

from __future__ import annotations

import pandas as pd

from t2s_pipeline.run.context import RunContext, StageResult
from t2s_pipeline.run.rows import family_metadata, write
from t2s_pipeline.scoring.item import json_list


def exact_rows(items: pd.DataFrame, output: pd.DataFrame) -> list[dict[str, object]]:
    merged = items[["item_id", "case_id", "phrasing", "difficulty"]].merge(
        output[["item_id", "exact_match", "scorer_fault", "gold_status", "presentation_json"]]
        if "presentation_json" in output
        else output[["item_id", "exact_match", "scorer_fault", "gold_status"]],
        on="item_id",
    )
    return [
        {
            "item_id": r.item_id,
            "case_id": r.case_id,
            "phrasing": int(r.phrasing),  # type: ignore[arg-type]
            "difficulty": r.difficulty,
            # EX of an item whose gold failed is undefined, not a miss.
            "exact_match": None if r.gold_status != "ok" else bool(r.exact_match),
            # Exact, or differing only in presentation (SPEC 11): a second line beside EX.
            "ex_presentation": None
            if r.gold_status != "ok"
            else bool(r.exact_match) or bool(json_list(getattr(r, "presentation_json", None))),
            "scorer_fault": bool(r.scorer_fault),
        }
        for r in merged.itertuples(index=False)
    ]


def materialise(run: RunContext) -> StageResult:
    """Headline EX per item, with its phrasing and difficulty band."""
    store = run.store
    rows = exact_rows(store.read("items", run.run_id), store.read("output_scores", run.run_id))
    write(run, "exact_matches", rows)
    return StageResult({"exact_matches": dict(family_metadata(rows, ["exact_match"]))})
