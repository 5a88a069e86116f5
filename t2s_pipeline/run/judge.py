"""The optional LLM-judge stages (SPEC 12): the judge's verdicts, then its calibration.

``judge`` asks the judge about every item the deterministic diagnosis did not find correct,
through the response cache; with the judge off it still writes its (empty) table, so every run
has the same shape. ``calibrate`` compares judge and deterministic diagnosis with the labels.
"""

from __future__ import annotations

from pathlib import Path

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
from t2s_pipeline.run.context import RunContext, StageResult


def materialise_judge(run: RunContext) -> StageResult:
    """The judge's category and explanation for every item not diagnosed `correct`."""
    store, spec = run.store, run.spec
    deterministic = deterministic_categories(store, spec.run_id)
    if not spec.config.judge.enabled:
        store.replace_run(DIAGNOSES_TABLE, spec.run_id, judge_frame(None, deterministic))
        return StageResult({DIAGNOSES_TABLE: {"enabled": False, "dagster/row_count": 0}})
    endpoint = endpoint_from_settings(spec.config.judge)
    if endpoint.missing_key:
        run.warn(f"judge key variable {endpoint.key_env} is not set: nothing is sent")
    inputs = judge_inputs(store, spec.run_id, run.case_set)
    judged = judge_items(inputs, JudgeClient(endpoint), JudgeCache(store))
    n = store.replace_run(DIAGNOSES_TABLE, spec.run_id, judge_frame(judged, deterministic))
    metadata: dict[str, object] = {
        "enabled": True,
        "dagster/row_count": n,
        "model": judged.model,
        "prompt_hash": judged.prompt_hash,
        "cache_hits": judged.hits,
        "cache_misses": judged.misses,
        "failed": sum(judged.failures().values()),
    }
    metadata |= {f"failure/{k}": v for k, v in sorted(judged.failures().items())}
    metadata |= {f"judge/{k}": v for k, v in judged.histogram().items()}
    return StageResult({DIAGNOSES_TABLE: metadata})


def materialise_calibration(run: RunContext) -> StageResult:
    """Agreement, Cohen's kappa and confusion matrices of the judge and of the deterministic
    diagnosis against the human labels in ``cases/<domain>/labels.yaml``; the value is the
    report's markdown."""
    store, spec = run.store, run.spec
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
    run.info("\n" + markdown)
    return StageResult({CALIBRATION_TABLE: dict(report.metadata())}, value=markdown)
