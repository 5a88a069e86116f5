"""Neighbour databases (issue 22): same tables and types, valid keys, deterministic, boundary
rows where the gold queries compare."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import duckdb
import pytest

from t2s_pipeline.demo.schema import ALLOWED_SCHEMAS
from t2s_pipeline.testsuite.neighbours import (
    Boundary,
    boundary_changes,
    build_neighbour,
    random_changes,
    read_tables,
)

# (child table.column, parent table.column): every reference in the demo warehouse.
REFERENCES = (
    ("sales.orders.customer_id", "sales.customers.customer_id"),
    ("sales.orders.site_id", "sales.sites.site_id"),
    ("sales.customers.home_site_id", "sales.sites.site_id"),
    ("sales.order_lines.order_id", "sales.orders.order_id"),
    ("sales.order_lines.item_id", "sales.items.item_id"),
    ("finance.invoices.order_id", "sales.orders.order_id"),
    ("finance.payments.invoice_id", "finance.invoices.invoice_id"),
    ("inventory.stock.item_id", "sales.items.item_id"),
    ("inventory.stock.site_id", "sales.sites.site_id"),
)


@pytest.fixture(scope="module")
def snapshot(warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("snapshot") / "w.duckdb"
    shutil.copy(warehouse, copy)
    return copy


def _random(snapshot: Path, dest: Path, seed: int) -> Path:
    tables = read_tables(snapshot, ALLOWED_SCHEMAS)
    build_neighbour(snapshot, dest, tables, random_changes(tables, seed))
    return dest


def _columns(path: Path) -> list[tuple[str, str, str, str]]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(
            "SELECT table_schema, table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema IN ('sales', 'finance', 'inventory') ORDER BY ALL"
        ).fetchall()


def _digest(path: Path) -> list[tuple[str, int]]:
    with duckdb.connect(str(path), read_only=True) as con:
        names = con.execute(
            "SELECT table_schema || '.' || table_name FROM information_schema.tables "
            "WHERE table_schema IN ('sales', 'finance', 'inventory') ORDER BY 1"
        ).fetchall()
        return [
            (n, con.execute(f"SELECT sum(hash(t)) FROM {n} AS t").fetchone()[0])  # type: ignore[index]
            for (n,) in names
        ]


def test_random_neighbour_keeps_tables_and_types(snapshot: Path, tmp_path: Path) -> None:
    """A neighbour holds exactly the allowlisted tables, with the snapshot's column types."""
    neighbour = _random(snapshot, tmp_path / "n.duckdb", seed=1)
    assert _columns(neighbour) == _columns(snapshot)
    with duckdb.connect(str(neighbour), read_only=True) as con:
        schemas = {r[0] for r in con.execute("SELECT schema_name FROM duckdb_schemas()").fetchall()}
    assert not schemas & {"hr", "pii", "meta"}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_neighbour_keys_stay_valid(snapshot: Path, tmp_path: Path, seed: int) -> None:
    """Primary keys stay unique and every reference still resolves to a row."""
    neighbour = _random(snapshot, tmp_path / "n.duckdb", seed)
    tables = read_tables(snapshot, ALLOWED_SCHEMAS)
    with duckdb.connect(str(neighbour), read_only=True) as con:
        for table in tables:
            key = ", ".join(table.primary_key)
            dupes = con.execute(
                f"SELECT count(*) FROM (SELECT {key} FROM {table.qualified} GROUP BY ALL "
                "HAVING count(*) > 1)"
            ).fetchone()
            assert dupes == (0,), table.qualified
        for child, parent in REFERENCES:
            c_table, c_col = child.rsplit(".", 1)
            p_table, p_col = parent.rsplit(".", 1)
            orphans = con.execute(
                f"SELECT count(*) FROM {c_table} WHERE {c_col} IS NOT NULL AND {c_col} NOT IN "
                f"(SELECT {p_col} FROM {p_table})"
            ).fetchone()
            assert orphans == (0,), child


