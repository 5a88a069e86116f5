"""The per-run assets of ``eval_run``: thin wiring over the stages of ``t2s_pipeline.run``.

Each asset runs one stage on its partition (the stage reads what it needs from the results
store and replaces its run's table) and attaches the stage's metadata (counts, ceilings), so
lineage shows where every ceiling count comes from. Each run writes its own files, so runs of
different partitions execute at once without waiting on each other.
"""
# No `from __future__ import annotations`: Dagster inspects the context annotation at runtime.

import json
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg

from t2s_pipeline import console
from t2s_pipeline.assets.cases import gold_cases
from t2s_pipeline.assets.partitions import eval_run_partitions
from t2s_pipeline.assets.resources import T2SSettings
from t2s_pipeline.cases import CaseSet
from t2s_pipeline.execution.hostile_check import hostile_report
from t2s_pipeline.execution.hostile_targets import guard_warehouse
from t2s_pipeline.progress import Progress
from t2s_pipeline.report import report_path
from t2s_pipeline.run.baseline import baseline_for
from t2s_pipeline.run.compare import regression_verdict
from t2s_pipeline.run.context import RunContext, StageResult
from t2s_pipeline.run.stages import STAGE_BY_NAME
from t2s_pipeline.run.summary import summarise_run
from t2s_pipeline.run.warm import warm_up
from t2s_pipeline.runs import RunSpec
from t2s_pipeline.scoring.compare import Comparison, Regression
from t2s_pipeline.scoring.summary import RunSummary
from t2s_pipeline.testsuite.suite import TestSuite

# Partitioned checks (one status per run partition) are a preview feature in Dagster 1.13;
# this project depends on them and pins the Dagster version, so the notice is noise.
warnings.filterwarnings(
    "ignore", message="Specifying a partitions_def on an AssetCheckSpec", category=dg.PreviewWarning
)
GROUP = "run"


def _run(context: dg.AssetExecutionContext, settings: T2SSettings) -> tuple[RunSpec, CaseSet]:
    spec = settings.spec(context.partition_key)
    case_set = settings.case_set(spec.config.cases)
    if case_set.content_hash != spec.case_set_hash:
        context.log.warning(
            f"the gold cases changed since run {spec.run_id} was registered; the gold-case "
            "sensor registers a new run for the new case set"
        )
    return spec, case_set


def stage(
    context: dg.AssetExecutionContext, settings: T2SSettings, name: str, warm: bool = False
) -> StageResult:
    """Run one stage of :mod:`t2s_pipeline.run` on the asset's partition; with ``warm``, first
    start what later stages will use when they run in this process (:mod:`~.run.warm`)."""
    spec, case_set = _run(context, settings)
    run = RunContext(
        spec,
        case_set,
        settings.store(),
        info=context.log.info,
        warn=context.log.warning,
        progress=lambda what: _progress(context, what),
        decisions=Path(settings.decisions_dir),
    )
    if warm and _steps_share_a_process(context):
        warm_up(run)
    return STAGE_BY_NAME[name].execute(run)


def _steps_share_a_process(context: dg.AssetExecutionContext) -> bool:
    """Whether the run's steps execute one after another in this process: the in-process
    executor (``materialize``, ``t2s run``, and the job's default), not multiprocess or Celery."""
    executor = context.job_def.executor_def.name
    if executor in ("in_process", "execute_in_process_executor"):
        return True
    if executor != "multi_or_in_process_executor":
        return False
    execution = context.run.run_config.get("execution")
    if not isinstance(execution, Mapping) or not execution:
        return True  # the job's own default: in process (definitions.eval_job)
    return "in_process" in (execution.get("config") or {})


def materialised(done: StageResult, table: str, **extra: Any) -> dg.MaterializeResult:
    """The asset's materialisation: the stage's metadata for ``table`` plus ``extra``."""
    return dg.MaterializeResult(asset_key=table, metadata={**done.metadata[table], **extra})


def _partition(context: dg.AssetCheckExecutionContext, asset: str) -> str | None:
    """The run partition a check evaluates. Checks are partitioned like the assets they
    check, so each run partition has its own check status; ``asset`` names the checked asset
    for the older, unpartitioned path (a check launched without a partition)."""
    if context.has_partition_key:
        return context.partition_key
    event = context.instance.get_latest_materialization_event(dg.AssetKey(asset))
    materialization = None if event is None else event.asset_materialization
    return None if materialization is None else materialization.partition


def _progress(context: dg.AssetExecutionContext, what: str) -> Progress:
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


