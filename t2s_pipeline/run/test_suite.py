"""The test-suite stage (issue 22): ``ex_ts``, EX on the snapshot and on every neighbour of the
case's distilled suite. An item that matches on the snapshot only is kept with the neighbour
that tells it apart and the rows each side returned there."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping, Sequence

import pandas as pd

from t2s_pipeline.execution.records import ExecutedResult, QueryJob, execute_jobs, jsonable
from t2s_pipeline.run.ask import candidate_sql, stored_outcomes
from t2s_pipeline.run.context import RunContext, StageResult
from t2s_pipeline.run.execute import guard
from t2s_pipeline.run.rows import family_metadata, write
from t2s_pipeline.scoring.ordering import RowOrder
from t2s_pipeline.testsuite.suite import (
    SuiteSettings,
    TestSuite,
    ensure_suite,
    first_difference,
    gold_is_ordered,
    row_order,
)

PREVIEW_ROWS = 5


def suite_settings(run: RunContext) -> SuiteSettings:
    config = run.spec.config
    return SuiteSettings(
        seed=config.test_suite.seed,
        random_neighbours=config.test_suite.random_neighbours,
        float_decimals=config.scorer.float_decimals,
        ordered_compare=config.scorer.ordered_compare,
    )


def materialise_suite(run: RunContext) -> StageResult:
    """The case set's distilled test suite, built on first use and reused after; its value is
    the :class:`TestSuite` (None when the configuration leaves test suites off)."""
    if not run.spec.config.test_suite.enabled:
        return StageResult({"test_suites": {"enabled": False}})
    suite = ensure_suite(
        run.case_set, guard(run), suite_settings(run), run.info, run.progress("test suite build")
    )
    cases = suite.cases.values()
    return StageResult(
        {
            "test_suites": {
                "enabled": True,
                "suite_key": suite.key,
                "path": str(suite.folder),
                "neighbours": len(suite.neighbours),
                "cases": len(suite.cases),
                "cases_with_neighbours": sum(1 for c in cases if c.neighbours),
                "mutants": sum(c.mutants for c in cases),
                "mutants_snapshot_missed": sum(c.snapshot_missed for c in cases),
                "mutants_suite_caught": sum(c.suite_caught for c in cases),
            }
        },
        value=suite,
    )


def materialise(run: RunContext) -> StageResult:
    """``ex_ts`` per item when the configuration turns test suites on; else no rows."""
    if not run.spec.config.test_suite.enabled:
        write(run, "test_suite_matches", [])
        return StageResult({"test_suite_matches": {"dagster/row_count": 0, "enabled": False}})
    suite = ensure_suite(run.case_set, guard(run), suite_settings(run), run.info)
    rows = test_suite_rows(run, suite)
    write(run, "test_suite_matches", rows)
    snapshot_only = [r for r in rows if r["exact_match"] and r["ex_ts"] is False]
    metadata: dict[str, object] = dict(family_metadata(rows, ["exact_match", "ex_ts"]))
    metadata |= {
        "suite_key": suite.key,
        "snapshot_only": len(snapshot_only),
        "neighbours_read": sum(int(str(r["neighbours"] or 0)) for r in rows),
    }
    return StageResult({"test_suite_matches": metadata}, value=rows)


def test_suite_rows(run: RunContext, suite: TestSuite) -> list[dict[str, object]]:
    store = run.store
    exact = store.read("exact_matches", run.run_id)
    outcomes = stored_outcomes(store, run.run_id, probes=False)
    cases = run.case_set.by_id()
    checked = [
        r for r in exact.itertuples(index=False)
        if r.exact_match is True and r.case_id in suite.cases
    ]  # fmt: skip
    jobs: dict[str, list[QueryJob]] = {}
    for r in checked:
        sql = candidate_sql(outcomes.get(str(r.item_id)))
        for name in suite.cases[str(r.case_id)].neighbours:
            jobs.setdefault(name, []).append(QueryJob(str(r.item_id), cases[str(r.case_id)], sql))
    on_neighbours = _run_on_neighbours(run, suite, jobs)
    gold = suite.gold_results()
    settings = suite_settings(run)
    rows = []
    for r in exact.itertuples(index=False):
        ex = None if pd.isna(r.exact_match) else bool(r.exact_match)
        row: dict[str, object] = {
            "item_id": r.item_id, "case_id": r.case_id, "exact_match": ex, "ex_ts": ex,
            "neighbours": 0, "suite_key": suite.key,
        }  # fmt: skip
        case_suite = suite.cases.get(str(r.case_id))
        if ex and case_suite is not None:
            case = cases[str(r.case_id)]
            ordered = gold_is_ordered(case.gold_sql, run.case_set.domain.dialect,
                                      settings.ordered_compare)  # fmt: skip
            order = row_order(case.gold_sql, candidate_sql(outcomes.get(str(r.item_id))),
                              run.case_set.domain.dialect, settings.ordered_compare)  # fmt: skip
            row |= _verdict(str(r.item_id), str(r.case_id), case_suite.neighbours, gold,
                            on_neighbours, ordered, settings.float_decimals, order)  # fmt: skip
        rows.append(row)
    return rows


def _run_on_neighbours(
    run: RunContext, suite: TestSuite, jobs: Mapping[str, Sequence[QueryJob]]
) -> dict[str, dict[str, ExecutedResult]]:
    """Each neighbour's candidate results, through the same evaluation guard as EX."""
    domain = run.case_set.domain
    out: dict[str, dict[str, ExecutedResult]] = {}
    total = sum(len(j) for j in jobs.values())
    done = 0
    progress = run.progress("test suite")
    for name, group in sorted(jobs.items()):
        on = dataclasses.replace(domain, database=str(suite.neighbour_path(name)))
        results = execute_jobs(on, group, guard(run), refusal_log_level=logging.INFO)
        out[name] = {r.key: r for r in results}
        done += len(group)
        progress(done, total)
    return out


