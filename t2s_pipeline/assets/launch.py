"""Materialise one run partition from the command line or a test, on a Dagster instance."""

from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from t2s_pipeline.assets.cases import gold_cases
from t2s_pipeline.assets.evaluation import RUN_ASSETS, RUN_CHECKS, run_comparisons
from t2s_pipeline.assets.judge import JUDGE_ASSETS
from t2s_pipeline.assets.partitions import EVAL_RUN
from t2s_pipeline.assets.resources import T2SSettings
from t2s_pipeline.config import load_config
from t2s_pipeline.runs import register, spec_for

# Dagster's step-by-step DEBUG events drown the progress lines on a terminal.
QUIET = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}


@dataclass(frozen=True)
class LaunchOutcome:
    run_id: str
    success: bool
    summary_markdown: str


def run_config(
    config_path: Path,
    settings: T2SSettings,
    instance: dg.DagsterInstance | None = None,
    checks: list[dg.AssetChecksDefinition] | None = None,
) -> LaunchOutcome:
    """Register the configuration's partition and materialise it end to end, checks included."""
    from t2s_pipeline import evaluation as ev

    config = load_config(config_path)
    # A fresh resource: model_copy does not reach the copy Dagster builds for the run.
    settings = T2SSettings(**{**settings.model_dump(), "cases_dir": config.cases})
    spec = spec_for(config, config_path)
    register(spec, Path(settings.registry_dir))
    instance = instance or dg.DagsterInstance.get()
    instance.add_dynamic_partitions(EVAL_RUN, [spec.run_id])
    resources = {"settings": settings}
    dg.materialize([gold_cases], instance=instance, resources=resources, run_config=QUIET)
    result = dg.materialize(
        [*RUN_ASSETS, *JUDGE_ASSETS, *(RUN_CHECKS if checks is None else checks)],
        partition_key=spec.run_id,
        instance=instance,
        resources=resources,
        raise_on_error=False,
        tags={"t2s/config": str(config_path)},
        run_config=QUIET,
    )
    if result.success:
        dg.materialize([run_comparisons], instance=instance, resources=resources, run_config=QUIET)
    summary = (
        ev.summarise_run(settings.store(), spec.run_id).to_markdown() if result.success else ""
    )
    return LaunchOutcome(spec.run_id, result.success, summary)
