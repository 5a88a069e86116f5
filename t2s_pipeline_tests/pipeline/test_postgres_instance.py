"""The deployment instance (deploy/dagster.yaml) stores runs and events in a real PostgreSQL."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import dagster as dg
import psycopg2
import pytest

from t2s_pipeline.assets.launch import run_config

from .conftest import REPO, Project

DATABASE = "t2s_dagster_test"


@pytest.fixture
def postgres_instance(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[dg.DagsterInstance]:
    """A fresh database for Dagster's storage, reached through deploy/dagster.yaml."""
    admin = psycopg2.connect(pg_url)
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        cursor.execute(f"CREATE DATABASE {DATABASE}")
    url = urlparse(pg_url)
    monkeypatch.setenv("T2S_DAGSTER_PG_HOST", url.hostname or "localhost")
    monkeypatch.setenv("T2S_DAGSTER_PG_USER", url.username or "postgres")
    monkeypatch.setenv("T2S_DAGSTER_PG_PASSWORD", url.password or "")
    monkeypatch.setenv("T2S_DAGSTER_PG_DB", DATABASE)
    # A copy of deploy/dagster.yaml, so local artifacts land in the test's folder, not the repo.
    home = tmp_path / "deploy"
    home.mkdir()
    shutil.copy(REPO / "deploy" / "dagster.yaml", home / "dagster.yaml")
    instance = dg.DagsterInstance.from_config(str(home))
    try:
        yield instance
    finally:
        instance.dispose()
        with admin.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        admin.close()


@pytest.mark.postgres
def test_partition_materialises_on_the_postgres_instance(
    project: Project, postgres_instance: dg.DagsterInstance, pg_url: str
) -> None:
    """One run partition, end to end, with Dagster's own records in PostgreSQL."""
    outcome = run_config(project.config("pg"), project.settings, postgres_instance, checks=[])
    assert outcome.success
    assert outcome.run_id in postgres_instance.get_dynamic_partitions("eval_run")
    event = postgres_instance.get_latest_materialization_event(dg.AssetKey("run_summary"))
    assert event is not None and event.asset_materialization is not None
    assert event.asset_materialization.partition == outcome.run_id
    # gold_cases is part of the run's job (one run), not a run of its own
    assert postgres_instance.get_runs_count() >= 1
    stored = urlparse(pg_url)._replace(path=f"/{DATABASE}").geturl()
    with psycopg2.connect(stored) as conn, conn.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM runs")
        row = cursor.fetchone()
    assert row is not None and row[0] >= 1
