"""The per-run assets of ``eval_run``: thin wiring over ``t2s_pipeline.evaluation``.

Each asset reads what it needs from the results store, calls the library, replaces its run's
rows in one table and attaches metadata (counts, ceilings) so lineage shows where every
ceiling count comes from. All writers share one pool so one DuckDB writer runs at a time.
"""
# No `from __future__ import annotations`: Dagster inspects the context annotation at runtime.

import asyncio
import datetime as dt
import json
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import dagster as dg
import pandas as pd

from t2s_pipeline import console
from t2s_pipeline import evaluation as ev
from t2s_pipeline.assets.cases import gold_cases
from t2s_pipeline.assets.partitions import eval_run_partitions
from t2s_pipeline.assets.resources import T2SSettings
from t2s_pipeline.casecheck import domain_schemas, evaluation_guard, find_twins
from t2s_pipeline.cases import CaseSet
from t2s_pipeline.execution.hostile_targets import guard_warehouse
from t2s_pipeline.execution.records import execute_jobs, from_frame, to_frame
from t2s_pipeline.runs import RunSpec, run_tags
from t2s_pipeline.scoring.summary import COMPONENT_SETS
from t2s_pipeline.sut.client import build_items

POOL = "t2s_results_writer"
# Partitioned checks (one status per run partition) are a preview feature in Dagster 1.13;
# this project depends on them and pins the Dagster version, so the notice is noise.
warnings.filterwarnings(
    "ignore", message="Specifying a partitions_def on an AssetCheckSpec", category=dg.PreviewWarning
)
GROUP = "run"
_METRICS = [
    "recall",
    "precision",
    "probe_recall",
    "probe_precision",
    "columns_precision",
    "columns_recall",
    "cells_precision",
    "cells_recall",
    "selectivity",
    *[f"{n}_{s}" for n in COMPONENT_SETS for s in ("precision", "recall")],
]


def _run(context: dg.AssetExecutionContext, settings: T2SSettings) -> tuple[RunSpec, CaseSet]:
    spec = settings.spec(context.partition_key)
    case_set = settings.case_set(spec.config.cases)
    if case_set.content_hash != spec.case_set_hash:
        context.log.warning(
            f"the gold cases changed since run {spec.run_id} was registered; the gold-case "
            "sensor registers a new run for the new case set"
        )
    return spec, case_set


def _write(settings: T2SSettings, table: str, run_id: str, rows: list[dict[str, object]]) -> int:
    return settings.store().replace_run(table, run_id, ev.frame(rows, _METRICS))


def _partition(context: dg.AssetCheckExecutionContext, asset: str) -> str | None:
    """The run partition a check evaluates. Checks are partitioned like the assets they
    check, so each run partition has its own check status; ``asset`` names the checked asset
    for the older, unpartitioned path (a check launched without a partition)."""
    if context.has_partition_key:
        return context.partition_key
    event = context.instance.get_latest_materialization_event(dg.AssetKey(asset))
    materialization = None if event is None else event.asset_materialization
    return None if materialization is None else materialization.partition


def _title(spec: RunSpec) -> str:
    """A readable title: the configuration, its SUT and its labels."""
    labels = ", ".join(f"{k}={v}" for k, v in spec.config.labels.items())
    return f"{spec.config.name} ({spec.config.sut.kind} {spec.sut_fingerprint}){': ' + labels if labels else ''}"


def _progress(context: dg.AssetExecutionContext, what: str) -> ev.Progress:
    """Progress of one stage: a line in the run's log every tenth of the way, and the
    console's bar when ``t2s run`` shows one (:mod:`t2s_pipeline.console`)."""
    step = {"next": 0}
    bar: list[console.Stage | None] = []

    def report(done: int, total: int) -> None:
        if not bar:
            bar.append(console.stage(what, total))
        if bar[0] is not None:
            bar[0].update(done)
        if done * 10 >= step["next"] * total or done == total:
            context.log.info(f"{what}: {done}/{total}")
            step["next"] += 1

    return report


