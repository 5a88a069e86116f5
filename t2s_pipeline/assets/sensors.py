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


def latest_case_hashes(registry: Path) -> dict[str, str]:
    """The gold case set hash of each configuration's most recently registered run."""
    latest: dict[str, str] = {}
    for path in sorted(registry.glob("*.json"), key=lambda p: p.stat().st_mtime_ns):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            latest[str(data["config"]["name"])] = str(data["case_set_hash"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a damaged registry file names no run to compare with
    return latest


def _requests(
    context: dg.SensorEvaluationContext, specs: list[RunSpec], settings: T2SSettings, why: str
) -> dg.SensorResult | dg.SkipReason:
    new = [s for s in specs if not context.instance.has_dynamic_partition(EVAL_RUN, s.run_id)]
    unique = {s.run_id: s for s in new}
    if not unique:
        return dg.SkipReason(f"{why}, but each resulting run exists already: nothing to run")
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
        """A configuration whose latest run used another gold case set than its folder holds
        now gets a new run: cases edited or added while the sensor was off count too."""
        configs = _active_configs(Path(settings.configs_dir), context.log)
        used = latest_case_hashes(Path(settings.registry_dir))
        hashes = {c.cases: load_cases(c.cases).content_hash for c in configs.values()}
        stale = {
            path: config
            for path, config in configs.items()
            if config.name in used and used[config.name] != hashes[config.cases]
        }
        if not stale:
            return dg.SkipReason(
                "nothing changed: every configuration's latest run used the current gold cases"
            )
        specs = [spec_for(config, path) for path, config in stale.items()]
        return _requests(context, specs, settings, "gold cases changed")

    return [config_sensor, gold_case_sensor]
