"""Resources: where the gold cases, configurations, run registry and results store live."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from t2s_pipeline.cases import CaseSet, load_cases
from t2s_pipeline.runs import RunSpec, load_spec
from t2s_pipeline.store import ResultsStore
from t2s_pipeline.suites import HOSTILE_SUITE


class T2SSettings(dg.ConfigurableResource):  # type: ignore[type-arg]
    """Project paths; each may be overridden per deployment (e.g. with dg.EnvVar)."""

    cases_dir: str = "cases/erp"
    configs_dir: str = "configs"
    registry_dir: str = ".t2s/runs"
    results_path: str = ".t2s/results"
    decisions_dir: str = "decisions"
    hostile_dir: str = str(HOSTILE_SUITE)
    warehouse_path: str = ".t2s/warehouse.duckdb"
    ceiling_warn_share: float = 0.10
    """The ceilings check warns when one ceiling covers more than this share of a run's items."""

    def case_set(self, folder: str | None = None) -> CaseSet:
        return load_cases(Path(folder or self.cases_dir))

    def store(self) -> ResultsStore:
        return ResultsStore(Path(self.results_path))

    def spec(self, run_id: str) -> RunSpec:
        return load_spec(run_id, Path(self.registry_dir))