@dg.asset(partitions_def=eval_run_partitions, deps=[gold_cases], group_name=GROUP, pool=POOL)
def items(context: dg.AssetExecutionContext, settings: T2SSettings) -> dg.MaterializeResult:
    """Cases x phrasings, each with its leave-one-out exclusions (the case and its twins)."""
    spec, case_set = _run(context, settings)
    twins = find_twins(case_set.cases, case_set.domain)
    built = build_items(case_set, twins, spec.config.phrasings, spec.config.sut.isolate)
    n = _write(settings, "items", spec.run_id, ev.items_rows(built, case_set))
    ev.record_run_start(settings.store(), spec, case_set)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": n,
            "n_cases": len(case_set.cases),
            "n_twin_cases": sum(1 for t in twins.values() if t),
            "title": _title(spec),
            **{f"run/{k.removeprefix('t2s/')}": v for k, v in run_tags(spec).items()},
        }
    )


@dg.multi_asset(
    partitions_def=eval_run_partitions,
    group_name=GROUP,
    pool=POOL,
    specs=[
        dg.AssetSpec("sut_responses", deps=[items], description="The SUT's answer per item."),
        dg.AssetSpec(
            "retrieval_probes", deps=[items], description="Direct retriever probe per item."
        ),
    ],
)
def sut_responses(
    context: dg.AssetExecutionContext, settings: T2SSettings
) -> Iterator[dg.MaterializeResult]:
    """Ask the SUT every item over its API (and probe its retriever), recording every failure."""
    spec, case_set = _run(context, settings)
    store = settings.store()
    run_items = ev.items_from_frame(store.read("items", spec.run_id))
    with ev.open_client(spec.config, case_set) as client:
        isolated = ev.isolation(client, context.log.warning)
        outcomes = asyncio.run(client.ask_all(run_items, spec.run_id, _progress(context, "asked")))
    by_id = {i.item_id: i for i in run_items}
    responses, leaked = ev.response_rows(outcomes, by_id, isolated)
    if leaked:
        context.log.warning(
            f"{len(leaked)} item(s) got back an example that was excluded (the case or a twin), "
            f"e.g. {leaked[:3]}; they count as not_isolated"
        )
    probes = [ev.probe_row(o, by_id[o.item_id]) for o in outcomes]
    _write(settings, "sut_responses", spec.run_id, responses)
    _write(settings, "retrieval_probes", spec.run_id, probes)
    errors = [o.error_class for o in outcomes if o.error_class]
    yield dg.MaterializeResult(
        asset_key="sut_responses",
        metadata={
            "dagster/row_count": len(responses),
            "ceiling/agent_timeout": errors.count("timeout"),
            "ceiling/agent_error": len(errors) - errors.count("timeout"),
            "ceiling/not_isolated": sum(1 for r in responses if not r["isolated"]),
            "excluded_examples_returned": len(leaked),
            "sut_refusals": sum(
                1 for o in outcomes if o.response is not None and o.response.refused
            ),
        },
    )
    yield dg.MaterializeResult(
        asset_key="retrieval_probes",
        metadata={
            "dagster/row_count": len(probes),
            "probe_errors": sum(1 for o in outcomes if o.probe_error_class),
        },
    )


@dg.asset(partitions_def=eval_run_partitions, deps=[items], group_name=GROUP, pool=POOL)
def gold_results(context: dg.AssetExecutionContext, settings: T2SSettings) -> dg.MaterializeResult:
    """Every case's gold query, live, through the guarded executor; drift from the frozen result."""
    spec, case_set = _run(context, settings)
    guard = evaluation_guard(case_set.domain, spec.config.scorer.eval_row_cap)
    results = execute_jobs(
        case_set.domain, ev.gold_jobs(case_set), guard, _progress(context, "gold")
    )
    data = to_frame(results, spec.config.scorer.stored_rows)
    cases = case_set.by_id()
    data["drift"] = [ev.gold_drift(cases[r.key], r, spec.config.scorer) for r in results]
    settings.store().replace_run("gold_results", spec.run_id, data)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": len(results),
            "ceiling/gold_failed": sum(1 for r in results if not r.ok),
            "ceiling/gold_truncated": sum(1 for r in results if r.truncated),
            "ceiling/gold_drift": int(data["drift"].sum()),
        }
    )


