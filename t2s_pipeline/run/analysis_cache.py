"""The analyses runs share: table ``analysis_cache`` keeps each analysis of a gold and
candidate pair (and each gold's alone, as the pair of that gold and no candidate) under a hash
of both SQL texts, the dialect, the schema and the harness's code
(:mod:`~t2s_pipeline.run.cache_keys`), as JSON; and item analyses built from what
:func:`~t2s_pipeline.sql.pair.analyse_sides` made."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import asdict, replace

import pandas as pd

from t2s_pipeline.scoring.components import ComponentSets
from t2s_pipeline.scoring.item import ItemAnalysis, sets_json
from t2s_pipeline.scoring.ordering import OrderKeys
from t2s_pipeline.scoring.summary import COMPONENT_SETS
from t2s_pipeline.sql.analysis import OutputColumn
from t2s_pipeline.sql.pair import Sides
from t2s_pipeline.store import ResultsStore

CACHE_TABLE = "analysis_cache"
Cached = Mapping[str, ItemAnalysis]
"""Earlier analyses by cache key; their ``item_id`` is not meaningful."""


def gold_alone(analysis: ItemAnalysis) -> ItemAnalysis:
    """The analysis of the same gold with no candidate (what the analysis of that pair gives)."""
    return replace(
        analysis,
        item_id="",
        candidate_columns=None,
        candidate_components=None,
        candidate_error="no SQL",
        candidate_order_keys=None,
    )


def item_analysis(case_id: str, sides: Sides, gold: ItemAnalysis | None) -> ItemAnalysis:
    """A pair's analysis from what :func:`~t2s_pipeline.sql.pair.analyse_sides` made; its gold side from ``gold``
    (an earlier run's) when it made none."""
    if sides.gold is not None:
        gold = ItemAnalysis(
            item_id="",
            case_id=case_id,
            required_tables=tuple(sorted(sides.gold.required_tables)),
            gold_columns=sides.gold.output_columns,
            gold_components=sides.gold.components,
            gold_ordered=sides.gold.has_order_by,
            candidate_columns=None,
            candidate_components=None,
            candidate_error=None,
            gold_order_keys=sides.gold.order_keys,
            gold_clauses=sides.gold.top_clauses,
        )
    assert gold is not None, "a pair analysed without its gold only when the gold was known"
    candidate = sides.candidate
    return replace(
        gold,
        item_id="",
        case_id=case_id,
        candidate_columns=None if candidate is None else candidate.output_columns,
        candidate_components=None if candidate is None else candidate.components,
        candidate_error=sides.candidate_error,
        candidate_order_keys=None if candidate is None else candidate.order_keys,
    )


def analysis_json(analysis: ItemAnalysis) -> str:
    return json.dumps(
        {
            "required_tables": list(analysis.required_tables),
            "gold_columns": [asdict(c) for c in analysis.gold_columns],
            "gold_components": sets_json(analysis.gold_components),
            "gold_ordered": analysis.gold_ordered,
            "candidate_columns": None
            if analysis.candidate_columns is None
            else [asdict(c) for c in analysis.candidate_columns],
            "candidate_components": None
            if analysis.candidate_components is None
            else sets_json(analysis.candidate_components),
            "candidate_error": analysis.candidate_error,
            "gold_order_keys": _keys_json(analysis.gold_order_keys),
            "candidate_order_keys": _keys_json(analysis.candidate_order_keys),
            "gold_clauses": None
            if analysis.gold_clauses is None
            else sorted(analysis.gold_clauses),
        }
    )


def analysis_from_json(item_id: str, case_id: str, text: str) -> ItemAnalysis:
    d = json.loads(text)
    return ItemAnalysis(
        item_id=item_id,
        case_id=case_id,
        required_tables=tuple(d["required_tables"]),
        gold_columns=tuple(OutputColumn(**c) for c in d["gold_columns"]),
        gold_components=_components(d["gold_components"]),
        gold_ordered=bool(d["gold_ordered"]),
        candidate_columns=None
        if d["candidate_columns"] is None
        else tuple(OutputColumn(**c) for c in d["candidate_columns"]),
        candidate_components=None
        if d["candidate_components"] is None
        else _components(d["candidate_components"]),
        candidate_error=d["candidate_error"],
        gold_order_keys=_keys(d.get("gold_order_keys")),
        candidate_order_keys=_keys(d.get("candidate_order_keys")),
        gold_clauses=None if d.get("gold_clauses") is None else frozenset(d["gold_clauses"]),
    )


def _keys_json(keys: OrderKeys) -> list[int] | None:
    return None if keys is None else list(keys)


def _keys(stored: object) -> OrderKeys:
    """Order keys as stored; analyses stored before they were kept read as unknown (None)."""
    return None if not isinstance(stored, list) else tuple(int(k) for k in stored)


def load_cache(store: ResultsStore) -> dict[str, ItemAnalysis]:
    """Every analysis an earlier run stored (runs add fragments; equal keys hold equal
    analyses, so any one will do)."""
    data = store.read(CACHE_TABLE)
    return {
        str(row.key): analysis_from_json("", "", str(row.analysis_json))
        for row in data.drop_duplicates("key").itertuples(index=False)
    }


def save_cache(store: ResultsStore, made: Mapping[str, ItemAnalysis]) -> int:
    if not made:
        return 0
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    rows = [
        {"key": k, "analysis_json": analysis_json(a), "created_at": now} for k, a in made.items()
    ]
    return store.append(CACHE_TABLE, pd.DataFrame(rows))


def _components(data: Mapping[str, object]) -> ComponentSets:
    sets = {name: frozenset(data.get(name) or ()) for name in COMPONENT_SETS}  # type: ignore[call-overload]
    return ComponentSets(**sets, display=dict(data.get("display") or {}))  # type: ignore[call-overload]
