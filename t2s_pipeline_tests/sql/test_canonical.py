"""Canonical forms that find twins for leave-one-out (SPEC 4), driven by twins.yaml."""

from __future__ import annotations

from typing import Any

import pytest

from t2s_pipeline.sql.analysis import analyse_query
from t2s_pipeline.sql.canonical import canonical_form
from t2s_pipeline_tests.sql.fixture_files import load_fixture, shared_schema

TWINS: dict[str, list[dict[str, Any]]] = load_fixture("twins.yaml")


@pytest.mark.parametrize("pair", TWINS["same"], ids=[p["name"] for p in TWINS["same"]])
def test_equal_queries_share_one_canonical_form(pair: dict[str, Any]) -> None:
    """A twin written differently must still be excluded from retrieval."""
    schema = shared_schema()
    assert canonical_form(pair["a"], "duckdb", schema) == canonical_form(
        pair["b"], "duckdb", schema
    )


@pytest.mark.parametrize("pair", TWINS["different"], ids=[p["name"] for p in TWINS["different"]])
def test_different_queries_never_collide(pair: dict[str, Any]) -> None:
    """A collision would hide a genuinely different case from the SUT's retriever."""
    schema = shared_schema()
    assert canonical_form(pair["a"], "duckdb", schema) != canonical_form(
        pair["b"], "duckdb", schema
    )


def test_analysis_carries_the_same_canonical_form() -> None:
    """Analysis and the standalone function must agree, or twins found one way are missed."""
    sql = TWINS["same"][2]["a"]
    schema = shared_schema()
    assert analyse_query(sql, "duckdb", schema).canonical == canonical_form(sql, "duckdb", schema)
