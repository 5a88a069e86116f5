"""Component sets compare by meaning (SPEC 7), driven by equivalence.yaml: pairs written from
the specification, before the normalisation they test existed."""

from __future__ import annotations

from typing import Any

import pytest

from t2s_pipeline.sql.pair import analyse_pair
from t2s_pipeline_tests.sql.fixture_files import entry_schema, load_fixture

FIXTURE: dict[str, list[dict[str, Any]]] = load_fixture("equivalence.yaml")


def _sets(entry: dict[str, Any]) -> tuple[frozenset[str], frozenset[str]]:
    pair = analyse_pair(entry["a"], entry["b"], "duckdb", entry_schema(entry))
    assert pair.candidate is not None, pair.candidate_error
    name = entry["set"]
    return getattr(pair.gold.components, name), getattr(pair.candidate.components, name)


@pytest.mark.parametrize("entry", FIXTURE["equivalent"], ids=lambda e: e["name"])
def test_equivalent_spellings_are_one_element(entry: dict[str, Any]) -> None:
    a, b = _sets(entry)
    assert a == b


@pytest.mark.parametrize("entry", FIXTURE["different"], ids=lambda e: e["name"])
def test_different_meanings_stay_apart(entry: dict[str, Any]) -> None:
    a, b = _sets(entry)
    assert a != b


def test_the_fixture_is_large_enough() -> None:
    """The issue asks for at least 40 pairs of each kind."""
    assert len(FIXTURE["equivalent"]) >= 40 and len(FIXTURE["different"]) >= 40


def test_an_element_keeps_the_text_as_written() -> None:
    """The normal form is for comparing; a reader sees what the query says."""
    pair = analyse_pair(
        "SELECT order_id FROM sales.orders WHERE amount BETWEEN 1 AND 5",
        "SELECT order_id FROM sales.orders WHERE amount >= 1 AND amount <= 5",
        "duckdb",
        entry_schema({}),
    )
    assert pair.candidate is not None
    assert pair.gold.components.filters == pair.candidate.components.filters
    assert pair.gold.components.display["orders.amount >= 1"] == "orders.amount BETWEEN 1 AND 5"
