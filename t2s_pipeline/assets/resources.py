"""Resources: where the gold cases and the results store live."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from t2s_pipeline.cases import CaseSet, load_cases


class T2SSettings(dg.ConfigurableResource):  # type: ignore[type-arg]
    """Project paths, overridable per deployment with environment variables."""

    cases_dir: str = "cases/erp"
    results_path: str = ".t2s/results.duckdb"

    def case_set(self) -> CaseSet:
        return load_cases(Path(self.cases_dir))
