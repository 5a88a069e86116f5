"""Fixtures shared by every test folder: a small demo warehouse and the PostgreSQL server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import psycopg2
import pytest

from t2s_pipeline.demo.generate import build_warehouse
from t2s_pipeline.demo.mysql import load_mysql
from t2s_pipeline_tests.mariadb import mariadb_unavailable_reason, start_server

DEFAULT_PG_URL = "postgresql://postgres:postgres@localhost:5432/postgres"


def superuser_url() -> str:
    """The PostgreSQL superuser URL: ``$T2S_PG_URL`` or the local default."""
    return os.environ.get("T2S_PG_URL") or DEFAULT_PG_URL


def postgres_unreachable_reason(url: str) -> str | None:
    """Why the server at ``url`` cannot be used, or None when it answers."""
    try:
        psycopg2.connect(url, connect_timeout=3).close()
    except psycopg2.Error as error:
        return f"no PostgreSQL server reachable at T2S_PG_URL or {DEFAULT_PG_URL}: {error}".strip()
    return None


@pytest.fixture(scope="session")
def pg_url() -> str:
    """A reachable PostgreSQL superuser URL; the test is skipped with the reason otherwise."""
    url = superuser_url()
    reason = postgres_unreachable_reason(url)
    if reason is not None:
        if os.environ.get("CI") == "true":
            # CI starts a server (.ci/run): a missing one there is a broken CI, not a skip.
            pytest.fail(reason)
        pytest.skip(reason)
    return url


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small demo warehouse (scale 0.05), built once per session. Treat it as read-only."""
    return build_warehouse(tmp_path_factory.mktemp("warehouse") / "w.duckdb", scale=0.05).path


@pytest.fixture(scope="session")
def mysql_admin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An administrator URL of a private MariaDB server started for this session (or of
    ``$T2S_MYSQL_URL``); skipped with the reason when none can start (failed under CI)."""
    reason = mariadb_unavailable_reason()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(reason)  # CI installs mariadb-server (.ci/run)
        pytest.skip(reason)
    with start_server(tmp_path_factory.mktemp("mariadb")) as url:
        yield url


@pytest.fixture(scope="module")
def mysql_reader_url(mysql_admin_url: str, warehouse: Path) -> str:
    """The small demo warehouse loaded into the session's MariaDB server: the reader's URL.
    Loaded per module: the hostile and corpus targets drop the demo databases when done."""
    return load_mysql(warehouse, mysql_admin_url)
