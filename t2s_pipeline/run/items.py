"""The items stage: cases x phrasings, each with its leave-one-out exclusions (the case and
its twins), stored with the request context the SUT is sent."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence

import pandas as pd

from t2s_pipeline.cases import CaseSet
from t2s_pipeline.run.analysis_cache import item_analysis, save_cache
from t2s_pipeline.run.cache_keys import schema_hash, sql_key
from t2s_pipeline.run.context import RunContext, StageResult
from t2s_pipeline.run.record import code_fingerprint, record_run_start
from t2s_pipeline.run.rows import write
from t2s_pipeline.runs import run_tags
from t2s_pipeline.scoring.item import ItemAnalysis
from t2s_pipeline.spread import spread
from t2s_pipeline.sql.canonical import twins_of
from t2s_pipeline.sql.pair import Sides, read_gold
from t2s_pipeline.sql.schema import domain_schemas
from t2s_pipeline.store import ResultsStore
from t2s_pipeline.sut.client import Item, build_items
from t2s_pipeline.sut.contract import RequestContext


def items_rows(items: Sequence[Item], case_set: CaseSet) -> list[dict[str, object]]:
    cases = case_set.by_id()
    return [
        {
            "item_id": item.item_id,
            "case_id": item.case_id,
            "phrasing": item.phrasing,
            "question": item.question,
            "exclude_json": json.dumps(list(item.exclude)),
            "evidence": item.evidence,
            "difficulty": cases[item.case_id].difficulty,
            "context_json": None if item.context is None else item.context.model_dump_json(),
        }
        for item in items
    ]


def items_from_frame(data: pd.DataFrame) -> list[Item]:
    return [
        Item(
            item_id=str(row.item_id),
            case_id=str(row.case_id),
            phrasing=int(row.phrasing),  # type: ignore[arg-type]
            question=str(row.question),
            exclude=tuple(json.loads(str(row.exclude_json))),
            evidence=None if pd.isna(row.evidence) else str(row.evidence),
            context=_context(getattr(row, "context_json", None)),
        )
        for row in data.sort_values(["case_id", "phrasing"]).itertuples(index=False)
    ]


def _context(text: object) -> RequestContext | None:
    """An item's stored request context; None for items stored before contexts were sent."""
    if text is None or (isinstance(text, float) and pd.isna(text)):
        return None
    return RequestContext.model_validate_json(str(text))


CANONICAL_CACHE = "canonical_cache"


def twins(store: ResultsStore, case_set: CaseSet) -> tuple[dict[str, frozenset[str]], int]:
    """Every case's twins, and how many gold queries' canonical forms came from earlier runs.

    Each gold not read before is read once (:func:`~t2s_pipeline.sql.pair.read_gold`, over
    every core when there are many): its canonical form is kept in ``canonical_cache`` and its
    analysis in ``analysis_cache`` (as the gold with no candidate), both under a hash of the
    gold SQL, the dialect, the schema and the harness's code, so the analyse stage reads only
    candidates and a later run of the same cases parses no gold here.
    """
    cases, domain = case_set.cases, case_set.domain
    schemas = domain_schemas(cases, domain)
    code, dialect = code_fingerprint(), domain.dialect
    shapes = {db_id: schema_hash(schema) for db_id, schema in schemas.items()}
    keys = {c.id: sql_key(code, dialect, shapes[c.db_id], c.gold_sql, None) for c in cases}
    stored = _stored_forms(store)
    forms = {case_id: stored[key] for case_id, key in keys.items() if key in stored}
    reused = len(forms)
    todo = [case for case in cases if case.id not in forms]
    jobs = [(case.gold_sql, dialect, schemas[case.db_id]) for case in todo]
    golds: dict[str, ItemAnalysis] = {}
    for case, reading in zip(todo, spread(read_gold, jobs), strict=True):
        forms[case.id] = reading.canonical
        if reading.analysis is not None:
            sides = Sides(reading.analysis, None, "no SQL")
            golds[keys[case.id]] = item_analysis(case.id, sides, None)
    if todo:
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        rows = [{"key": keys[c.id], "canonical": forms[c.id], "created_at": now} for c in todo]
        store.append(CANONICAL_CACHE, pd.DataFrame(rows))
        save_cache(store, golds)
    return twins_of(cases, forms), reused


def _stored_forms(store: ResultsStore) -> dict[str, str | None]:
    data = store.read(CANONICAL_CACHE)
    return {
        str(row.key): None if pd.isna(row.canonical) else str(row.canonical)
        for row in data.drop_duplicates("key").itertuples(index=False)
    }


def materialise(run: RunContext) -> StageResult:
    """Cases x phrasings, each with its leave-one-out exclusions (the case and its twins)."""
    case_set = run.case_set
    twins_by_case, reused = twins(run.store, case_set)
    built = build_items(
        case_set, twins_by_case, run.spec.config.phrasings, run.spec.config.sut.isolate
    )
    n = write(run, "items", items_rows(built, case_set))
    record_run_start(run.store, run.spec, case_set)
    return StageResult(
        {
            "items": {
                "dagster/row_count": n,
                "n_cases": len(case_set.cases),
                "n_twin_cases": sum(1 for t in twins_by_case.values() if t),
                "canonical_forms_reused": reused,
                "title": title(run),
                **{f"run/{k.removeprefix('t2s/')}": v for k, v in run_tags(run.spec).items()},
            }
        }
    )


def title(run: RunContext) -> str:
    """A readable title: the configuration, its SUT and its labels."""
    config = run.spec.config
    labels = ", ".join(f"{k}={v}" for k, v in config.labels.items())
    sut = f"{config.sut.kind} {run.spec.sut_fingerprint}"
    return f"{config.name} ({sut}){': ' + labels if labels else ''}"