@dg.asset_check(
    partitions_def=eval_run_partitions,
    asset="sut_responses",
    blocking=True,
    description="Leave-one-out held: under isolate, no item is not_isolated (SPEC 4).",
)
def isolation(context: dg.AssetCheckExecutionContext, settings: T2SSettings) -> dg.AssetCheckResult:
    """Blocking: a run whose SUT could see a case's own answer is not scored (``isolation:
    warn`` in the configuration's ``sut:`` makes it a warning)."""
    run_id = _partition(context, "sut_responses")
    if run_id is None:
        return dg.AssetCheckResult(passed=True, metadata={"run_id": ""})
    sut = settings.spec(run_id).config.sut
    data = settings.store().read("sut_responses", run_id)
    # An item the SUT never answered (agent_error) could not use anything: not a leak.
    answered = data[data["error_class"].isna()] if not data.empty else data
    leaky = (
        sorted(answered.loc[~answered["isolated"].astype(bool), "item_id"]) if len(answered) else []
    )
    metadata: dict[str, str | int] = {
        "run_id": run_id,
        "not_isolated": len(leaky),
        "items": ", ".join(leaky[:20]),
        "isolate": str(sut.isolate),
    }
    if not sut.isolate:
        return dg.AssetCheckResult(passed=True, metadata=metadata)
    return dg.AssetCheckResult(
        passed=not leaky,
        severity=dg.AssetCheckSeverity.ERROR
        if sut.isolation == "require"
        else dg.AssetCheckSeverity.WARN,
        description=None
        if not leaky
        else (
            f"{len(leaky)} item(s) not isolated (e.g. {', '.join(leaky[:3])}): the SUT does not "
            "say it honours exclusions, or its trace or probe returned the case or a twin. "
            "Fix: honour exclude_examples and report supports_exclusions in the health, or "
            "set sut.isolation: warn to score the run anyway"
        ),
        metadata=metadata,
    )


@dg.asset_check(
    partitions_def=eval_run_partitions,
    asset=gold_results,
    description="Every gold query executes (gold_failed = 0).",
)
def gold_executes(
    context: dg.AssetCheckExecutionContext, settings: T2SSettings
) -> dg.AssetCheckResult:
    run_id = _partition(context, "gold_results")
    data = settings.store().read("gold_results", run_id)
    failed = sorted(data.loc[data["status"] != "ok", "key"]) if not data.empty else []
    return dg.AssetCheckResult(
        passed=not failed,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "run_id": run_id or "",
            "gold_failed": len(failed),
            "cases": ", ".join(failed[:20]),
        },
    )


@dg.asset(partitions_def=eval_run_partitions, deps=["sut_responses"], group_name=GROUP, pool=POOL)
def candidate_results(
    context: dg.AssetExecutionContext, settings: T2SSettings
) -> dg.MaterializeResult:
    """Every candidate query through the same guarded executor as the gold."""
    spec, case_set = _run(context, settings)
    store = settings.store()
    run_items = ev.items_from_frame(store.read("items", spec.run_id))
    outcomes = ev.outcomes_from_frames(store.read("sut_responses", spec.run_id), pd.DataFrame())
    guard = evaluation_guard(case_set.domain, spec.config.scorer.eval_row_cap)
    jobs = ev.candidate_jobs(case_set, run_items, outcomes)
    results = execute_jobs(case_set.domain, jobs, guard, _progress(context, "candidates"))
    store.replace_run(
        "candidate_results", spec.run_id, to_frame(results, spec.config.scorer.stored_rows)
    )
    statuses = [r.status for r in results]
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": len(results),
            "guard_refused": statuses.count("refused") + statuses.count("timeout"),
            "ceiling/candidate_truncated": sum(1 for r in results if r.truncated),
            "not_run": statuses.count("not_run"),
            "errors": statuses.count("error"),
        }
    )


