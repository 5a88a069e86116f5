"""The time bound: a runaway statement is refused as timed out, on every engine, promptly."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from t2s_pipeline.demo.postgres import drop_database, load_postgres
from t2s_pipeline.execution import Guard, open_executor
from t2s_pipeline.execution.sqlite_copy import build_sqlite_copy

CROSS_JOIN = "SELECT sum(a.quantity * b.quantity * c.quantity) FROM {t} AS a, {t} AS b, {t} AS c"
BOUND_S = 3.0


@pytest.mark.parametrize("layers", [frozenset({"filter"}), frozenset({"database"})])
def test_duckdb_timeout(warehouse: Path, layers: frozenset[str]) -> None:
    """The interrupt timer stops DuckDB with either layer alone (the bound is not a layer)."""
    guard = Guard(("sales",), layers=layers, timeout_s=0.3)
    with open_executor(str(warehouse), guard) as executor:
        outcome = executor.run(CROSS_JOIN.format(t="sales.order_lines"))
        after = executor.run("SELECT count(*) FROM sales.sites")
    assert outcome.refused and outcome.timed_out and outcome.layer == "database"
    assert outcome.seconds < BOUND_S
    assert after.rows == [(12,)]  # the connection is usable after the interrupt


def test_sqlite_timeout(warehouse: Path, tmp_path: Path) -> None:
    """The progress handler ends a SQLite statement at its deadline."""
    copy = build_sqlite_copy(warehouse, tmp_path / "w.sqlite")
    guard = Guard(("main",), dialect="sqlite", timeout_s=0.3)
    with open_executor(str(copy.main), guard) as executor:
        outcome = executor.run(CROSS_JOIN.format(t="order_lines"))
    assert outcome.refused and outcome.timed_out and outcome.seconds < BOUND_S


@pytest.mark.parametrize("layers", [frozenset({"filter"}), frozenset({"database"})])
def test_a_sqlite_statement_that_ends_past_its_deadline_is_timed_out(
    warehouse: Path, tmp_path: Path, layers: frozenset[str]
) -> None:
    """One printf() is one VM step: the progress handler is never asked while it runs, and a
    statement with few steps ends before the next call. Under load the hostile printf-wide case
    returned its row after 3.9 s of a 2 s bound; the deadline is checked when the rows are in."""
    copy = build_sqlite_copy(warehouse, tmp_path / "w.sqlite")
    guard = Guard(("main",), dialect="sqlite", layers=layers, timeout_s=0.01, contained=False)
    with open_executor(str(copy.main), guard) as executor:
        outcome = executor.run("SELECT length(printf('%.*c', 40000000, 'x'))")
        quick = executor.run("SELECT 1")
    assert outcome.seconds > 0.01, "the printf must outlast the bound for this test to mean much"
    assert outcome.refused and outcome.timed_out, outcome
    assert quick.rows == [(1,)]


def test_postgres_timeout(warehouse: Path, pg_url: str) -> None:
    """statement_timeout and the cancel timer stop PostgreSQL at the deadline."""
    database = f"t2s_timeout_{uuid.uuid4().hex[:8]}"
    reader = load_postgres(warehouse, pg_url, database, "t2s_test_reader", "t2s_test_reader")
    try:
        guard = Guard(("sales", "finance", "inventory"), dialect="postgres", timeout_s=0.3)
        with open_executor(reader, guard) as executor:
            outcome = executor.run(CROSS_JOIN.format(t="sales.order_lines"))
            after = executor.run("SELECT count(*) FROM sales.sites")
    finally:
        drop_database(pg_url, database)
    assert outcome.refused and outcome.timed_out and outcome.seconds < BOUND_S
    assert after.rows == [(12,)]
