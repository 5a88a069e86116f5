"""Component sets and their scores for gold/candidate pairs, driven by components.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from t2s_pipeline.scoring.components import PR, ComponentSets, score_components
from t2s_pipeline.sql import components as components_sql
from t2s_pipeline.sql.analysis import analyse_query
from t2s_pipeline.sql.pair import analyse_pair
from t2s_pipeline.sql.schema import domain_schemas
from t2s_pipeline_tests.scoring.test_analysis_memo import demo_cases
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


SHADOWED = [
    # One alias, two derived tables: the same written text, different columns.
    "SELECT s.a FROM (SELECT x AS a FROM t) AS s WHERE s.a > 1 "
    "UNION ALL SELECT s.a FROM (SELECT y AS a FROM u) AS s WHERE s.a > 1",
    "SELECT (SELECT MAX(s.a) FROM (SELECT x AS a FROM t) AS s) AS p, "
    "(SELECT MAX(s.a) FROM (SELECT y AS a FROM u) AS s) AS q",
    # A projection met again in GROUP BY, HAVING and ORDER BY.
    "SELECT a, COUNT(*) FROM t GROUP BY a HAVING COUNT(*) > 1 ORDER BY COUNT(*) DESC, a",
    # One text as a filter (split into its conjuncts) and as an output (whole).
    "SELECT a BETWEEN 1 AND 5 AS inside FROM t WHERE a BETWEEN 1 AND 5",
]


def _without_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every element normalised afresh, as before nodes that read alike shared one."""
    monkeypatch.setattr(
        components_sql._Extractor,
        "_elements",
        lambda self, node, split=False: self._normalised(node, self.resolver.text(node), split),
    )


def test_nodes_that_read_alike_share_one_element_and_nothing_else(
    monkeypatch: pytest.MonkeyPatch, warehouse: Path
) -> None:
    """The extractor normalises each distinct element of a query once: on every demo gold and
    the queries above (one alias over two derived tables), the sets and their display equal
    those of normalising every node afresh."""
    case_set = demo_cases(warehouse)  # a fresh checkout has no .t2s/warehouse.duckdb
    schemas = domain_schemas(case_set.cases, case_set.domain)
    queries = [(c.gold_sql, schemas[c.db_id]) for c in case_set.cases]
    queries += [(sql, None) for sql in SHADOWED]
    shared = [analyse_query(sql, "duckdb", schema).components for sql, schema in queries]
    _without_memo(monkeypatch)
    afresh = [analyse_query(sql, "duckdb", schema).components for sql, schema in queries]
    assert shared == afresh
    assert {"t.x > 1", "u.y > 1"} <= shared[-4].filters
    assert {"MAX(t.x)", "MAX(u.y)"} <= shared[-3].aggregations
    assert len(shared[-1].filters) == 2 and len(shared[-1].select) == 1