@dg.asset(
    partitions_def=eval_run_partitions,
    deps=["sut_responses", "retrieval_probes"],
    group_name=GROUP,
    pool=POOL,
)
def sql_analyses(context: dg.AssetExecutionContext, settings: T2SSettings) -> dg.MaterializeResult:
    """Gold and cleaned candidate SQL of every item, analysed once (origins, sets, tables)."""
    spec, case_set = _run(context, settings)
    store = settings.store()
    run_items = ev.items_from_frame(store.read("items", spec.run_id))
    outcomes = ev.outcomes_from_frames(store.read("sut_responses", spec.run_id), pd.DataFrame())
    schemas = domain_schemas(case_set.cases, case_set.domain)
    analyses, failed = ev.safe_analyse_items(case_set, run_items, outcomes, schemas)
    n = _write(settings, "sql_analyses", spec.run_id, [ev.analysis_row(a) for a in analyses])
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": n,
            "gold_unparseable_items": len(failed),
            "candidate_parse_errors": sum(
                1 for a in analyses if a.candidate_error not in (None, "no SQL")
            ),
        }
    )


@dg.asset(partitions_def=eval_run_partitions, deps=[sql_analyses], group_name=GROUP, pool=POOL)
def retrieval_scores(
    context: dg.AssetExecutionContext, settings: T2SSettings
) -> dg.MaterializeResult:
    """Retrieval family: required tables vs offered (SUT trace) and vs probed."""
    spec, case_set = _run(context, settings)
    store = settings.store()
    analyses = ev.analyses_from_frame(store.read("sql_analyses", spec.run_id))
    outcomes = ev.outcomes_from_frames(
        store.read("sut_responses", spec.run_id), store.read("retrieval_probes", spec.run_id)
    )
    rows = [
        ev.retrieval_row(a, outcomes.get(i), case_set.domain.dialect) for i, a in analyses.items()
    ]
    _write(settings, "retrieval_scores", spec.run_id, rows)
    return dg.MaterializeResult(
        metadata=ev.family_metadata(rows, ["recall", "precision", "probe_recall"])
    )


@dg.asset(partitions_def=eval_run_partitions, deps=[sql_analyses], group_name=GROUP, pool=POOL)
def component_scores(
    context: dg.AssetExecutionContext, settings: T2SSettings
) -> dg.MaterializeResult:
    """Component family: which SQL parts are missing or extra."""
    spec, _ = _run(context, settings)
    analyses = ev.analyses_from_frame(settings.store().read("sql_analyses", spec.run_id))
    rows = [ev.component_row(a) for a in analyses.values()]
    _write(settings, "component_scores", spec.run_id, rows)
    recalls = [f"{n}_recall" for n in COMPONENT_SETS]
    return dg.MaterializeResult(metadata=ev.family_metadata(rows, recalls))


@dg.asset(
    partitions_def=eval_run_partitions,
    deps=[sql_analyses, gold_results, candidate_results],
    group_name=GROUP,
    pool=POOL,
)
def output_scores(context: dg.AssetExecutionContext, settings: T2SSettings) -> dg.MaterializeResult:
    """Output family (columns and cells) and exact match, with every ceiling per item."""
    spec, case_set = _run(context, settings)
    store = settings.store()
    rows = ev.score_outputs(
        spec.config.scorer,
        ev.analyses_from_frame(store.read("sql_analyses", spec.run_id)),
        store.read("gold_results", spec.run_id),
        from_frame(store.read("candidate_results", spec.run_id)),
        store.read("sut_responses", spec.run_id),
        None if spec.config.sut.kind == "replay" else store.read("retrieval_probes", spec.run_id),
    )
    _write(settings, "output_scores", spec.run_id, rows)
    ceilings = ev.ceiling_counts(rows)
    return dg.MaterializeResult(
        metadata=ev.family_metadata(rows, ["columns_recall", "cells_recall"])
        | {f"ceiling/{k}": v for k, v in ceilings.items()}
        | {"ceiling_items": _ceiling_table(rows, spec.run_id)}
    )


CEILING_TABLE_ROWS = 1000


