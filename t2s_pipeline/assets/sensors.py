"""Sensors: a new or changed configuration, or a changed gold case set, becomes a new run."""

import json
import logging
from pathlib import Path

import dagster as dg

from t2s_pipeline.assets.partitions import EVAL_RUN
from t2s_pipeline.assets.resources import T2SSettings
from t2s_pipeline.cases import load_cases
from t2s_pipeline.config import RunConfig, load_config
from t2s_pipeline.errors import T2SError
from t2s_pipeline.runs import RunSpec, register, run_tags, spec_for

EVAL_JOB = "eval_job"


def _active_configs(folder: Path, log: logging.Logger | None) -> dict[Path, RunConfig]:
    """Every valid configuration directly in the folder; invalid ones are logged, not fatal."""
    configs: dict[Path, RunConfig] = {}
    for path in sorted(folder.glob("*.yaml")):
        try:
            configs[path] = load_config(path)
        except T2SError as error:
            if log is not None:
                log.warning(str(error))
    return configs


def _requests(
    context: dg.SensorEvaluationContext, specs: list[RunSpec], settings: T2SSettings, why: str
) -> dg.SensorResult | dg.SkipReason:
    new = [s for s in specs if not context.instance.has_dynamic_partition(EVAL_RUN, s.run_id)]
    unique = {s.run_id: s for s in new}
    if not unique:
        return dg.SkipReason(f"{why}: no new run")
    for spec in unique.values():
        register(spec, Path(settings.registry_dir))
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(
                run_key=run_id,
                partition_key=run_id,
                tags={**run_tags(spec), "t2s/trigger": why},
            )
            for run_id, spec in unique.items()
        ],
        dynamic_partitions_requests=[dg.AddDynamicPartitionsRequest(EVAL_RUN, list(unique))],
    )


def build_sensors(settings: T2SSettings) -> list[dg.SensorDefinition]:
    """The two sensors, bound to the deployment's settings."""

    @dg.sensor(
        job_name=EVAL_JOB,
        minimum_interval_seconds=30,
        default_status=dg.DefaultSensorStatus.STOPPED,
    )
    def config_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        """A new or changed file in configs/ registers its run partition and requests it."""
        known: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
        configs = _active_configs(Path(settings.configs_dir), context.log)
        changed = {p: c for p, c in configs.items() if known.get(str(p)) != c.config_hash()}
        specs = [spec_for(config, path) for path, config in changed.items()]
        result = _requests(context, specs, settings, "config changed")
        context.update_cursor(json.dumps({str(p): c.config_hash() for p, c in configs.items()}))
        return result

    @dg.sensor(
        job_name=EVAL_JOB,
        minimum_interval_seconds=30,
        default_status=dg.DefaultSensorStatus.STOPPED,
    )
    def gold_case_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        """A changed gold case set gives every active configuration a new run."""
        known: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
        configs = _active_configs(Path(settings.configs_dir), context.log)
        hashes = {c.cases: load_cases(c.cases).content_hash for c in configs.values()}
        if not known:
            context.update_cursor(json.dumps(hashes))
            return dg.SkipReason("recorded the current case sets")
        changed = {folder for folder, h in hashes.items() if known.get(folder) != h}
        specs = [spec_for(c, p) for p, c in configs.items() if c.cases in changed]
        result = _requests(context, specs, settings, "gold cases changed")
        context.update_cursor(json.dumps(hashes))
        return result

    return [config_sensor, gold_case_sensor]
