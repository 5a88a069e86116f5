"""A self-contained demo project in a temporary folder: warehouse, cases, configs, settings."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest
import yaml

from t2s_pipeline.assets.resources import T2SSettings
from t2s_pipeline.cases import load_cases
from t2s_pipeline.demo.generate import build_warehouse
from t2s_pipeline.suites import HOSTILE_SUITE

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Project:
    root: Path
    settings: T2SSettings

    def config(self, name: str, **overrides: object) -> Path:
        """Write ``configs/<name>.yaml`` (main phrasing only, to keep runs short)."""
        data: dict[str, object] = {
            "name": name,
            "cases": self.settings.cases_dir,
            "phrasings": "main",
            "sut": {"kind": "builtin", "isolate": True},
        }
        data.update(overrides)
        path = Path(self.settings.configs_dir) / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    @property
    def n_cases(self) -> int:
        """How many gold cases the demo folder holds (one item each with ``phrasings: main``)."""
        return len(load_cases(self.settings.cases_dir).cases)

    @property
    def n_wordings(self) -> int:
        """How many items ``phrasings: all`` asks: every wording of every case."""
        return sum(len(case.questions) for case in load_cases(self.settings.cases_dir).cases)


@pytest.fixture(scope="session")
def demo_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default-scale warehouse the gold cases were frozen on (built in about a second)."""
    return build_warehouse(tmp_path_factory.mktemp("demo") / "warehouse.duckdb").path


@pytest.fixture
def project(tmp_path: Path, demo_warehouse: Path) -> Project:
    """A copy of the demo cases pointing at the session warehouse, with its own store."""
    cases = tmp_path / "cases" / "erp"
    shutil.copytree(REPO / "cases" / "erp", cases)
    domain = yaml.safe_load((cases / "domain.yaml").read_text())
    domain["database"] = str(demo_warehouse)
    (cases / "domain.yaml").write_text(yaml.safe_dump(domain, sort_keys=False))
    settings = T2SSettings(
        cases_dir=str(cases),
        configs_dir=str(tmp_path / "configs"),
        registry_dir=str(tmp_path / ".t2s" / "runs"),
        results_path=str(tmp_path / ".t2s" / "results"),
        decisions_dir=str(tmp_path / "decisions"),
        hostile_dir=str(HOSTILE_SUITE),
        warehouse_path=str(demo_warehouse),
    )
    return Project(tmp_path, settings)


@pytest.fixture
def instance() -> dg.DagsterInstance:
    with dg.instance_for_test() as test_instance:
        yield test_instance