def test_random_neighbours_are_deterministic_and_differ_by_seed(
    snapshot: Path, tmp_path: Path
) -> None:
    """The same seed gives the same rows; another seed, other rows; neither is the snapshot."""
    first = _digest(_random(snapshot, tmp_path / "a.duckdb", seed=7))
    again = _digest(_random(snapshot, tmp_path / "b.duckdb", seed=7))
    other = _digest(_random(snapshot, tmp_path / "c.duckdb", seed=8))
    assert first == again
    assert first != other
    assert first != _digest(snapshot)


@pytest.mark.parametrize(
    ("step", "expected"), [(-1, "2025-04-01"), (0, "2025-04-02"), (1, "2025-04-03")]
)
def test_boundary_rows_sit_at_the_value(
    snapshot: Path, tmp_path: Path, step: int, expected: str
) -> None:
    """Rows are added exactly at, one day below and one day above a compared date."""
    tables = read_tables(snapshot, ALLOWED_SCHEMAS)
    boundary = Boundary("sales", "customers", "created_on", dt.date(2025, 4, 2))
    dest = tmp_path / "b.duckdb"
    build_neighbour(snapshot, dest, tables, boundary_changes(tables, [boundary], step, seed=0))
    day = f"DATE '{expected}'"
    query = f"SELECT count(*) FROM sales.customers WHERE created_on = {day}"
    with duckdb.connect(str(snapshot), read_only=True) as con:
        before = con.execute(query).fetchone()[0]  # type: ignore[index]
    with duckdb.connect(str(dest), read_only=True) as con:
        after = con.execute(query).fetchone()[0]  # type: ignore[index]
        total = con.execute("SELECT count(*) - count(DISTINCT customer_id) FROM sales.customers")
        assert total.fetchone() == (0,)
    assert after == before + 2


def test_decimal_boundaries_move_by_the_column_scale(snapshot: Path, tmp_path: Path) -> None:
    """A DECIMAL(12, 2) column compared with 0 gets rows at -0.01, 0.00 and 0.01: a value one
    unit of the literal away (1) would miss `amount < 1` against `amount < 0`."""
    tables = read_tables(snapshot, ALLOWED_SCHEMAS)
    boundary = Boundary("finance", "payments", "amount", 0)
    found = []
    for step in (-1, 0, 1):
        dest = tmp_path / f"p{step}.duckdb"
        build_neighbour(snapshot, dest, tables, boundary_changes(tables, [boundary], step, seed=0))
        with duckdb.connect(str(dest), read_only=True) as con:
            rows = con.execute(
                "SELECT DISTINCT amount FROM finance.payments WHERE amount BETWEEN -0.01 AND 0.01"
            ).fetchall()
        found.append({float(r[0]) for r in rows})
    assert -0.01 in found[0] and 0.0 in found[1] and 0.01 in found[2]


def test_tie_sits_at_the_top_k_cut(snapshot: Path, tmp_path: Path) -> None:
    """A top-5 cut gets a copy of its 5th row under a fresh key: ranks 5 and 6 tie."""
    from t2s_pipeline.sql.schema import live_schema
    from t2s_pipeline.testsuite.boundaries import top_k_cut
    from t2s_pipeline.testsuite.neighbours import tie_changes

    gold = (
        "SELECT item_id, list_price FROM sales.items WHERE is_active "
        "ORDER BY list_price DESC, item_id LIMIT 5"
    )
    cut = top_k_cut(gold, "duckdb", live_schema(str(snapshot), "duckdb", ALLOWED_SCHEMAS))
    assert cut is not None and (cut.schema, cut.table) == ("sales", "items")
    tables = read_tables(snapshot, ALLOWED_SCHEMAS)
    dest = tmp_path / "tie.duckdb"
    build_neighbour(
        snapshot, dest, tables, tie_changes(tables, [(cut.schema, cut.table, cut.kth_row)])
    )
    ranked = gold.replace("LIMIT 5", "LIMIT 6")
    with duckdb.connect(str(dest), read_only=True) as con:
        rows = con.execute(ranked).fetchall()
    assert rows[4][1] == rows[5][1]
    assert rows[5][0] == f"{rows[4][0]}~t"
