"""The reviewer's worked examples (issue: a diagnosis reviewers agree with): each gets the right
primary category and findings, scored end to end on a real demo warehouse."""

from __future__ import annotations

from pathlib import Path

import pytest

from t2s_pipeline.config import ScorerSettings
from t2s_pipeline.scoring.pair import score_pair

SCHEMAS = ["sales", "finance", "inventory"]
LOW_STOCK = """
SELECT st.site_id, si.site_name, COUNT(*) AS items_below_reorder
FROM inventory.stock AS st
JOIN sales.items AS it ON it.item_id = st.item_id
JOIN sales.sites AS si ON si.site_id = st.site_id
WHERE it.is_active AND st.on_hand_qty < st.reorder_pt
GROUP BY st.site_id, si.site_name
"""
LOW_STOCK_NO_NAME = """
SELECT st.site_id, COUNT(*) AS n
FROM inventory.stock AS st JOIN sales.items AS it ON it.item_id = st.item_id
WHERE it.is_active AND st.on_hand_qty < st.reorder_pt
GROUP BY st.site_id
"""
MONTHS = """
SELECT strftime(invoice_date, '%Y-%m') AS invoice_month, SUM(net_amount) AS net_revenue
FROM finance.invoices GROUP BY invoice_month ORDER BY invoice_month
"""
MONTHS_AS_TIMESTAMPS = """
SELECT date_trunc('month', invoice_date) AS m, SUM(net_amount) AS net
FROM finance.invoices GROUP BY 1 ORDER BY 1
"""
BOXED = """
SELECT SUM(l.quantity * 12) AS pieces FROM sales.order_lines AS l
JOIN sales.items AS it ON it.item_id = l.item_id WHERE it.uom_cd = 'BX'
"""
BOXED_INVERTED_UNSCALED = """
SELECT SUM(l.quantity) AS pieces FROM sales.order_lines AS l
JOIN sales.items AS it ON it.item_id = l.item_id WHERE it.uom_cd <> 'BX'
"""


def _diagnosis(warehouse: Path, gold: str, candidate: str, **scorer: object) -> dict[str, object]:
    pair = score_pair(str(warehouse), gold, candidate, "duckdb", SCHEMAS, ScorerSettings(**scorer))
    data = pair.to_json()["diagnosis"]
    assert isinstance(data, dict)
    return {**data, "ex": pair.output.exact_match}


def test_an_unrounded_average_is_presentation(warehouse: Path) -> None:
    found = _diagnosis(
        warehouse,
        "SELECT ROUND(AVG(list_price), 2) AS avg_list_price FROM sales.items",
        "SELECT AVG(list_price) AS a FROM sales.items",
    )
    assert found["primary"] == "presentation" and not found["ex"]
    assert found["findings"] == ["values equal after rounding to the reference's 2 decimals"]


def test_a_missing_descriptive_column_is_presentation(warehouse: Path) -> None:
    found = _diagnosis(warehouse, LOW_STOCK, LOW_STOCK_NO_NAME)
    assert found["primary"] == "presentation"
    assert found["findings"] == ["missing descriptive column site_name"]


def test_months_shown_as_timestamps_are_presentation(warehouse: Path) -> None:
    found = _diagnosis(warehouse, MONTHS, MONTHS_AS_TIMESTAMPS)
    assert found["primary"] == "presentation"
    (finding,) = found["findings"]  # type: ignore[misc]
    assert finding.startswith("a date or month shown in another form")


def test_an_inverted_filter_and_a_missing_factor_are_both_found(warehouse: Path) -> None:
    found = _diagnosis(warehouse, BOXED, BOXED_INVERTED_UNSCALED)
    assert found["primary"] == "wrong_filter" and found["also"] == ["wrong_metric"]
    assert found["findings"] == [
        "filter items.uom_cd <> 'BX' where the reference has items.uom_cd = 'BX'",
        "aggregation SUM(order_lines.quantity) where the reference has "
        "SUM(order_lines.quantity * 12)",
    ]


@pytest.mark.parametrize("ordered_compare, ex", [("auto", False), (False, True)])
def test_another_order_where_the_gold_sorts(
    warehouse: Path, ordered_compare: object, ex: bool
) -> None:
    """Under ``auto`` a reversed ORDER BY fails EX and the finding says why; off, it matches."""
    gold = "SELECT item_id, list_price FROM sales.items ORDER BY list_price DESC, item_id"
    candidate = "SELECT item_id, list_price FROM sales.items ORDER BY list_price, item_id"
    found = _diagnosis(warehouse, gold, candidate, ordered_compare=ordered_compare)
    assert found["ex"] is ex
    if not ex:
        assert found["primary"] == "presentation"
        assert found["findings"] == ["rows in another order than the reference's ORDER BY"]


def test_a_wrong_value_is_not_presentation(warehouse: Path) -> None:
    found = _diagnosis(
        warehouse,
        "SELECT ROUND(AVG(list_price), 2) AS a FROM sales.items",
        "SELECT ROUND(AVG(list_price) + 1, 2) AS a FROM sales.items",
    )
    assert found["primary"] == "wrong_metric"


def test_a_missing_measure_column_is_not_presentation(warehouse: Path) -> None:
    gold = (
        "SELECT site_id, COUNT(*) AS n, SUM(on_hand_qty) AS total FROM inventory.stock GROUP BY 1"
    )
    candidate = "SELECT site_id, COUNT(*) AS n FROM inventory.stock GROUP BY 1"
    assert _diagnosis(warehouse, gold, candidate)["primary"] != "presentation"