def _ceiling_table(rows: Sequence[Mapping[str, object]], run_id: str) -> dg.MetadataValue:
    """The items behind every ceiling count, so a count's lineage ends at its items: one row
    per (ceiling, item) with the command that shows the item's stored rows."""
    records = [
        dg.TableRecord(
            {
                "ceiling": ceiling,
                "item_id": str(row["item_id"]),
                "candidate_status": str(row.get("candidate_status") or ""),
                "show": f"t2s show {run_id} --item {row['item_id']}",
            }
        )
        for row in rows
        for ceiling in json.loads(str(row["ceilings_json"]))
    ]
    records.sort(key=lambda r: (r.data["ceiling"], r.data["item_id"]))
    schema = dg.TableSchema(
        columns=[
            dg.TableColumn("ceiling", "string", description="the ceiling (SPEC 10)"),
            dg.TableColumn("item_id", "string"),
            dg.TableColumn("candidate_status", "string"),
            dg.TableColumn("show", "string", description="the item's gold and candidate rows"),
        ]
    )
    return dg.MetadataValue.table(records[:CEILING_TABLE_ROWS], schema=schema)


@dg.asset_check(
    partitions_def=eval_run_partitions,
    asset=output_scores,
    blocking=True,
    description="Scorer self-test: no scorer_fault.",
)
def scorer_self_test(
    context: dg.AssetCheckExecutionContext, settings: T2SSettings
) -> dg.AssetCheckResult:
    run_id = _partition(context, "output_scores")
    data = settings.store().read("output_scores", run_id)
    faults = (
        sorted(data.loc[data["scorer_fault"].astype(bool), "item_id"]) if not data.empty else []
    )
    return dg.AssetCheckResult(
        passed=not faults,
        metadata={
            "run_id": run_id or "",
            "scorer_fault": len(faults),
            "items": ", ".join(faults[:20]),
        },
    )


@dg.asset(partitions_def=eval_run_partitions, deps=[output_scores], group_name=GROUP, pool=POOL)
def exact_matches(context: dg.AssetExecutionContext, settings: T2SSettings) -> dg.MaterializeResult:
    """Headline EX per item, with its phrasing and difficulty band."""
    spec, _ = _run(context, settings)
    store = settings.store()
    rows = ev.exact_rows(store.read("items", spec.run_id), store.read("output_scores", spec.run_id))
    _write(settings, "exact_matches", spec.run_id, rows)
    return dg.MaterializeResult(metadata=ev.family_metadata(rows, ["exact_match"]))


@dg.asset(
    partitions_def=eval_run_partitions,
    deps=[exact_matches, retrieval_scores, component_scores],
    group_name=GROUP,
    pool=POOL,
)
def diagnoses(context: dg.AssetExecutionContext, settings: T2SSettings) -> dg.MaterializeResult:
    """Deterministic diagnosis (§11) of every item."""
    spec, _ = _run(context, settings)
    rows = ev.diagnosis_rows(settings.store(), spec.run_id)
    _write(settings, "diagnoses", spec.run_id, rows)
    counts = pd.Series([r["category"] for r in rows]).value_counts()
    return dg.MaterializeResult(
        metadata={"dagster/row_count": len(rows)}
        | {f"diagnosis/{k}": int(v) for k, v in counts.items()}
    )


@dg.asset(
    partitions_def=eval_run_partitions,
    # By key: assets/judge.py imports this module.
    deps=[diagnoses, "judge_calibration"],
    group_name=GROUP,
    pool=POOL,
)
def run_summary(context: dg.AssetExecutionContext, settings: T2SSettings) -> dg.MaterializeResult:
    """Every family's means with n and 95% CI, EX by band, ceilings, diagnoses, robustness."""
    spec, case_set = _run(context, settings)
    summary = ev.summarise_run(settings.store(), spec.run_id)
    ev.record_run_end(settings.store(), spec, summary)
    return dg.MaterializeResult(
        metadata={  # the readable summary first, then the plotted headline figures
            "summary": dg.MetadataValue.md(summary.to_markdown()),
            **summary.metadata(),
            "dagster/row_count": summary.n_items,
        }
    )


