"""The judge's inputs for one run, built from the stored stages (no query is run again)."""

from __future__ import annotations

import json

import pandas as pd

from t2s_pipeline.cases import CaseSet
from t2s_pipeline.judge.prompt import PREVIEW_ROWS, JudgeInput, ResultPreview
from t2s_pipeline.run.summary import joined_items
from t2s_pipeline.store import ResultsStore

# name shown to the judge -> column of the joined per-item frame
SCORES: dict[str, str] = {
    "exact_match": "exact_match",
    "columns_precision": "columns_precision",
    "columns_recall": "columns_recall",
    "cells_precision": "cells_precision",
    "cells_recall": "cells_recall",
    "retrieval_recall": "recall",
    "retrieval_precision": "precision",
    **{
        f"{name}_{side}": f"{name}_{side}"
        for name in ("tables", "filters", "group_by", "aggregations", "select")
        for side in ("precision", "recall")
    },
}
_MISSING = ResultPreview("not_run", "no stored result", (), 0, ())


def deterministic_categories(store: ResultsStore, run_id: str) -> dict[str, str]:
    """Item id -> the deterministic diagnosis' category."""
    data = store.read("diagnoses", run_id)
    if data.empty:
        return {}
    return dict(zip(data["item_id"].astype(str), data["category"].astype(str), strict=True))


def deterministic_sets(store: ResultsStore, run_id: str) -> dict[str, frozenset[str]]:
    """Item id -> every category the deterministic diagnosis found to hold."""
    data = store.read("diagnoses", run_id)
    if data.empty or "categories_json" not in data:
        return {}
    return {
        str(item): frozenset(json.loads(str(found)) or [str(primary)])
        for item, primary, found in zip(
            data["item_id"], data["category"], data["categories_json"], strict=True
        )
    }


def judge_inputs(store: ResultsStore, run_id: str, case_set: CaseSet) -> list[JudgeInput]:
    """One input per item whose deterministic category is not ``correct``, in item order."""
    joined = joined_items(store, run_id)
    if joined.empty or "category" not in joined:
        return []
    failed = joined[joined["category"] != "correct"].sort_values("item_id")
    questions = store.read("items", run_id).set_index("item_id")["question"]
    sql = store.read("sut_responses", run_id).set_index("item_id")["sql"]
    gold = _previews(store.read("gold_results", run_id))
    candidate = _previews(store.read("candidate_results", run_id))
    cases = case_set.by_id()
    return [
        JudgeInput(
            item_id=str(row["item_id"]),
            question=str(questions[row["item_id"]]),
            gold_sql=cases[str(row["case_id"])].gold_sql,
            candidate_sql=_text(sql.get(row["item_id"])),
            gold=gold.get(str(row["case_id"]), _MISSING),
            candidate=candidate.get(str(row["item_id"]), _MISSING),
            scores=_scores(row),
        )
        for row in failed.to_dict("records")
        if str(row["case_id"]) in cases
    ]


def _previews(data: pd.DataFrame) -> dict[str, ResultPreview]:
    out: dict[str, ResultPreview] = {}
    for row in data.itertuples(index=False):
        rows = json.loads(str(row.preview_json))[:PREVIEW_ROWS]
        out[str(row.key)] = ResultPreview(
            status=str(row.status),
            reason=_text(row.reason),
            columns=tuple(json.loads(str(row.columns_json))),
            n_rows=int(row.n_rows),  # type: ignore[call-overload]
            rows=tuple(tuple(r) for r in rows),
        )
    return out


def _scores(row: dict[str, object]) -> tuple[tuple[str, float | None], ...]:
    return tuple((name, _figure(row.get(column))) for name, column in SCORES.items())


def _figure(value: object) -> float | None:
    if value is None or pd.isna(value):  # type: ignore[call-overload]
        return None
    return round(float(value), 4)  # type: ignore[arg-type]


def _text(value: object) -> str | None:
    return None if value is None or pd.isna(value) else str(value)  # type: ignore[call-overload]


def candidate_sql(store: ResultsStore, run_id: str) -> dict[str, str | None]:
    """Item id -> the SQL the SUT answered (None when it gave none)."""
    data = store.read("sut_responses", run_id)
    if data.empty:
        return {}
    return {str(i): _text(s) for i, s in zip(data["item_id"], data["sql"], strict=True)}
