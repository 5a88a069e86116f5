"""The analyse stage: the gold and cleaned candidate SQL of every item, analysed once (output
columns, component sets, required tables), memoised across the phrasings of a case and reused
across runs: table ``analysis_cache`` keeps each analysis under a hash of the gold and
candidate SQL, the dialect, the schema and the harness's code version, so a rerun or a second
configuration answering with the same SQL does not parse it again."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

import pandas as pd

from t2s_pipeline.cases import CaseSet
from t2s_pipeline.errors import SqlAnalysisError
from t2s_pipeline.run.analysis_cache import (
    Cached,
    analysis_from_json,
    analysis_json,
    gold_alone,
    item_analysis,
    load_cache,
    save_cache,
)
from t2s_pipeline.run.ask import candidate_sql, stored_outcomes
from t2s_pipeline.run.cache_keys import schema_hash, sql_key
from t2s_pipeline.run.context import RunContext, StageResult
from t2s_pipeline.run.items import items_from_frame
from t2s_pipeline.run.record import code_fingerprint
from t2s_pipeline.run.rows import write
from t2s_pipeline.scoring.item import ItemAnalysis
from t2s_pipeline.spread import SPREAD_FROM, STARTUP_JOBS, spread
from t2s_pipeline.sql.pair import PairJob, analyse_sides
from t2s_pipeline.sql.schema import Schema, domain_schemas
from t2s_pipeline.sut.client import Item, ItemOutcome

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Analysed:
    analyses: list[ItemAnalysis]
    failed: list[str]
    """Items whose gold query could not be analysed."""
    made: dict[str, ItemAnalysis]
    """The analyses made here, by cache key (distinct SQL pairs)."""
    reused: int
    """Distinct SQL pairs whose analysis came from ``cached``."""
    golds_reused: int = 0
    """Pairs analysed here whose gold's analysis came from ``cached``."""


def analyse_items(
    case_set: CaseSet,
    items: Sequence[Item],
    outcomes: Mapping[str, ItemOutcome],
    schemas: Mapping[str | None, Schema],
) -> list[ItemAnalysis]:
    """Analyse gold and candidate of every item (memoised on identical SQL of one case)."""
    analysed = _analyse_all(case_set, items, outcomes, schemas, {}, skip_failures=False)
    assert not analysed.failed
    return analysed.analyses


def safe_analyse_items(
    case_set: CaseSet,
    items: Sequence[Item],
    outcomes: Mapping[str, ItemOutcome],
    schemas: Mapping[str | None, Schema],
    cached: Cached | None = None,
) -> Analysed:
    """Like :func:`analyse_items`, but a gold query that does not parse skips its items; an
    analysis found in ``cached`` is reused."""
    return _analyse_all(case_set, items, outcomes, schemas, cached or {}, skip_failures=True)