@dg.asset_check(
    partitions_def=eval_run_partitions,
    asset=run_summary,
    description="Ceilings are counted; warns when one rose against the previous run or covers "
    "more than the configured share of items.",
)
def ceilings(context: dg.AssetCheckExecutionContext, settings: T2SSettings) -> dg.AssetCheckResult:
    """Warn on what needs a look, not on a run's normal state: a ceiling whose count rose
    against the previous comparable run, or that covers more than ``ceiling_warn_share`` of
    the items. Every count is in the metadata either way."""
    run_id = _partition(context, "run_summary")
    store = settings.store()
    summary = ev.summarise_run(store, run_id) if run_id else None
    counts = {} if summary is None else summary.ceilings
    n_items = 0 if summary is None else summary.n_items
    previous = ev.previous_run(store, run_id) if run_id else None
    before = ev.summarise_run(store, previous).ceilings if previous else {}
    share = settings.ceiling_warn_share
    over = sorted(k for k, v in counts.items() if n_items and v / n_items > share)
    rose = sorted(k for k, v in counts.items() if previous and v > before.get(k, 0))
    reasons = [f"{k} rose {before.get(k, 0)} -> {counts[k]} against {previous}" for k in rose]
    reasons += [f"{k} covers {counts[k]} of {n_items} items (over {share:.0%})" for k in over]
    return dg.AssetCheckResult(
        passed=not reasons,
        severity=dg.AssetCheckSeverity.WARN,
        description="; ".join(reasons) or None,
        metadata={"run_id": run_id or "", "previous_run": previous or "none"}
        | {f"ceiling/{k}": v for k, v in counts.items()},
    )


@dg.asset_check(
    partitions_def=eval_run_partitions,
    asset=run_summary,
    description="No unaccepted regression against the previous comparable run.",
)
def regression(
    context: dg.AssetCheckExecutionContext, settings: T2SSettings
) -> dg.AssetCheckResult:
    run_id = _partition(context, "run_summary")
    verdict = (
        ev.regression_verdict(settings.store(), run_id, settings.decisions_dir) if run_id else None
    )
    if verdict is None:
        return dg.AssetCheckResult(passed=True, metadata={"previous_run": "none"})
    return dg.AssetCheckResult(
        passed=not verdict.unaccepted,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "previous_run": verdict.previous,
            "n_shared": verdict.n_shared,
            "regressed_items": verdict.n_regressed,
            "unaccepted": ", ".join(verdict.unaccepted[:30]),
            "accept_with": f"{settings.decisions_dir}/{run_id}.yaml (accepted_by, reason)",
        },
    )


@dg.asset(deps=[run_summary], group_name="comparison", pool=POOL)
def run_comparisons(
    context: dg.AssetExecutionContext, settings: T2SSettings
) -> dg.MaterializeResult:
    """Each run against the run before it: paired deltas per family and regressed items."""
    deltas, regressions = ev.compare_all(settings.store())
    store = settings.store()
    store.replace_all("run_comparisons", deltas)
    store.replace_all("regressions", regressions)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": len(deltas),
            "regressions": len(regressions),
            "at": dt.datetime.now(dt.UTC).isoformat(),
        }
    )


@dg.asset_check(
    partitions_def=eval_run_partitions,
    asset=candidate_results,
    blocking=True,
    description="The hostile suite is fully refused.",
)
def guardrails(
    context: dg.AssetCheckExecutionContext, settings: T2SSettings
) -> dg.AssetCheckResult:
    workdir = Path(settings.registry_dir).parent
    console.note(
        "guardrails: the hostile suite on DuckDB and SQLite (minutes the first time, cached after)"
    )
    report = ev.hostile_report(
        Path(settings.hostile_dir),
        guard_warehouse(Path(settings.warehouse_path), workdir / "guard"),
        cache=workdir / "guard_cache",
    )
    for failure in report.failures:
        context.log.error(f"hostile suite: {failure}")
    return dg.AssetCheckResult(
        passed=report.clean,
        metadata={
            "leaks": report.leaks,
            "over_blocks": report.over_blocks,
            "cells": report.cells,
            "engines": report.engines,
            "failures": dg.MetadataValue.md("\n".join(f"- {f}" for f in report.failures) or "none"),
        },
    )


RUN_ASSETS = [
    items,
    sut_responses,
    gold_results,
    candidate_results,
    sql_analyses,
    retrieval_scores,
    component_scores,
    output_scores,
    exact_matches,
    diagnoses,
    run_summary,
]
RUN_CHECKS = [isolation, gold_executes, scorer_self_test, ceilings, regression, guardrails]
# Every check but the hostile suite (which has its own tests): for quick test runs.
FAST_CHECKS = [isolation, gold_executes, scorer_self_test, ceilings, regression]
