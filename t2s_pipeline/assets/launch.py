"""Materialise one run partition from the command line, on the configured Dagster instance."""

from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from t2s_pipeline.assets.cases import gold_cases
from t2s_pipeline.assets.evaluation import RUN_ASSETS, RUN_CHECKS, run_comparisons
from t2s_pipeline.assets.partitions import EVAL_RUN
from t2s_pipeline.assets.resources import T2SSettings
from t2s_pipeline.config import load_config
from t2s_pipeline.runs import register, spec_for


@dataclass(frozen=True)
class LaunchOutcome:
    run_id: str
    success: bool
    summary_markdown: str


def run_config(
    config_path: Path, results: Path, instance: dg.DagsterInstance | None = None
) -> LaunchOutcome:
    """Register the configuration's partition and materialise it end to end, checks included."""
    from t2s_pipeline import evaluation as ev

    config = load_config(config_path)
    settings = T2SSettings(
        cases_dir=config.cases, results_path=str(results), configs_dir=str(config_path.parent)
    )
    spec = spec_for(config, config_path)
    register(spec, Path(settings.registry_dir))
    instance = instance or dg.DagsterInstance.get()
    instance.add_dynamic_partitions(EVAL_RUN, [spec.run_id])
    resources = {"settings": settings}
    dg.materialize([gold_cases], instance=instance, resources=resources)
    result = dg.materialize(
        [*RUN_ASSETS, *RUN_CHECKS],
        partition_key=spec.run_id,
        instance=instance,
        resources=resources,
        raise_on_error=False,
        tags={"t2s/config": str(config_path)},
    )
    if result.success:
        dg.materialize([run_comparisons], instance=instance, resources=resources)
    store = settings.store()
    summary = ev.summarise_run(store, spec.run_id).to_markdown() if result.success else ""
    return LaunchOutcome(spec.run_id, result.success, summary)
