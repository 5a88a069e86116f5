"""Component sets and their scores for gold/candidate pairs, driven by components.yaml."""

from __future__ import annotations

from typing import Any

import pytest

from t2s_pipeline.scoring.components import PR, ComponentSets, score_components
from t2s_pipeline.sql.pair import analyse_pair
from t2s_pipeline_tests.sql.fixture_files import entry_schema, load_fixture

ENTRIES: list[dict[str, Any]] = load_fixture("components.yaml")


def _check_sets(actual: ComponentSets, expected: dict[str, list[str]]) -> None:
    for name, values in expected.items():
        assert getattr(actual, name) == frozenset(values), name


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_component_pair(entry: dict[str, Any]) -> None:
    """Each behaviour of SPEC 7 (aliases, join forms, cleaning, counts...) on one real pair."""
    dialect = entry.get("dialect", "duckdb")
    pair = analyse_pair(entry["gold"], entry["candidate"], dialect, entry_schema(entry))
    assert (pair.candidate is None) == bool(entry.get("candidate_error", False))
    _check_sets(pair.gold.components, entry.get("gold_sets", {}))
    if pair.candidate is not None:
        _check_sets(pair.candidate.components, entry.get("candidate_sets", {}))
    candidate = pair.candidate.components if pair.candidate is not None else None
    scores = score_components(pair.gold.components, candidate)
    for name, (precision, recall) in entry["scores"].items():
        assert getattr(scores, name) == pytest.approx(PR(precision, recall)), name


def test_unparseable_candidate_reports_its_error() -> None:
    """The caller records the parse error; it must say what went wrong."""
    pair = analyse_pair("SELECT 1 AS a", "SELECT (1", "duckdb", None)
    assert pair.candidate is None
    assert pair.candidate_error is not None and "cannot parse" in pair.candidate_error


def test_scores_json_shape() -> None:
    """``t2s score --json`` prints this object; scripts depend on its keys (SPEC 15)."""
    gold = ComponentSets(select=frozenset({"a"}), limit=frozenset({"LIMIT 3"}))
    candidate = ComponentSets(select=frozenset({"a", "b"}))
    payload = score_components(gold, candidate).to_json()
    assert list(payload) == [
        "select",
        "tables",
        "joins",
        "filters",
        "group_by",
        "aggregations",
        "order_by",
        "limit",
    ]
    assert payload["select"] == {"precision": 0.5, "recall": 1.0}
    assert payload["limit"] == {"precision": None, "recall": 0.0}
