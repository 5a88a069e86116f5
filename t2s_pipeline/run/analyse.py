"""The analyse stage: the gold and cleaned candidate SQL of every item, analysed once (output
columns, component sets, required tables), memoised across the phrasings of a case."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, fields

import pandas as pd

from t2s_pipeline.cases import Case, CaseSet
from t2s_pipeline.errors import SqlAnalysisError
from t2s_pipeline.run.ask import candidate_sql, outcomes_from_frames
from t2s_pipeline.run.context import RunContext, StageResult
from t2s_pipeline.run.items import items_from_frame
from t2s_pipeline.run.rows import write
from t2s_pipeline.scoring.components import ComponentSets
from t2s_pipeline.scoring.item import ItemAnalysis, sets_json
from t2s_pipeline.scoring.summary import (
    COMPONENT_SETS,
)
from t2s_pipeline.sql.analysis import OutputColumn
from t2s_pipeline.sql.pair import analyse_pair
from t2s_pipeline.sql.schema import Schema, domain_schemas
from t2s_pipeline.sut.client import Item, ItemOutcome

_LOG = logging.getLogger(__name__)


def analyse_items(
    case_set: CaseSet,
    items: Sequence[Item],
    outcomes: Mapping[str, ItemOutcome],
    schemas: Mapping[str | None, Schema],
) -> list[ItemAnalysis]:
    """Analyse gold and candidate of every item (memoised on identical SQL of one case)."""
    analyses, failed = _analyse_all(case_set, items, outcomes, schemas, skip_failures=False)
    assert not failed
    return analyses


def safe_analyse_items(
    case_set: CaseSet,
    items: Sequence[Item],
    outcomes: Mapping[str, ItemOutcome],
    schemas: Mapping[str | None, Schema],
) -> tuple[list[ItemAnalysis], list[str]]:
    """Like :func:`analyse_items`, but a gold query that does not parse skips its items."""
    return _analyse_all(case_set, items, outcomes, schemas, skip_failures=True)


def _analyse_all(
    case_set: CaseSet,
    items: Sequence[Item],
    outcomes: Mapping[str, ItemOutcome],
    schemas: Mapping[str | None, Schema],
    skip_failures: bool,
) -> tuple[list[ItemAnalysis], list[str]]:
    """One memo over every item: phrasings of a case answered with the same SQL share one
    analysis, and a case whose gold cannot be analysed is tried once."""
    cases = case_set.by_id()
    memo: dict[tuple[str, str | None], ItemAnalysis | SqlAnalysisError] = {}
    analyses: list[ItemAnalysis] = []
    failed: list[str] = []
    for item in items:
        case = cases[item.case_id]
        sql = candidate_sql(outcomes.get(item.item_id))
        key = (case.id, sql)
        if key not in memo:
            try:
                memo[key] = _analyse(case, sql, case_set.domain.dialect, schemas[case.db_id])
            except SqlAnalysisError as error:
                if not skip_failures:
                    raise
                memo[key] = error
        found = memo[key]
        if isinstance(found, SqlAnalysisError):
            failed.append(item.item_id)
        else:
            analyses.append(_retag(found, item.item_id))
    return analyses, failed


def _retag(analysis: ItemAnalysis, item_id: str) -> ItemAnalysis:
    return ItemAnalysis(
        **{**{f.name: getattr(analysis, f.name) for f in fields(analysis)}, "item_id": item_id}
    )


def _analyse(case: Case, candidate_sql: str | None, dialect: str, schema: Schema) -> ItemAnalysis:
    pair = analyse_pair(case.gold_sql, candidate_sql or "SELECT 1", dialect, schema)
    gold = pair.gold
    candidate = pair.candidate if candidate_sql else None
    error = pair.candidate_error if candidate_sql else "no SQL"
    return ItemAnalysis(
        item_id="",
        case_id=case.id,
        required_tables=tuple(sorted(gold.required_tables)),
        gold_columns=gold.output_columns,
        gold_components=gold.components,
        gold_ordered=gold.has_order_by,
        candidate_columns=None if candidate is None else candidate.output_columns,
        candidate_components=None if candidate is None else candidate.components,
        candidate_error=error,
    )


def analysis_row(analysis: ItemAnalysis) -> dict[str, object]:
    return {
        "item_id": analysis.item_id,
        "case_id": analysis.case_id,
        "required_json": json.dumps(list(analysis.required_tables)),
        "parse_error": analysis.candidate_error,
        "analysis_json": json.dumps(
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
            }
        ),
    }


def analyses_from_frame(data: pd.DataFrame) -> dict[str, ItemAnalysis]:
    out: dict[str, ItemAnalysis] = {}
    for row in data.itertuples(index=False):
        d = json.loads(str(row.analysis_json))
        out[str(row.item_id)] = ItemAnalysis(
            item_id=str(row.item_id),
            case_id=str(row.case_id),
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
        )
    return out


def _components(data: Mapping[str, object]) -> ComponentSets:
    sets = {name: frozenset(data.get(name) or ()) for name in COMPONENT_SETS}  # type: ignore[call-overload]
    return ComponentSets(**sets, display=dict(data.get("display") or {}))  # type: ignore[call-overload]


def materialise(run: RunContext) -> StageResult:
    """Gold and cleaned candidate SQL of every item, analysed once (origins, sets, tables)."""
    store, case_set = run.store, run.case_set
    run_items = items_from_frame(store.read("items", run.run_id))
    outcomes = outcomes_from_frames(store.read("sut_responses", run.run_id), pd.DataFrame())
    schemas = domain_schemas(case_set.cases, case_set.domain)
    analyses, failed = safe_analyse_items(case_set, run_items, outcomes, schemas)
    n = write(run, "sql_analyses", [analysis_row(a) for a in analyses])
    return StageResult(
        {
            "sql_analyses": {
                "dagster/row_count": n,
                "gold_unparseable_items": len(failed),
                "candidate_parse_errors": sum(
                    1 for a in analyses if a.candidate_error not in (None, "no SQL")
                ),
            }
        }
    )
