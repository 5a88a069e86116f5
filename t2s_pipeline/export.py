"""``t2s export``: one row per item of a run, every family's figures side by side.

The field names are stable (documented in README "Exporting a run"); a figure that is undefined
is null, never 0. Lists (``ceilings``) are JSON arrays in JSONL and Parquet and ``;``-joined
text in CSV.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pandas as pd

from t2s_pipeline.cases import CaseSet
from t2s_pipeline.errors import ConfigError
from t2s_pipeline.store import ResultsStore

FORMATS = ("jsonl", "csv", "parquet")

IDENTITY = ("run_id", "item_id", "case_id", "phrasing", "difficulty", "question")
SQL = ("gold_sql", "candidate_sql")
STATUS = (
    "sut_status",
    "sut_error",
    "attempts",
    "latency_s",
    "candidate_status",
    "candidate_reason",
)
FIGURES = (
    "ex",
    "ex_presentation",
    "ex_ts",
    "ex_ts_told_apart_by",
    "columns_precision",
    "columns_recall",
    "cells_precision",
    "cells_recall",
    "retrieval_recall",
    "retrieval_precision",
    "retrieval_spurious",
    "probe_recall",
    "probe_precision",
    *(
        f"{name}_{side}"
        for name in (
            "select",
            "tables",
            "joins",
            "filters",
            "group_by",
            "aggregations",
            "order_by",
            "limit",
        )
        for side in ("precision", "recall")
    ),
)
DIAGNOSIS = ("diagnosis", "diagnosis_rule", "diagnosis_also", "findings", "ceilings")
FIELDS: tuple[str, ...] = (*IDENTITY, *SQL, *STATUS, *FIGURES, *DIAGNOSIS)
"""Every exported field, in order."""


def export_frame(store: ResultsStore, run_id: str, case_set: CaseSet | None) -> pd.DataFrame:
    """The run's items as one frame of :data:`FIELDS` (``gold_sql`` from ``case_set``)."""
    items = store.read("items", run_id)
    if items.empty:
        raise ConfigError(f"run {run_id!r} has no items in {store.path}; `t2s runs` lists runs")
    data = items[["run_id", "item_id", "case_id", "phrasing", "difficulty", "question"]]
    data = _join(data, store.read("sut_responses", run_id), {
        "sql": "candidate_sql", "status": "sut_status", "error_message": "sut_error",
        "attempts": "attempts", "latency_s": "latency_s",
    })  # fmt: skip
    candidates = store.read("candidate_results", run_id)
    if not candidates.empty:
        candidates = candidates.rename(columns={"key": "item_id"})
    data = _join(data, candidates, {"status": "candidate_status", "reason": "candidate_reason"})
    data = _join(data, store.read("exact_matches", run_id), {
        "exact_match": "ex", "ex_presentation": "ex_presentation",
    })  # fmt: skip
    data = _join(data, store.read("test_suite_matches", run_id), {
        "ex_ts": "ex_ts", "told_apart_by": "ex_ts_told_apart_by",
    })  # fmt: skip
    data = _join(data, store.read("output_scores", run_id), {
        **{c: c for c in ("columns_precision", "columns_recall", "cells_precision",
                          "cells_recall")},
        "ceilings_json": "ceilings",
    })  # fmt: skip
    data = _join(data, store.read("retrieval_scores", run_id), {
        "recall": "retrieval_recall", "precision": "retrieval_precision",
        "spurious": "retrieval_spurious", "probe_recall": "probe_recall",
        "probe_precision": "probe_precision",
    })  # fmt: skip
    components = [f for f in FIGURES if f.rsplit("_", 1)[-1] in ("precision", "recall")]
    data = _join(data, store.read("component_scores", run_id), {
        c: c for c in components if not c.startswith(("columns", "cells", "retrieval", "probe"))
    })  # fmt: skip
    data = _join(data, store.read("diagnoses", run_id), {
        "category": "diagnosis", "rule": "diagnosis_rule", "categories_json": "diagnosis_also",
        "findings_json": "findings",
    })  # fmt: skip
    gold = {} if case_set is None else {c.id: c.gold_sql for c in case_set.cases}
    data = data.assign(gold_sql=data["case_id"].map(gold))
    for name in FIELDS:
        if name not in data:
            data[name] = None
    if "ceilings" in data:
        data["ceilings"] = [json.loads(v) if isinstance(v, str) else [] for v in data["ceilings"]]
    data["diagnosis_also"] = [
        json.loads(v)[1:] if isinstance(v, str) else [] for v in data["diagnosis_also"]
    ]
    data["findings"] = [
        [f["text"] for f in json.loads(v)] if isinstance(v, str) else [] for v in data["findings"]
    ]
    for flag in ("ex", "ex_presentation", "ex_ts"):
        data[flag] = data[flag].astype("boolean")
    return data[list(FIELDS)].reset_index(drop=True)


def _join(data: pd.DataFrame, other: pd.DataFrame, columns: dict[str, str]) -> pd.DataFrame:
    """Left-join ``other``'s ``columns`` (renamed) on item_id; nothing when it is empty."""
    if other.empty:
        return data
    present = {k: v for k, v in columns.items() if k in other}
    picked = other[["item_id", *present]].rename(columns=present)
    return data.merge(picked, on="item_id", how="left")


def write_export(frame: pd.DataFrame, fmt: str, out: Path | None) -> str | None:
    """Write ``frame`` as ``fmt`` to ``out`` (or return the text for standard output)."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")
    if fmt == "parquet":
        if out is None:
            raise ConfigError("parquet is binary: give --out FILE.parquet")
        con = duckdb.connect()  # DuckDB writes Parquet: no pyarrow needed
        try:
            con.register("export", frame)
            con.execute("COPY export TO ? (FORMAT parquet)", [str(out)])
        finally:
            con.close()
        return None
    if fmt == "csv":
        flat = frame.assign(ceilings=[";".join(c) for c in frame["ceilings"]])
        text = flat.to_csv(index=False)
    else:
        cleaned = frame.astype(object).where(frame.notna(), None)
        records = cleaned.to_dict("records")
        text = "".join(json.dumps(r, default=str) + "\n" for r in records)
    if out is None:
        return text
    out.write_text(text, encoding="utf-8")
    return None