def _analyse_all(
    case_set: CaseSet,
    items: Sequence[Item],
    outcomes: Mapping[str, ItemOutcome],
    schemas: Mapping[str | None, Schema],
    cached: Cached,
    skip_failures: bool,
    spread_from: int = SPREAD_FROM,
    startup_jobs: int = STARTUP_JOBS,
) -> Analysed:
    """One memo over every item: phrasings of a case answered with the same SQL share one
    analysis, and a case whose gold cannot be analysed is tried once. A pair not in ``cached``
    whose gold is (as the pair of that gold and no candidate) analyses only its candidate. The
    analyses not in ``cached`` are made over every core when there are ``spread_from`` or more;
    each made one is kept under its pair's key and, for its gold, under the gold's key."""
    cases = case_set.by_id()
    dialect, code = case_set.domain.dialect, code_fingerprint()
    hashes = {db_id: schema_hash(schema) for db_id, schema in schemas.items()}
    stored: dict[tuple[str, str | None], str] = {}  # memo key -> cache key
    gold_keys: dict[str, str] = {}  # case id -> cache key of its gold alone
    for item in items:
        case = cases[item.case_id]
        sql = candidate_sql(outcomes.get(item.item_id))
        if (case.id, sql) not in stored:
            shape = hashes[case.db_id]
            stored[case.id, sql] = sql_key(code, dialect, shape, case.gold_sql, sql)
            gold_keys.setdefault(case.id, sql_key(code, dialect, shape, case.gold_sql, None))
    memo: dict[tuple[str, str | None], ItemAnalysis | SqlAnalysisError] = {
        key: _recase(cached[digest], key[0]) for key, digest in stored.items() if digest in cached
    }
    todo = [key for key in stored if key not in memo]
    known = [cached.get(gold_keys[case_id]) for case_id, _ in todo]
    jobs: list[PairJob] = [
        (
            cases[case_id].gold_sql,
            sql,
            dialect,
            schemas[cases[case_id].db_id],
            gold is not None,
            None if gold is None else gold.gold_clauses,
        )
        for (case_id, sql), gold in zip(todo, known, strict=True)
    ]
    made: dict[str, ItemAnalysis] = {}
    sides = spread(analyse_sides, jobs, spread_from, startup_jobs)
    for key, gold, result in zip(todo, known, sides, strict=True):
        if isinstance(result, SqlAnalysisError):
            if not skip_failures:
                raise result
            memo[key] = result
            continue
        analysis = item_analysis(key[0], result, gold)
        memo[key] = analysis
        made[stored[key]] = analysis
        gold_key = gold_keys[key[0]]
        if gold_key not in cached and gold_key not in made:
            made[gold_key] = gold_alone(analysis)
    analyses: list[ItemAnalysis] = []
    failed: list[str] = []
    for item in items:
        found = memo[item.case_id, candidate_sql(outcomes.get(item.item_id))]
        if isinstance(found, SqlAnalysisError):
            failed.append(item.item_id)
        else:
            analyses.append(_retag(found, item.item_id))
    golds_reused = sum(1 for gold in known if gold is not None)
    return Analysed(analyses, failed, made, len(stored) - len(todo), golds_reused)


def _retag(analysis: ItemAnalysis, item_id: str) -> ItemAnalysis:
    return ItemAnalysis(
        **{**{f.name: getattr(analysis, f.name) for f in fields(analysis)}, "item_id": item_id}
    )


def _recase(analysis: ItemAnalysis, case_id: str) -> ItemAnalysis:
    return ItemAnalysis(
        **{**{f.name: getattr(analysis, f.name) for f in fields(analysis)}, "case_id": case_id}
    )


def analysis_row(analysis: ItemAnalysis) -> dict[str, object]:
    return {
        "item_id": analysis.item_id,
        "case_id": analysis.case_id,
        "required_json": json.dumps(list(analysis.required_tables)),
        "parse_error": analysis.candidate_error,
        "analysis_json": analysis_json(analysis),
    }


def analyses_from_frame(data: pd.DataFrame) -> dict[str, ItemAnalysis]:
    return {
        str(row.item_id): analysis_from_json(
            str(row.item_id), str(row.case_id), str(row.analysis_json)
        )
        for row in data.itertuples(index=False)
    }


def materialise(run: RunContext) -> StageResult:
    """Gold and cleaned candidate SQL of every item, analysed once (origins, sets, tables)."""
    store, case_set = run.store, run.case_set
    run_items = items_from_frame(store.read("items", run.run_id))
    outcomes = stored_outcomes(store, run.run_id, probes=False)
    schemas = domain_schemas(case_set.cases, case_set.domain)
    analysed = safe_analyse_items(case_set, run_items, outcomes, schemas, load_cache(store))
    analyses = analysed.analyses
    n = write(run, "sql_analyses", [analysis_row(a) for a in analyses])
    save_cache(store, analysed.made)
    return StageResult(
        {
            "sql_analyses": {
                "dagster/row_count": n,
                "gold_unparseable_items": len(analysed.failed),
                "analyses_reused": analysed.reused,
                "analyses_made": len(analysed.made),
                "gold_analyses_reused": analysed.golds_reused,
                "candidate_parse_errors": sum(
                    1 for a in analyses if a.candidate_error not in (None, "no SQL")
                ),
            }
        }
    )
