"""Wiring only: the Dagster code location of t2s_pipeline."""

import dagster as dg

from t2s_pipeline.assets.cases import gold_cases
from t2s_pipeline.assets.evaluation import RUN_ASSETS, RUN_CHECKS, run_comparisons
from t2s_pipeline.assets.judge import JUDGE_ASSETS
from t2s_pipeline.assets.resources import T2SSettings
from t2s_pipeline.assets.sensors import EVAL_JOB, build_sensors
from t2s_pipeline.project import default_cases

eval_job = dg.define_asset_job(
    EVAL_JOB,
    selection=dg.AssetSelection.assets(*RUN_ASSETS, *JUDGE_ASSETS),
    # One process, steps in order: the results store has one DuckDB writer at a time.
    executor_def=dg.in_process_executor,
    description="Evaluate one run partition end to end.",
)


def build_definitions(settings: T2SSettings) -> dg.Definitions:
    """The code location for one set of project paths (tests pass temporary ones)."""
    return dg.Definitions(
        assets=[gold_cases, *RUN_ASSETS, *JUDGE_ASSETS, run_comparisons],
        asset_checks=RUN_CHECKS,
        jobs=[eval_job],
        sensors=build_sensors(settings),
        resources={"settings": settings},
    )


# Relative to the project folder (workspace.yaml's working_directory); t2s.yaml names the cases.
defs = build_definitions(T2SSettings(cases_dir=default_cases()))
