"""Mutants of gold queries (issue 22), driven by fixtures/testsuite/mutants.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlglot
import yaml

from t2s_pipeline.errors import SqlAnalysisError
from t2s_pipeline.testsuite.mutants import KINDS, mutate

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "testsuite" / "mutants.yaml"
ENTRIES: list[dict[str, Any]] = yaml.safe_load(FIXTURES.read_text(encoding="utf-8"))


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_fixture_mutant_is_made(entry: dict[str, Any]) -> None:
    """Each fixture's gold query yields the expected mutant of its class, described."""
    mutants = mutate(entry["sql"], "duckdb")
    same = [m for m in mutants if m.kind == entry["kind"] and m.sql == entry["mutant"]]
    assert same, [(m.kind, m.sql) for m in mutants]
    assert entry["change"] in same[0].change


def test_every_class_has_a_fixture() -> None:
    """The fixtures cover every mutation class the issue names."""
    assert {e["kind"] for e in ENTRIES} == set(KINDS)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_mutants_are_distinct_valid_sql(entry: dict[str, Any]) -> None:
    """Every mutant parses again, differs from the gold and from every other mutant."""
    mutants = mutate(entry["sql"], "duckdb")
    texts = [m.sql for m in mutants]
    assert len(texts) == len(set(texts))
    gold = sqlglot.parse_one(entry["sql"], read="duckdb").sql(dialect="duckdb")
    assert gold not in texts
    for text in texts:
        sqlglot.parse_one(text, read="duckdb")


def test_join_keys_are_not_negated() -> None:
    """Negating a join key equality makes a near cross join, not a near miss: not made."""
    mutants = mutate(
        "SELECT COUNT(*) FROM sales.orders o JOIN sales.customers c ON c.customer_id = o.customer_id",
        "duckdb",
    )
    assert not [m for m in mutants if m.kind == "negate_condition"]


def test_unparsable_gold_is_an_error() -> None:
    with pytest.raises(SqlAnalysisError):
        mutate("SELEC nothing FROM", "duckdb")
