"""Output columns (origins and expressions) and required tables, driven by analysis.yaml."""

from __future__ import annotations

from typing import Any

import pytest

from t2s_pipeline.sql.analysis import OutputColumn, analyse_query
from t2s_pipeline_tests.sql.fixture_files import entry_schema, load_fixture, shared_schema

ENTRIES: list[dict[str, Any]] = load_fixture("analysis.yaml")


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_output_columns_and_required_tables(entry: dict[str, Any]) -> None:
    """Column pairing by origin (SPEC 6.1) and retrieval (SPEC 5) rest on these two readings."""
    dialect = entry.get("dialect", "duckdb")
    analysis = analyse_query(entry["sql"], dialect, entry_schema(entry))
    expected = tuple(OutputColumn(origin=o, expression=e) for o, e in entry["outputs"])
    assert analysis.output_columns == expected
    assert analysis.required_tables == frozenset(entry["required"])


def test_expression_ignores_aliases() -> None:
    """Two queries differing only in aliases must give identical expressions (proof of a pair)."""
    a = analyse_query("SELECT SUM(o.amount) AS s FROM sales.orders o", "duckdb", None)
    b = analyse_query("select sum(x.amount) total from sales.orders x", "duckdb", None)
    assert a.output_columns == b.output_columns
    assert a.output_columns[0].expression == "SUM(orders.amount)"


def test_top_level_order_and_limit_flags() -> None:
    """Exact match compares in order only under a top-level ORDER BY; inner ones do not count."""
    inner = analyse_query("SELECT * FROM (SELECT 1 AS a ORDER BY a LIMIT 1) AS t", "duckdb", None)
    outer = analyse_query("SELECT 1 AS a ORDER BY a LIMIT 1", "duckdb", None)
    assert (inner.has_order_by, inner.has_limit) == (False, False)
    assert (outer.has_order_by, outer.has_limit) == (True, True)


def test_self_join_keeps_both_sides_apart() -> None:
    """Reading one table twice must not merge its two roles into one column text."""
    sql = (
        "SELECT a.order_id, b.order_id FROM sales.orders a "
        "JOIN sales.orders b ON a.customer_id = b.customer_id"
    )
    analysis = analyse_query(sql, "duckdb", None)
    assert [c.expression for c in analysis.output_columns] == [
        "orders_1.order_id",
        "orders_2.order_id",
    ]


def test_correlated_subquery_on_the_same_table_is_a_join_between_two_reads() -> None:
    """Inner and outer reads of one table must stay apart, or the join reads ``x = x``."""
    sql = (
        "SELECT o.order_id FROM sales.orders o WHERE o.amount > "
        "(SELECT AVG(i.amount) FROM sales.orders i WHERE i.customer_id = o.customer_id)"
    )
    analysis = analyse_query(sql, "duckdb", shared_schema())
    assert analysis.components.joins == frozenset({"orders.customer_id = orders_2.customer_id"})
    assert "AVG(orders_2.amount)" in analysis.components.aggregations
