"""The optional LLM-judge lane of ``eval_run`` (SPEC §12): thin wiring over ``run.judge``.

``judge_diagnoses`` asks the judge about every item the deterministic diagnosis did not find
correct, through the response cache; when the run's configuration leaves the judge off it still
materialises, with zero rows and ``enabled: false``, so the graph has one shape for every run.
``judge_calibration`` compares the judge and the deterministic diagnosis with the human labels.
"""
# No `from __future__ import annotations`: Dagster inspects the context annotation at runtime.

import dagster as dg

from t2s_pipeline.assets.evaluation import GROUP, diagnoses, materialised, stage
from t2s_pipeline.assets.partitions import eval_run_partitions
from t2s_pipeline.assets.resources import T2SSettings
from t2s_pipeline.judge.lane import DIAGNOSES_TABLE
from t2s_pipeline.judge.report import CALIBRATION_TABLE


@dg.asset(partitions_def=eval_run_partitions, deps=[diagnoses], group_name=GROUP)
def judge_diagnoses(
    context: dg.AssetExecutionContext, settings: T2SSettings
) -> dg.MaterializeResult:
    """The judge's category and explanation for every item not diagnosed `correct` (or why not)."""
    return materialised(stage(context, settings, "judge"), DIAGNOSES_TABLE)


@dg.asset(partitions_def=eval_run_partitions, deps=[judge_diagnoses], group_name=GROUP)
def judge_calibration(
    context: dg.AssetExecutionContext, settings: T2SSettings
) -> dg.MaterializeResult:
    """Agreement, Cohen's kappa and confusion matrices of the judge and of the deterministic
    diagnosis against the human labels in ``cases/<domain>/labels.yaml``."""
    done = stage(context, settings, "calibrate")
    markdown = str(done.value)
    return materialised(done, CALIBRATION_TABLE, calibration=dg.MetadataValue.md(markdown))


JUDGE_ASSETS = [judge_diagnoses, judge_calibration]
