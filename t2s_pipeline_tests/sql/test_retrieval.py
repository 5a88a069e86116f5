"""Retrieval family (SPEC 5): offered tables against required ones."""

from __future__ import annotations

import pytest

from t2s_pipeline.scoring.retrieval import RetrievalScore, score_retrieval
from t2s_pipeline.sql.analysis import analyse_query

REQUIRED = frozenset({"sales.orders", "sales.order_lines", "sales.customers"})


def test_worked_example() -> None:
    """The worked example of SPEC 5 must reproduce exactly."""
    offered = ["sales.orders", "sales.customers", "sales.items", "sales.sites", "finance.invoices"]
    score = score_retrieval(REQUIRED, offered)
    assert score.recall == pytest.approx(2 / 3)
    assert score.precision == pytest.approx(0.4)
    assert (round(score.recall, 3), round(score.precision, 3)) == (0.667, 0.4)
    assert score.spurious == 3
    assert score.missing == ("sales.order_lines",)


def test_offered_names_are_folded_like_required_ones() -> None:
    """A retriever that echoes DDL casing must not lose credit for the same tables."""
    offered = ["SALES.Orders", "Sales.ORDER_LINES", '"sales"."customers"']
    score = score_retrieval(REQUIRED, offered)
    assert score == RetrievalScore(recall=1.0, precision=1.0, spurious=0, missing=())


def test_bare_offered_name_matches_its_schema_qualified_table() -> None:
    """Retrievers often return bare table names; they still name the right table."""
    score = score_retrieval(frozenset({"sales.orders"}), ["orders", "customers"])
    assert (score.recall, score.precision, score.spurious) == (1.0, 0.5, 1)


def test_postgres_quoted_case_is_kept() -> None:
    """In PostgreSQL "Orders" and orders are different tables; catalog names are exact."""
    required = frozenset({"public.Orders"})
    assert score_retrieval(required, ["public.orders"], dialect="postgres").recall == 0.0
    assert score_retrieval(required, ["public.Orders"], dialect="postgres").recall == 1.0


def test_empty_sides_are_undefined_not_zero() -> None:
    """A zero denominator is None and stays out of means (SPEC 10)."""
    assert score_retrieval(frozenset(), []) == RetrievalScore(None, None, 0, ())
    nothing_offered = score_retrieval(REQUIRED, [])
    assert (nothing_offered.recall, nothing_offered.precision) == (0.0, None)


def test_required_tables_from_gold_feed_retrieval() -> None:
    """Required tables come from the gold SQL: CTE names never count as tables to retrieve."""
    gold = (
        "WITH lines AS (SELECT * FROM sales.order_lines) "
        "SELECT * FROM lines JOIN sales.orders o USING (order_id)"
    )
    required = analyse_query(gold, "duckdb", None).required_tables
    score = score_retrieval(required, ["sales.orders", "lines"])
    assert required == frozenset({"sales.order_lines", "sales.orders"})
    assert (score.recall, score.spurious, score.missing) == (0.5, 1, ("sales.order_lines",))
