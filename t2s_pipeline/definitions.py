"""Wiring only: the Dagster code location of t2s_pipeline."""

from __future__ import annotations

import dagster as dg

from t2s_pipeline.assets.cases import gold_cases
from t2s_pipeline.assets.resources import T2SSettings

defs = dg.Definitions(
    assets=[gold_cases],
    resources={"settings": T2SSettings()},
)
