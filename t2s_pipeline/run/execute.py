"""The execute stages: every gold query (with its drift from the frozen result) and every
candidate query, live, through the one evaluation guard."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from t2s_pipeline.cases import CaseSet
from t2s_pipeline.execution.guard import Guard
from t2s_pipeline.execution.records import QueryJob, execute_jobs, to_frame
from t2s_pipeline.run.ask import candidate_sql, stored_outcomes
from t2s_pipeline.run.context import RunContext, StageResult
from t2s_pipeline.run.items import items_from_frame
from t2s_pipeline.scoring.item import gold_drift
from t2s_pipeline.sut.client import Item, ItemOutcome


def gold_jobs(case_set: CaseSet) -> list[QueryJob]:
    return [QueryJob(case.id, case, case.gold_sql) for case in case_set.cases]


def candidate_jobs(
    case_set: CaseSet, items: Sequence[Item], outcomes: Mapping[str, ItemOutcome]
) -> list[QueryJob]:
    cases = case_set.by_id()
    return [
        QueryJob(item.item_id, cases[item.case_id], candidate_sql(outcomes.get(item.item_id)))
        for item in items
    ]


def guard(run: RunContext) -> Guard:
    domain = run.case_set.domain
    return Guard.for_evaluation(
        domain.allowed_schemas, domain.dialect, run.spec.config.scorer.eval_row_cap
    )


def materialise_gold(run: RunContext) -> StageResult:
    """Every case's gold query, live, through the guarded executor; drift from the frozen result."""
    case_set, scorer = run.case_set, run.spec.config.scorer
    results = execute_jobs(case_set.domain, gold_jobs(case_set), guard(run), run.progress("gold"))
    data = to_frame(results, scorer.stored_rows)
    cases = case_set.by_id()
    data["drift"] = [gold_drift(cases[r.key], r, scorer) for r in results]
    run.store.replace_run("gold_results", run.run_id, data)
    return StageResult(
        {
            "gold_results": {
                "dagster/row_count": len(results),
                # counted in cases here; output_scores counts the items they cost
                "gold_failed_cases": sum(1 for r in results if not r.ok),
                "gold_truncated_cases": sum(1 for r in results if r.truncated),
                "gold_drift_cases": int(data["drift"].sum()),
            }
        }
    )


def materialise_candidates(run: RunContext) -> StageResult:
    """Every candidate query through the same guarded executor as the gold."""
    store = run.store
    run_items = items_from_frame(store.read("items", run.run_id))
    outcomes = stored_outcomes(store, run.run_id, probes=False)
    jobs = candidate_jobs(run.case_set, run_items, outcomes)
    results = execute_jobs(run.case_set.domain, jobs, guard(run), run.progress("candidates"))
    store.replace_run(
        "candidate_results", run.run_id, to_frame(results, run.spec.config.scorer.stored_rows)
    )
    statuses = [r.status for r in results]
    return StageResult(
        {
            "candidate_results": {
                "dagster/row_count": len(results),
                "guard_refused": statuses.count("refused") + statuses.count("timeout"),
                "candidate_truncated": sum(1 for r in results if r.truncated),
                "not_run": statuses.count("not_run"),
                "errors": statuses.count("error"),
            }
        }
    )
