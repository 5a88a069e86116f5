"""The hostile suite run once per session on every reachable engine, shared by its tests."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from t2s_pipeline.execution.hostile import SuiteReport, load_suite, run_suite
from t2s_pipeline.execution.hostile_suite import Attack
from t2s_pipeline.execution.hostile_targets import (
    EngineTarget,
    duckdb_target,
    mysql_target,
    postgres_target,
    sqlite_target,
)
from t2s_pipeline.suites import HOSTILE_SUITE
from t2s_pipeline_tests.conftest import postgres_unreachable_reason, superuser_url
from t2s_pipeline_tests.mariadb import mariadb_unavailable_reason

SUITE = HOSTILE_SUITE
SUITE_TIMEOUT_S = 0.5


@dataclass(frozen=True)
class HostileRun:
    """The suite's report per engine, and why an engine could not run."""

    attacks: tuple[Attack, ...]
    reports: dict[str, SuiteReport]
    skipped: dict[str, str]

    def report(self, engine: str) -> SuiteReport:
        """The engine's report, or a skip with the reason it has none."""
        if engine in self.skipped:
            pytest.skip(self.skipped[engine])
        return self.reports[engine]


@pytest.fixture(scope="session")
def hostile_attacks() -> tuple[Attack, ...]:
    """Every attack and control in the packaged hostile suite."""
    return load_suite(SUITE)


@pytest.fixture(scope="session")
def hostile_run(
    hostile_attacks: tuple[Attack, ...],
    warehouse: Path,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> HostileRun:
    """The suite on DuckDB, SQLite and (when reachable) PostgreSQL and MariaDB, engines side by
    side. MariaDB is the session's private server (``mysql_admin_url``), asked for only when one
    can start, so a machine without MariaDB skips its cells instead of every engine's."""
    workdir = tmp_path_factory.mktemp("hostile")
    targets: list[EngineTarget] = [
        duckdb_target(warehouse, workdir),
        sqlite_target(warehouse, workdir),
    ]
    skipped = {}
    reason = postgres_unreachable_reason(superuser_url())
    if reason is None:
        database = f"t2s_hostile_test_{uuid.uuid4().hex[:8]}"
        targets.append(postgres_target(warehouse, superuser_url(), database))
    else:
        skipped["postgres"] = reason
    reason = mariadb_unavailable_reason()
    if reason is None:
        targets.append(mysql_target(warehouse, request.getfixturevalue("mysql_admin_url")))
    else:
        skipped["mysql"] = reason
    logging.getLogger("t2s.guard").setLevel(logging.ERROR)  # thousands of expected refusals
    try:
        report = run_suite(hostile_attacks, targets, timeout_s=SUITE_TIMEOUT_S, parallel=True)
    finally:
        logging.getLogger("t2s.guard").setLevel(logging.NOTSET)
        for target in targets:
            target.cleanup()
    reports = {
        t.engine: SuiteReport(tuple(c for c in report.cells if c.engine == t.engine))
        for t in targets
    }
    return HostileRun(hostile_attacks, reports, skipped)
