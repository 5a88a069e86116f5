"""The optional LLM-judge lane of ``eval_run`` (SPEC §12): thin wiring over ``t2s_pipeline.judge``.

``judge_diagnoses`` asks the judge about every item the deterministic diagnosis did not find
correct, through the response cache; when the run's configuration leaves the judge off it still
materialises, with zero rows and ``enabled: false``, so the graph has one shape for every run.
``judge_calibration`` compares the judge and the deterministic diagnosis with the human labels.
"""
# No `from __future__ import annotations`: Dagster inspects the context annotation at runtime.

from pathlib import Path

import dagster as dg

from t2s_pipeline.assets.evaluation import GROUP, POOL, diagnoses
from t2s_pipeline.assets.partitions import eval_run_partitions
from t2s_pipeline.assets.resources import T2SSettings
from t2s_pipeline.judge.cache import JudgeCache
from t2s_pipeline.judge.client import JudgeClient, endpoint_from_settings
from t2s_pipeline.judge.inputs import (
    candidate_sql,
    deterministic_categories,
    deterministic_sets,
    judge_inputs,
)
from t2s_pipeline.judge.labels import LABELS_FILE, apply_labels, load_labels, n_labels
from t2s_pipeline.judge.lane import DIAGNOSES_TABLE, judge_frame, judge_items, judged_categories
from t2s_pipeline.judge.report import CALIBRATION_TABLE, build_report


@dg.asset(partitions_def=eval_run_partitions, deps=[diagnoses], group_name=GROUP, pool=POOL)
def judge_diagnoses(
    context: dg.AssetExecutionContext, settings: T2SSettings
) -> dg.MaterializeResult:
    """The judge's category and explanation for every item not diagnosed `correct` (or why not)."""
    spec = settings.spec(context.partition_key)
    store = settings.store()
    deterministic = deterministic_categories(store, spec.run_id)
    if not spec.config.judge.enabled:
        store.replace_run(DIAGNOSES_TABLE, spec.run_id, judge_frame(None, deterministic))
        return dg.MaterializeResult(metadata={"enabled": False, "dagster/row_count": 0})
    endpoint = endpoint_from_settings(spec.config.judge)
    if endpoint.missing_key:
        context.log.warning(f"judge key variable {endpoint.key_env} is not set: nothing is sent")
    inputs = judge_inputs(store, spec.run_id, settings.case_set(spec.config.cases))
    run = judge_items(inputs, JudgeClient(endpoint), JudgeCache(store))
    n = store.replace_run(DIAGNOSES_TABLE, spec.run_id, judge_frame(run, deterministic))
    metadata: dict[str, str | int | bool] = {
        "enabled": True,
        "dagster/row_count": n,
        "model": run.model,
        "prompt_hash": run.prompt_hash,
        "cache_hits": run.hits,
        "cache_misses": run.misses,
        "failed": sum(run.failures().values()),
    }
    metadata |= {f"failure/{k}": v for k, v in sorted(run.failures().items())}
    metadata |= {f"judge/{k}": v for k, v in run.histogram().items()}
    return dg.MaterializeResult(metadata=metadata)


@dg.asset(partitions_def=eval_run_partitions, deps=[judge_diagnoses], group_name=GROUP, pool=POOL)
def judge_calibration(
    context: dg.AssetExecutionContext, settings: T2SSettings
) -> dg.MaterializeResult:
    """Agreement, Cohen's kappa and confusion matrices of the judge and of the deterministic
    diagnosis against the human labels in ``cases/<domain>/labels.yaml``."""
    spec = settings.spec(context.partition_key)
    store = settings.store()
    labels = load_labels(Path(spec.config.cases) / LABELS_FILE)
    applied = apply_labels(labels, candidate_sql(store, spec.run_id))
    report = build_report(
        applied,
        n_labels(labels),
        deterministic_categories(store, spec.run_id),
        judged_categories(store.read(DIAGNOSES_TABLE, spec.run_id)),
        spec.config.judge.agreement_floor,
        spec.config.judge.enabled,
        deterministic_sets(store, spec.run_id),
    )
    store.replace_run(CALIBRATION_TABLE, spec.run_id, report.frame())
    markdown = report.to_markdown()
    context.log.info("\n" + markdown)
    return dg.MaterializeResult(
        metadata={**report.metadata(), "calibration": dg.MetadataValue.md(markdown)}
    )


JUDGE_ASSETS = [judge_diagnoses, judge_calibration]
