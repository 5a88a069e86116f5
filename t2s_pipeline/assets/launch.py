"""Materialise one run partition from the command line or a test, on a Dagster instance."""

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import dagster as dg

from t2s_pipeline import console
from t2s_pipeline.assets.cases import gold_cases
from t2s_pipeline.assets.evaluation import RUN_ASSETS, RUN_CHECKS
from t2s_pipeline.assets.judge import JUDGE_ASSETS
from t2s_pipeline.assets.partitions import EVAL_RUN
from t2s_pipeline.assets.resources import T2SSettings
from t2s_pipeline.config import load_config
from t2s_pipeline.run.lock import run_lock
from t2s_pipeline.run.record import finished_runs
from t2s_pipeline.run.summary import summarise_run
from t2s_pipeline.runs import RunSpec, register, run_tags, spec_for

# Dagster's step-by-step DEBUG events drown the progress lines on a terminal.
QUIET = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}
# With the console's own progress on (`t2s run`), only Dagster's warnings and errors.
SILENT = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


@dataclass(frozen=True)
class LaunchOutcome:
    run_id: str
    success: bool
    summary_markdown: str
    already_evaluated: bool = False
    """Nothing ran: this run id had finished before, and its results were kept as they are."""
    failed_checks: tuple[str, ...] = ()
    """Each error-severity check that failed (``name: what and the fix``)."""
    failures: tuple[str, ...] = ()
    """Each step that failed (``step: error``), when the run did not finish."""


def run_config(
    config_path: Path,
    settings: T2SSettings,
    instance: dg.DagsterInstance | None = None,
    checks: list[dg.AssetChecksDefinition] | None = None,
    rerun: bool = False,
) -> LaunchOutcome:
    """Register the configuration's partition and materialise it end to end, checks included.

    A run id that finished before is never evaluated again over its results: the call returns
    its summary (``already_evaluated``), or with ``rerun`` evaluates under a new id
    ``<run id>-rN`` and keeps the earlier run whole.
    """
    config = load_config(config_path)
    # A fresh resource: model_copy does not reach the copy Dagster builds for the run.
    settings = T2SSettings(**{**settings.model_dump(), "cases_dir": config.cases})
    spec = spec_for(config, config_path)
    store = settings.store()
    finished = finished_runs(store)
    if spec.run_id in finished:
        if not rerun:
            summary = summarise_run(store, spec.run_id).to_markdown()
            return LaunchOutcome(spec.run_id, True, summary, already_evaluated=True)
        n = 2
        while f"{spec.run_id}-r{n}" in finished:
            n += 1
        spec = replace(spec, run_id=f"{spec.run_id}-r{n}")
    with run_lock(store.run_dir(spec.run_id), spec.run_id):  # the same config twice: once
        register(spec, Path(settings.registry_dir))
        instance = instance or dg.DagsterInstance.get()
        result = _materialise(spec, settings, instance, checks)
    summary = summarise_run(settings.store(), spec.run_id).to_markdown() if result.success else ""
    blocked = tuple(
        f"{e.check_name}: {e.description or 'failed'}"
        for e in result.get_asset_check_evaluations()
        if not e.passed and e.severity == dg.AssetCheckSeverity.ERROR
    )
    failures = tuple(
        f"{event.step_key}: {_error_text(event)}" for event in result.get_step_failure_events()
    )
    return LaunchOutcome(
        spec.run_id,
        result.success and not blocked,
        summary,
        failed_checks=blocked,
        failures=failures,
    )


def _materialise(
    spec: RunSpec,
    settings: T2SSettings,
    instance: dg.DagsterInstance,
    checks: list[dg.AssetChecksDefinition] | None,
) -> dg.ExecuteInProcessResult:
    quiet, resources = _quiet(), _resources(settings)
    instance.add_dynamic_partitions(EVAL_RUN, [spec.run_id])
    return dg.materialize(
        [gold_cases, *RUN_ASSETS, *JUDGE_ASSETS, *(RUN_CHECKS if checks is None else checks)],
        partition_key=spec.run_id,
        instance=instance,
        resources=resources,
        raise_on_error=False,
        tags={**run_tags(spec), "t2s/trigger": "t2s run"},
        run_config=quiet,
    )


def _quiet() -> dict[str, Any]:
    return SILENT if console.enabled() else QUIET


def _resources(settings: T2SSettings) -> dict[str, Any]:
    return {"settings": settings}


def _error_text(event: dg.DagsterEvent) -> str:
    error = getattr(event.event_specific_data, "error", None)
    while error is not None and error.cause is not None and "t2s_pipeline" not in error.message:
        error = error.cause
    return "no detail" if error is None else error.message.strip().splitlines()[-1]