@dg.asset(partitions_def=eval_run_partitions, deps=[gold_cases], group_name=GROUP)
def items(context: dg.AssetExecutionContext, settings: T2SSettings) -> dg.MaterializeResult:
    """Cases x phrasings, each with its leave-one-out exclusions (the case and its twins)."""
    return materialised(stage(context, settings, "items", warm=True), "items")


@dg.multi_asset(
    partitions_def=eval_run_partitions,
    group_name=GROUP,
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
    done = stage(context, settings, "ask")
    yield materialised(done, "sut_responses")
    yield materialised(done, "retrieval_probes")


@dg.asset(partitions_def=eval_run_partitions, deps=[items], group_name=GROUP)
def gold_results(context: dg.AssetExecutionContext, settings: T2SSettings) -> dg.MaterializeResult:
    """Every case's gold query, live, through the guarded executor; drift from the frozen result."""
    return materialised(stage(context, settings, "gold"), "gold_results")


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


@dg.asset(partitions_def=eval_run_partitions, deps=["sut_responses"], group_name=GROUP)
def candidate_results(
    context: dg.AssetExecutionContext, settings: T2SSettings
) -> dg.MaterializeResult:
    """Every candidate query through the same guarded executor as the gold."""
    return materialised(stage(context, settings, "candidates"), "candidate_results")


@dg.asset(
    partitions_def=eval_run_partitions,
    deps=["sut_responses", "retrieval_probes"],
    group_name=GROUP,
)
def sql_analyses(context: dg.AssetExecutionContext, settings: T2SSettings) -> dg.MaterializeResult:
    """Gold and cleaned candidate SQL of every item, analysed once (origins, sets, tables)."""
    return materialised(stage(context, settings, "analyse"), "sql_analyses")


@dg.asset(partitions_def=eval_run_partitions, deps=[sql_analyses], group_name=GROUP)
def retrieval_scores(
    context: dg.AssetExecutionContext, settings: T2SSettings
) -> dg.MaterializeResult:
    """Retrieval family: required tables vs offered (SUT trace) and vs probed."""
    return materialised(stage(context, settings, "retrieval"), "retrieval_scores")


@dg.asset(partitions_def=eval_run_partitions, deps=[sql_analyses], group_name=GROUP)
def component_scores(
    context: dg.AssetExecutionContext, settings: T2SSettings
) -> dg.MaterializeResult:
    """Component family: which SQL parts are missing or extra."""
    return materialised(stage(context, settings, "components"), "component_scores")


@dg.asset(
    partitions_def=eval_run_partitions,
    deps=[sql_analyses, gold_results, candidate_results],
    group_name=GROUP,
)
def output_scores(context: dg.AssetExecutionContext, settings: T2SSettings) -> dg.MaterializeResult:
    """Output family (columns and cells) and exact match, with every ceiling per item."""
    done = stage(context, settings, "output")
    rows = done.value if isinstance(done.value, list) else []
    table = _ceiling_table(rows, context.partition_key)
    return materialised(done, "output_scores", ceiling_items=table)


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


@dg.asset(partitions_def=eval_run_partitions, deps=[output_scores], group_name=GROUP)
def exact_matches(context: dg.AssetExecutionContext, settings: T2SSettings) -> dg.MaterializeResult:
    """Headline EX per item, with its phrasing and difficulty band."""
    return materialised(stage(context, settings, "exact"), "exact_matches")


@dg.asset(partitions_def=eval_run_partitions, deps=[items], group_name=GROUP)
def test_suites(context: dg.AssetExecutionContext, settings: T2SSettings) -> dg.MaterializeResult:
    """The case set's distilled test suite (neighbour databases of the snapshot that tell each
    gold query from its mutants): built once per (cases, snapshot, seed), reused by every run
    whose configuration turns ``test_suite`` on."""
    done = stage(context, settings, "suite")
    suite = done.value
    if not isinstance(suite, TestSuite):
        return materialised(done, "test_suites")
    return materialised(done, "test_suites", per_case=_suite_table(suite))


def _suite_table(suite: TestSuite) -> dg.MetadataValue:
    columns = ("case", "neighbours", "mutants", "snapshot_missed", "suite_caught", "uncaught")
    return dg.MetadataValue.table(
        records=[
            dg.TableRecord(
                {
                    "case": c.case_id,
                    "neighbours": ", ".join(c.neighbours),
                    "mutants": c.mutants,
                    "snapshot_missed": c.snapshot_missed,
                    "suite_caught": c.suite_caught,
                    "uncaught": "; ".join(c.uncaught)[:300],
                }
            )
            for c in sorted(suite.cases.values(), key=lambda c: -c.snapshot_missed)
        ],
        schema=dg.TableSchema(
            columns=[
                dg.TableColumn(
                    n, "int" if n in ("mutants", "snapshot_missed", "suite_caught") else "string"
                )
                for n in columns
            ]
        ),
    )


@dg.asset(partitions_def=eval_run_partitions, deps=[exact_matches, test_suites], group_name=GROUP)
def test_suite_matches(
    context: dg.AssetExecutionContext, settings: T2SSettings
) -> dg.MaterializeResult:
    """``ex_ts`` per item: exact match on the snapshot and on every neighbour of its case's
    suite; an item matching on the snapshot only names the neighbour that tells it apart."""
    done = stage(context, settings, "test_suite")
    rows = done.value if isinstance(done.value, list) else []
    only = [r for r in rows if r.get("exact_match") and r.get("ex_ts") is False]
    return materialised(done, "test_suite_matches", snapshot_only_items=_snapshot_only(only))


def _snapshot_only(rows: Sequence[Mapping[str, object]]) -> dg.MetadataValue:
    """The items that match on the snapshot only: the neighbour and the rows each side gave."""
    columns = ("item", "neighbour", "reference_rows", "candidate_rows")
    return dg.MetadataValue.table(
        records=[
            dg.TableRecord(
                {
                    "item": str(r["item_id"]),
                    "neighbour": str(r.get("told_apart_by")),
                    "reference_rows": str(r.get("reference_json"))[:300],
                    "candidate_rows": str(r.get("candidate_json"))[:300],
                }
            )
            for r in rows
        ],
        schema=dg.TableSchema(columns=[dg.TableColumn(n, "string") for n in columns]),
    )


@dg.asset(
    partitions_def=eval_run_partitions,
    deps=[exact_matches, test_suite_matches, retrieval_scores, component_scores],
    group_name=GROUP,
)
def diagnoses(context: dg.AssetExecutionContext, settings: T2SSettings) -> dg.MaterializeResult:
    """Deterministic diagnosis (§11) of every item."""
    return materialised(stage(context, settings, "diagnose"), "diagnoses")


@dg.asset(
    partitions_def=eval_run_partitions,
    # By key: assets/judge.py imports this module.
    deps=[diagnoses, "judge_calibration"],
    group_name=GROUP,
)
def run_summary(context: dg.AssetExecutionContext, settings: T2SSettings) -> dg.MaterializeResult:
    """Every family's means with n and 95% CI, EX by band, ceilings, diagnoses, robustness."""
    done = stage(context, settings, "summary")
    summary = done.value
    assert isinstance(summary, RunSummary)
    report = report_path(settings.store(), summary.run_id).absolute()
    return dg.MaterializeResult(
        metadata={  # the readable summary first, then the plotted headline figures
            "summary": dg.MetadataValue.md(summary.to_markdown()),
            # Written by the run's compare step (run_comparisons), next in the run.
            "report": dg.MetadataValue.path(str(report)),
            **summary.metadata(),
            "dagster/row_count": summary.n_items,
        }
    )


@dg.asset_check(
    partitions_def=eval_run_partitions,
    asset=run_summary,
    description="Ceilings are counted; warns when one rose against the run's baseline or "
    "covers more than the configured share of items.",
)
def ceilings(context: dg.AssetCheckExecutionContext, settings: T2SSettings) -> dg.AssetCheckResult:
    """Warn on what needs a look, not on a run's normal state: a ceiling whose count rose
    against the run's baseline (SPEC 13), or that covers more than ``ceiling_warn_share`` of
    the items. Every count is in the metadata either way."""
    run_id = _partition(context, "run_summary")
    store = settings.store()
    summary = summarise_run(store, run_id) if run_id else None
    counts = {} if summary is None else summary.ceilings
    n_items = 0 if summary is None else summary.n_items
    baseline = baseline_for(store, run_id, Path(settings.decisions_dir)) if run_id else None
    previous = None if baseline is None else baseline.run_id
    before = summarise_run(store, previous).ceilings if previous else {}
    share = settings.ceiling_warn_share
    over = sorted(k for k, v in counts.items() if n_items and v / n_items > share)
    rose = sorted(k for k, v in counts.items() if previous and v > before.get(k, 0))
    reasons = [f"{k} rose {before.get(k, 0)} -> {counts[k]} against {previous}" for k in rose]
    reasons += [f"{k} covers {counts[k]} of {n_items} items (over {share:.0%})" for k in over]
    return dg.AssetCheckResult(
        passed=not reasons,
        severity=dg.AssetCheckSeverity.WARN,
        description="; ".join(reasons) or None,
        metadata={
            "run_id": run_id or "",
            "baseline": previous or "none",
            "baseline_chosen_by": "" if baseline is None else baseline.chosen_by,
        }
        | {f"ceiling/{k}": v for k, v in counts.items()},
    )


@dg.asset_check(
    partitions_def=eval_run_partitions,
    asset=run_summary,
    description="No unaccepted regression against the run's baseline (compare_to, else the "
    "champion of its case set).",
)
def regression(
    context: dg.AssetCheckExecutionContext, settings: T2SSettings
) -> dg.AssetCheckResult:
    run_id = _partition(context, "run_summary")
    if run_id is None:
        return dg.AssetCheckResult(passed=True, metadata={"baseline": "none"})
    verdict = regression_verdict(settings.store(), run_id, Path(settings.decisions_dir))
    baseline = verdict.baseline
    return dg.AssetCheckResult(
        passed=not verdict.unaccepted,
        severity=dg.AssetCheckSeverity.WARN,
        description=None
        if not verdict.unaccepted
        else f"{len(verdict.unaccepted)} regressed item(s) against {baseline.run_id} not accepted",
        metadata={
            "run_id": run_id,
            "baseline": baseline.run_id or "none",
            "baseline_chosen_by": baseline.chosen_by,
            "n_shared": verdict.n_shared,
            "regressed_items": verdict.n_regressed,
            "unaccepted": ", ".join(verdict.unaccepted[:30]),
            "accept_with": f"{settings.decisions_dir}/{run_id}.yaml (accepted_by, reason)",
        },
    )


@dg.asset(partitions_def=eval_run_partitions, deps=[run_summary], group_name="comparison")
def run_comparisons(
    context: dg.AssetExecutionContext, settings: T2SSettings
) -> dg.MaterializeResult:
    """This run against its baseline (its configuration's ``compare_to``, else the champion
    of its case set): paired deltas per family with 95% intervals, and the items that
    regressed and improved."""
    done = stage(context, settings, "compare")
    comparison = done.value
    assert isinstance(comparison, Comparison)
    metadata = dict(done.metadata["run_comparisons"])
    text = (
        comparison.to_text(top=10)
        if comparison.run_a
        else f"No baseline: {metadata['baseline_chosen_by']}."
    )
    return dg.MaterializeResult(
        metadata={
            "comparison": dg.MetadataValue.md(f"```\n{text}\n```"),
            **metadata,
            "report": dg.MetadataValue.path(str(metadata["report"])),
            "deltas": _deltas_table(comparison),
            "regressed": _changes_table(comparison.regressions, comparison.run_b),
            "improved": _changes_table(comparison.improvements, comparison.run_b),
        }
    )


def _deltas_table(comparison: Comparison) -> dg.MetadataValue:
    records = [
        dg.TableRecord(
            {
                "family": d.family,
                "metric": d.metric,
                "n": d.delta.n,
                "mean_delta": _rounded(d.delta.mean),
                "ci_low": _rounded(None if d.delta.ci is None else d.delta.ci[0]),
                "ci_high": _rounded(None if d.delta.ci is None else d.delta.ci[1]),
            }
        )
        for d in comparison.deltas
    ]
    schema = dg.TableSchema(
        columns=[
            dg.TableColumn("family", "string"),
            dg.TableColumn("metric", "string"),
            dg.TableColumn("n", "int"),
            dg.TableColumn("mean_delta", "float", description="mean of (run - baseline)"),
            dg.TableColumn("ci_low", "float", description="95% paired bootstrap interval"),
            dg.TableColumn("ci_high", "float"),
        ]
    )
    return dg.MetadataValue.table(records, schema=schema)


def _changes_table(changes: Sequence[Regression], run_id: str) -> dg.MetadataValue:
    records = [
        dg.TableRecord(
            {
                "item": c.item_id,
                "family": c.family,
                "metric": c.metric,
                "before": _rounded(c.before),
                "after": _rounded(c.after),
                "show": f"t2s show {run_id} --item {c.item_id}",
            }
        )
        for c in changes[:CEILING_TABLE_ROWS]
    ]
    schema = dg.TableSchema(
        columns=[
            dg.TableColumn("item", "string"),
            dg.TableColumn("family", "string"),
            dg.TableColumn("metric", "string"),
            dg.TableColumn("before", "float", description="on the baseline (empty: undefined)"),
            dg.TableColumn("after", "float", description="on this run (empty: undefined)"),
            dg.TableColumn("show", "string"),
        ]
    )
    return dg.MetadataValue.table(records, schema=schema)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


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
    report = hostile_report(
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
    test_suites,
    test_suite_matches,
    diagnoses,
    run_summary,
    run_comparisons,
]
RUN_CHECKS = [isolation, gold_executes, scorer_self_test, ceilings, regression, guardrails]
# Every check but the hostile suite (which has its own tests): for quick test runs.
FAST_CHECKS = [isolation, gold_executes, scorer_self_test, ceilings, regression]
