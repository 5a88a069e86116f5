"""Spider- and BIRD-format fixtures: the gold and prediction files are committed, the SQLite
databases are built from their SQL scripts once per session (no binary files in git)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from t2s_pipeline.assets.resources import T2SSettings
from t2s_pipeline.suites import HOSTILE_SUITE

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks"
SPIDER_DBS = ("concert_hall", "school_club")
BIRD_DBS = ("library", "school_club")


@dataclass(frozen=True)
class Benchmark:
    """One benchmark's files: the fixture folder and the built database folder."""

    files: Path
    db_dir: Path

    def expected(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.files / "expected.json").read_text())
        return data


def build_databases(db_dir: Path, db_ids: Sequence[str]) -> Path:
    """Write ``<db_dir>/<db_id>/<db_id>.sqlite`` for each db_id from its SQL script."""
    for db_id in db_ids:
        target = db_dir / db_id / f"{db_id}.sqlite"
        target.parent.mkdir(parents=True, exist_ok=True)
        script = (FIXTURES / "databases" / f"{db_id}.sql").read_text()
        with closing(sqlite3.connect(target)) as conn:
            conn.executescript(script)
            conn.commit()
    return db_dir


@pytest.fixture(scope="session")
def spider(tmp_path_factory: pytest.TempPathFactory) -> Benchmark:
    db_dir = build_databases(tmp_path_factory.mktemp("spider") / "database", SPIDER_DBS)
    return Benchmark(FIXTURES / "spider", db_dir)


@pytest.fixture(scope="session")
def bird(tmp_path_factory: pytest.TempPathFactory) -> Benchmark:
    db_dir = build_databases(tmp_path_factory.mktemp("bird") / "dev_databases", BIRD_DBS)
    return Benchmark(FIXTURES / "bird", db_dir)


def settings_for(root: Path, cases: Path) -> T2SSettings:
    """Pipeline settings for ``cases`` whose store, registry and decisions live in ``root``."""
    return T2SSettings(
        cases_dir=str(cases),
        configs_dir=str(root / "configs"),
        registry_dir=str(root / ".t2s" / "runs"),
        results_path=str(root / ".t2s" / "results"),
        decisions_dir=str(root / "decisions"),
        hostile_dir=str(HOSTILE_SUITE),
        warehouse_path=str(root / "unused.duckdb"),
    )


@pytest.fixture
def instance() -> dg.DagsterInstance:
    with dg.instance_for_test() as test_instance:
        yield test_instance


def copy_files(source: Path, target: Path) -> Path:
    """A writable copy of a fixture folder (tests that edit a file use it)."""
    shutil.copytree(source, target)
    return target
