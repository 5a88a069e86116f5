"""The demo warehouse is deterministic and has the ERP shape the gold cases rely on."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from t2s_pipeline.demo.generate import build_warehouse, generate_tables, read_snapshot_hash
from t2s_pipeline.demo.schema import ALLOWED_SCHEMAS, SENSITIVE_SCHEMAS, TABLES


def _content(path: Path) -> dict[str, list[tuple[object, ...]]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {
            t.qualified: con.sql(f"SELECT * FROM {t.qualified} ORDER BY ALL").fetchall()
            for t in TABLES
        }
    finally:
        con.close()


def test_two_builds_are_identical(tmp_path: Path) -> None:
    """Pinned snapshots are only pinned if the generator is deterministic, row for row."""
    first = build_warehouse(tmp_path / "a.duckdb", scale=0.05)
    second = build_warehouse(tmp_path / "b.duckdb", scale=0.05)
    assert first.snapshot_hash == second.snapshot_hash
    assert read_snapshot_hash(first.path) == first.snapshot_hash
    assert _content(first.path) == _content(second.path)


def test_scale_changes_the_snapshot() -> None:
    """A different scale must not pass for the pinned snapshot."""
    from t2s_pipeline.demo.generate import snapshot_hash

    assert snapshot_hash(generate_tables(0.05)) != snapshot_hash(generate_tables(0.06))


def test_every_schema_and_comment_is_present(tmp_path: Path) -> None:
    """Retrievers depend on column comments to decode the ERP codes."""
    report = build_warehouse(tmp_path / "w.duckdb", scale=0.05)
    con = duckdb.connect(str(report.path), read_only=True)
    schemas = {
        r[0] for r in con.sql("SELECT schema_name FROM information_schema.schemata").fetchall()
    }
    assert set(ALLOWED_SCHEMAS) | set(SENSITIVE_SCHEMAS) <= schemas
    comment = con.execute(
        "SELECT comment FROM duckdb_columns() WHERE schema_name = 'finance' "
        "AND table_name = 'payments' AND column_name = 'pm_cd'"
    ).fetchall()
    assert "CC=credit card" in comment[0][0]


@pytest.mark.parametrize("status", ["placed", "shipped", "delivered", "cancelled", "returned"])
def test_every_order_status_occurs(tmp_path_factory: pytest.TempPathFactory, status: str) -> None:
    """Trap questions ("completed" = delivered) need every status code in the data."""
    tables = generate_tables(0.05)
    assert (tables["sales.orders"]["status_cd"] == status).any()


def test_money_is_consistent() -> None:
    """gross = net + tax on every invoice, and cancelled orders are never invoiced."""
    tables = generate_tables(0.05)
    invoices = tables["finance.invoices"]
    assert (invoices["gross_amount"] == invoices["net_amount"] + invoices["tax_amount"]).all()
    orders = tables["sales.orders"].set_index("order_id")
    assert not (orders.loc[invoices["order_id"], "status_cd"] == "cancelled").any()
