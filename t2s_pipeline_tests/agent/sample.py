"""A small in-test case set: a few ERP questions over the demo tables, with one twin pair."""

from __future__ import annotations

from pathlib import Path

from t2s_pipeline.cases import Case, CaseSet, Domain

DOMAIN = Domain(
    name="sample",
    folder=Path("."),
    engine="duckdb",
    dialect="duckdb",
    database="sample.duckdb",
    allowed_schemas=("sales", "finance", "inventory"),
)

_CASES = (
    (
        "orders-count",
        "How many orders were placed?",
        ("Count all sales orders.", "What is the number of orders?"),
        "SELECT count(*) FROM sales.orders",
    ),
    (
        "orders-total",
        "What is the total number of orders?",
        ("Give the order count.",),
        "select COUNT(*)\nfrom sales.orders",
    ),
    (
        "invoice-net",
        "What is the total net amount invoiced?",
        ("Sum the net amount of all invoices.",),
        "SELECT sum(net_amount) FROM finance.invoices",
    ),
    (
        "stock-on-hand",
        "How many units are on hand in stock?",
        ("Total units of stock on hand.",),
        "SELECT sum(on_hand_qty) FROM inventory.stock",
    ),
    (
        "customers-by-segment",
        "How many customers are in each segment?",
        ("Count customers per segment code.",),
        "SELECT segment_cd, count(*) FROM sales.customers GROUP BY segment_cd",
    ),
    (
        "items-by-category",
        "How many items are in each product category?",
        ("Number of items per category.",),
        "SELECT category, count(*) FROM sales.items GROUP BY category",
    ),
)

# orders-count and orders-total are the same query written twice: twins (SPEC section 4).
TWINS: dict[str, frozenset[str]] = {case_id: frozenset() for case_id, *_ in _CASES}
TWINS["orders-count"] = frozenset({"orders-total"})
TWINS["orders-total"] = frozenset({"orders-count"})


def sample_case_set() -> CaseSet:
    """The sample cases as a loaded case set (no files needed)."""
    cases = tuple(
        Case(id=i, question=q, phrasings=p, gold_sql=sql, difficulty="simple_aggregate")
        for i, q, p, sql in _CASES
    )
    return CaseSet(DOMAIN, cases, (), "sample")