def _verdict(
    item_id: str,
    case_id: str,
    neighbours: Sequence[str],
    gold: Mapping[str, ExecutedResult],
    on_neighbours: Mapping[str, Mapping[str, ExecutedResult]],
    ordered: bool,
    float_decimals: int,
    order: RowOrder | None,
) -> dict[str, object]:
    """ex_ts for one EX-true item: the first neighbour where the results differ, if any."""
    found = first_difference(
        case_id, neighbours, gold, lambda name: on_neighbours.get(name, {}).get(item_id),
        ordered, float_decimals, order,
    )  # fmt: skip
    if found is None:
        return {"ex_ts": True, "neighbours": len(neighbours)}
    return {
        "ex_ts": False,
        "neighbours": len(neighbours),
        "told_apart_by": found.neighbour,
        "reference_json": _preview(found.reference),
        "candidate_json": _preview(found.candidate),
    }


def _preview(result: ExecutedResult) -> str:
    if not result.ok:
        return json.dumps({"status": result.status, "reason": result.reason})
    return json.dumps(
        {
            "columns": list(result.columns),
            "rows": jsonable(result.rows[:PREVIEW_ROWS]),
            "n_rows": len(result.rows),
        }
    )


def snapshot_only_finding(row: Mapping[str, object]) -> str | None:
    """The diagnosis's finding for an item that matches on the snapshot only, else None."""
    if not row.get("exact_match") or row.get("ex_ts") is not False:
        return None
    reference = _summary(row.get("reference_json"))
    candidate = _summary(row.get("candidate_json"))
    return (
        f"matches on the snapshot only: on neighbour {row.get('told_apart_by')} the reference "
        f"returns {reference} and the candidate {candidate}"
    )


def _summary(text: object) -> str:
    data = json.loads(str(text)) if isinstance(text, str) and text else {}
    if "rows" not in data:
        return f"no result ({data.get('status', 'missing')})"
    rows = data["rows"]
    shown = json.dumps(rows[:3])
    more = "" if data.get("n_rows", 0) <= 3 else f" ... ({data['n_rows']} rows)"
    return f"{shown}{more}"
