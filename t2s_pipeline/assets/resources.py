"""Resources: where the gold cases, configurations, run registry and results store live."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from t2s_pipeline.cases import CaseSet, load_cases
from t2s_pipeline.config import load_config
from t2s_pipeline.errors import ConfigError
from t2s_pipeline.runs import RunSpec, load_spec, register, spec_for
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
        """The registered run of a partition key. A key added by hand (the UI's "Add
        partition") that is what ``configs/<name>.yaml`` gives today is registered from it;
        any other unregistered key fails naming how runs are added."""
        registry = Path(self.registry_dir)
        if (registry / f"{run_id}.json").exists():
            return load_spec(run_id, registry)
        name = run_id.rsplit("-", 1)[0]
        path = Path(self.configs_dir) / f"{name}.yaml"
        if path.is_file():
            spec = spec_for(load_config(path), path)
            if spec.run_id == run_id:
                register(spec, registry)
                return spec
            raise ConfigError(
                f"partition {run_id!r} is not a registered run, and {path} gives run "
                f"{spec.run_id} today. Fix: add runs by saving a configuration in "
                f"{self.configs_dir}/ (the config sensor adds its partition) or with "
                f"`t2s run --config {path}`, not with the UI's Add partition"
            )
        return load_spec(run_id, registry)
