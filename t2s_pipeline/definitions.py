"""Wiring only: the Dagster code location of t2s_pipeline."""

from typing import Any

import dagster as dg

from t2s_pipeline.assets.cases import gold_cases
from t2s_pipeline.assets.evaluation import RUN_ASSETS, RUN_CHECKS
from t2s_pipeline.assets.judge import JUDGE_ASSETS
from t2s_pipeline.assets.resources import T2SSettings
from t2s_pipeline.assets.sensors import EVAL_JOB, build_sensors
from t2s_pipeline.project import default_cases


def eval_job(executor: dg.ExecutorDefinition | None = None) -> Any:
    """The job that evaluates one run partition. Each run writes only its own files of the
    results store, so runs of different partitions execute at once (a backfill, the queued run
    coordinator), and the steps of one run may run in separate processes or on other hosts.
    By default a run's steps run in its own process (no start-up cost per step); choose
    ``multiprocess`` under ``execution`` in the launchpad to run independent steps at once,
    or load ``t2s_pipeline.celery_definitions`` to put them on Celery workers."""
    if executor is not None:
        return dg.define_asset_job(
            EVAL_JOB, selection=_RUN_SELECTION, executor_def=executor, description=_JOB_TEXT
        )
    return dg.define_asset_job(
        EVAL_JOB,
        selection=_RUN_SELECTION,
        executor_def=dg.multi_or_in_process_executor,
        config={"execution": {"config": {"in_process": {}}}},
        description=_JOB_TEXT,
    )


# gold_cases is part of each run, so the UI shows the case set the latest run read.
_RUN_SELECTION = dg.AssetSelection.assets(gold_cases, *RUN_ASSETS, *JUDGE_ASSETS)
_JOB_TEXT = "Evaluate one run partition end to end."


def build_definitions(
    settings: T2SSettings, executor: dg.ExecutorDefinition | None = None
) -> dg.Definitions:
    """The code location for one set of project paths (tests pass temporary ones)."""
    return dg.Definitions(
        assets=[gold_cases, *RUN_ASSETS, *JUDGE_ASSETS],
        asset_checks=RUN_CHECKS,
        jobs=[eval_job(executor)],
        sensors=build_sensors(settings),
        resources={"settings": settings},
    )


# Relative to the project folder (workspace.yaml's working_directory); t2s.yaml names the cases.
defs = build_definitions(T2SSettings(cases_dir=default_cases()))
