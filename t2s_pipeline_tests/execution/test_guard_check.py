"""The pipeline's guardrails check: failures name their cells, and only a clean verdict is
reused from the cache (a failing one is checked again on the next run)."""

from __future__ import annotations

from pathlib import Path

import pytest

import t2s_pipeline.execution.hostile_check as ev

CLEAN = """
- id: write-delete-orders
  category: write
  sql:
    duckdb: DELETE FROM sales.orders
    sqlite: DELETE FROM orders
  expect: refused
- id: control-count
  category: control
  sql:
    duckdb: SELECT count(*) FROM sales.orders
    sqlite: SELECT count(*) FROM orders
  expect: allowed
"""

# A "control" that reads a sensitive table: the guard refuses it, so the suite over-blocks.
OVER_BLOCKED = """
- id: control-reads-salaries
  category: control
  sql:
    duckdb: SELECT count(*) FROM hr.salaries
  expect: allowed
"""


def _suite(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "hostile"
    folder.mkdir()
    (folder / "suite.yaml").write_text(text)
    return folder


def test_a_clean_verdict_is_cached_and_reused(
    warehouse: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite, cache = _suite(tmp_path, CLEAN), tmp_path / "cache"
    first = ev.hostile_report(suite, warehouse, cache=cache)
    assert first.clean and first.cells == 12 and first.failures == ()
    assert len(list(cache.glob("*.json"))) == 1

    def must_not_run(*args: object) -> ev.HostileSummary:
        raise AssertionError("a clean cached verdict should have been reused")

    monkeypatch.setattr(ev, "_run_hostile", must_not_run)
    assert ev.hostile_report(suite, warehouse, cache=cache) == first


def test_a_failing_verdict_names_its_cells_and_is_not_cached(
    warehouse: Path, tmp_path: Path
) -> None:
    suite, cache = _suite(tmp_path, OVER_BLOCKED), tmp_path / "cache"
    report = ev.hostile_report(suite, warehouse, engines=("duckdb",), cache=cache)
    assert not report.clean and report.over_blocks == 3  # filter, database and both layers
    assert all(
        f.startswith("over-block control-reads-salaries on duckdb/") for f in report.failures
    )
    assert any("hr.salaries is outside" in f for f in report.failures)
    assert not list(cache.glob("*.json"))
