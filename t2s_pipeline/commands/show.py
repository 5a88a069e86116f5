"""``t2s show RUN --item ID``: one item's question, both SQL texts, stored rows and figures."""

from __future__ import annotations

import json
import math

import pandas as pd

from t2s_pipeline.run.summary import joined_items
from t2s_pipeline.scoring.item import json_list
from t2s_pipeline.scoring.summary import (
    FAMILY_COLUMNS,
)
from t2s_pipeline.store import ResultsStore


def describe_item(store: ResultsStore, run_id: str, item_id: str) -> str:
    """One item's question, both SQL texts, stored rows and every family's figures."""
    items = store.read("items", run_id)
    match = items[items["item_id"] == item_id]
    if match.empty:
        from t2s_pipeline.errors import ConfigError

        raise ConfigError(
            f"no item {item_id!r} in run {run_id}; ids look like <case-id>#<phrasing>"
        )
    item = match.iloc[0]
    lines = [f"item {item_id} ({item['difficulty']}): {item['question']}"]
    responses = store.read("sut_responses", run_id)
    response = responses[responses["item_id"] == item_id].iloc[0]
    lines.append(f"candidate SQL: {response['sql']}")
    if not pd.isna(response["error_class"]):
        lines.append(f"SUT error: {response['error_class']} {response['error_message']}")
    for label, table, key in (
        ("gold", "gold_results", item["case_id"]),
        ("candidate", "candidate_results", item_id),
    ):
        stored = store.read(table, run_id)
        row = stored[stored["key"] == key].iloc[0]
        lines.append(f"{label}: {row['status']} {'' if pd.isna(row['reason']) else row['reason']}")
        lines.append(f"  columns {row['columns_json']}; {row['n_rows']} row(s)")
        for preview in json.loads(str(row["preview_json"]))[:10]:
            lines.append(f"  {preview}")
    joined = joined_items(store, run_id)
    figures = joined[joined["item_id"] == item_id].iloc[0].to_dict()
    for family, metrics in FAMILY_COLUMNS.items():
        shown = [
            f"{metric} {_shown(figures[column])}"
            for metric, column in metrics.items()
            if column in figures
        ]
        if shown:
            lines.append(f"{family}: " + ", ".join(shown))
    for name, label in (
        ("category", "diagnosis"),
        ("ceilings_json", "ceilings"),
        ("pairs_json", "column pairs"),
        ("key_json", "row key"),
    ):
        if name in figures:
            lines.append(f"{label}: {_shown(figures[name])}")
    also = [c for c in json_list(figures.get("categories_json"))[1:]]
    if also:
        lines.append(f"also holds: {', '.join(map(str, also))}")
    for finding in json_list(figures.get("findings_json")):
        if isinstance(finding, dict):
            lines.append(f"  finding ({finding.get('category')}): {finding.get('text')}")
    return "\n".join(lines)


def _shown(value: object) -> str:
    """A stored figure for people: ``undefined`` for NULL, three decimals for a fraction.

    >>> [_shown(None), _shown(float("nan")), _shown(0.5), _shown(True), _shown("[]")]
    ['undefined', 'undefined', '0.500', 'True', '[]']
    """
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "undefined"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
