"""Parsing errors a user can act on, and cleaning that touches only what the SUT adds."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlglot import exp

from t2s_pipeline.errors import SqlAnalysisError
from t2s_pipeline.sql.analysis import analyse_query
from t2s_pipeline.sql.clean import CleaningRules, clean_candidate, top_clauses
from t2s_pipeline.sql.parse import parse_one_query


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT FROM WHERE", "cannot parse SQL as duckdb"),
        ("SELECT 1; SELECT 2", "exactly one SQL statement, found 2"),
        ("", "found 0"),
        ("DELETE FROM sales.orders", "found DELETE"),
    ],
)
def test_bad_queries_raise_readable_errors(sql: str, message: str) -> None:
    """The caller shows this message next to the item; it must say what is wrong."""
    with pytest.raises(SqlAnalysisError, match=message):
        parse_one_query(sql, "duckdb")


def test_unknown_dialect_is_named() -> None:
    """A misspelt dialect in domain.yaml must be reported as such, not as a parse error."""
    with pytest.raises(SqlAnalysisError, match="unknown SQL dialect 'duckdbb'"):
        parse_one_query("SELECT 1", "duckdbb")


def test_analyse_query_raises_on_unparseable_sql() -> None:
    """Gold SQL that does not parse is an error, never an empty analysis."""
    with pytest.raises(SqlAnalysisError):
        analyse_query("SELECT (1", "postgres", None)


@pytest.mark.parametrize(
    ("gold", "candidate", "expected"),
    [
        ("SELECT a FROM t", "SELECT a FROM t LIMIT 1000", "SELECT a FROM t"),
        ("SELECT a FROM t LIMIT 5", "SELECT a FROM t LIMIT 1000", "SELECT a FROM t LIMIT 1000"),
        ("SELECT a FROM t", "SELECT a FROM t LIMIT 10 OFFSET 20", "SELECT a FROM t"),
        (
            "SELECT a FROM t",
            "SELECT a FROM (SELECT a FROM t LIMIT 3) AS s LIMIT 1000",
            "SELECT a FROM (SELECT a FROM t LIMIT 3) AS s",
        ),
        (
            "SELECT a FROM t UNION SELECT b FROM u",
            "SELECT a FROM t UNION SELECT b FROM u LIMIT 1000",
            "SELECT a FROM t UNION SELECT b FROM u",
        ),
        ("SELECT a FROM t", "SELECT a FROM t ORDER BY a", "SELECT a FROM t ORDER BY a"),
        (
            "SELECT a FROM t ORDER BY a LIMIT 5 OFFSET 5",
            "SELECT a FROM t ORDER BY a LIMIT 1000 OFFSET 5",
            "SELECT a FROM t ORDER BY a LIMIT 1000 OFFSET 5",
        ),
        (
            "SELECT a FROM t LIMIT 5",
            "SELECT a FROM t LIMIT 5 OFFSET 5",
            "SELECT a FROM t LIMIT 5",
        ),
    ],
)
def test_candidate_loses_top_level_limit_only_when_gold_has_none(
    gold: str, candidate: str, expected: str
) -> None:
    """The serving path appends LIMIT; a gold LIMIT or an inner LIMIT is part of the answer.
    The same from the gold's tree, from its clauses and from its analysis (a known gold is
    not parsed again)."""
    gold_tree = parse_one_query(gold, "duckdb")
    for reference in (
        gold_tree,
        top_clauses(gold_tree),
        analyse_query(gold, "duckdb", None).top_clauses,
    ):
        cleaned = clean_candidate(parse_one_query(candidate, "duckdb"), reference, CleaningRules())
        assert cleaned.sql("duckdb") == expected


def _variants(gold: str) -> list[str]:
    """Candidates of ``gold`` with a top-level LIMIT, OFFSET or ORDER BY set or taken away."""
    variants = []
    for key, value in (("limit", exp.Limit(expression=exp.Literal.number(1000))),
                       ("offset", exp.Offset(expression=exp.Literal.number(3))),
                       ("order", exp.Order(expressions=[exp.Ordered(this=exp.Literal.number(1))])),
                       ("limit", None), ("order", None)):  # fmt: skip
        tree = parse_one_query(gold, "duckdb")
        tree.set(key, value)
        variants.append(tree.sql("duckdb"))
    return variants


def test_a_known_gold_cleans_its_candidates_as_a_parsed_one(warehouse: Path) -> None:
    """Every demo gold, read as the items stage reads it (its analysis kept for later runs):
    each candidate variant analysed against the known gold's clauses equals the analysis
    against the gold parsed again."""
    from t2s_pipeline.sql.pair import analyse_sides, read_gold
    from t2s_pipeline.sql.schema import domain_schemas
    from t2s_pipeline_tests.scoring.test_analysis_memo import demo_cases

    case_set = demo_cases(warehouse)  # a fresh checkout has no .t2s/warehouse.duckdb
    schemas = domain_schemas(case_set.cases, case_set.domain)
    compared = kept = 0
    for case in case_set.cases:
        schema = schemas[case.db_id]
        reading = read_gold((case.gold_sql, "duckdb", schema))
        assert reading.analysis is not None, case.id
        clauses = reading.analysis.top_clauses
        kept += bool(clauses)
        for candidate in _variants(case.gold_sql):
            known = analyse_sides((case.gold_sql, candidate, "duckdb", schema, True, clauses))
            again = analyse_sides((case.gold_sql, candidate, "duckdb", schema, True, None))
            assert not isinstance(known, SqlAnalysisError)
            assert known == again, (case.id, candidate)
            compared += 1
    assert compared >= 500 and kept >= 20  # golds with a LIMIT or ORDER BY of their own


def test_cleaning_rules_are_configurable() -> None:
    """A SUT that also adds ORDER BY by design can have it dropped; LIMIT can be kept."""
    rules = CleaningRules(drop_limit=False, drop_order_by=True)
    gold = parse_one_query("SELECT a FROM t", "duckdb")
    candidate = parse_one_query("SELECT a FROM t ORDER BY a LIMIT 5", "duckdb")
    assert clean_candidate(candidate, gold, rules).sql("duckdb") == "SELECT a FROM t LIMIT 5"


def test_cleaning_leaves_the_candidate_tree_untouched() -> None:
    """The caller may still need the raw candidate (e.g. to execute it as sent)."""
    gold = parse_one_query("SELECT a FROM t", "duckdb")
    candidate = parse_one_query("SELECT a FROM t LIMIT 5", "duckdb")
    clean_candidate(candidate, gold)
    assert candidate.sql("duckdb") == "SELECT a FROM t LIMIT 5"


def test_sqlite_double_quoted_strings_are_filters_not_columns() -> None:
    """SQLite reads "France" as a string when no column has that name; so must the analysis."""
    from t2s_pipeline.sql.pair import analyse_pair
    from t2s_pipeline.sql.schema import Schema

    schema = Schema({"main": {"singer": {"name": "TEXT", "country": "TEXT"}}}, "sqlite")
    gold = "SELECT name FROM singer WHERE country = 'France'"
    pair = analyse_pair(gold, 'SELECT name FROM singer WHERE country = "France"', "sqlite", schema)
    assert pair.candidate is not None
    assert pair.candidate.components.filters == pair.gold.components.filters
    assert not pair.candidate.components.joins


PIVOT = (
    "SELECT * FROM (PIVOT (SELECT s.region_cd, s.site_type_cd, k.on_hand_qty FROM inventory.stock"
    " AS k JOIN sales.sites AS s ON s.site_id = k.site_id) ON site_type_cd IN ('ST', 'WH') USING"
    " sum(on_hand_qty) GROUP BY region_cd) AS p ORDER BY region_cd"
)
"""A DuckDB PIVOT in FROM (as in the legitimate-SQL corpus): it parses, and sqlglot asserts
when it scopes it ("PIVOT (...) is not Selectable")."""


def test_a_query_sqlglot_cannot_scope_is_an_analysis_error_not_a_crash() -> None:
    """A gold or candidate PIVOT made the analysis raise sqlglot's AssertionError, which ended
    the whole stage's batch; now the gold cannot be analysed (a value) and the candidate is
    recorded as not analysable, like one that does not parse."""
    from t2s_pipeline.sql.pair import analyse_sides, read_gold

    reading = read_gold((PIVOT, "duckdb", None))
    assert reading.analysis is None and reading.canonical is None
    assert reading.error is not None and "cannot qualify" in reading.error
    sides = analyse_sides(("SELECT 1 AS x", PIVOT, "duckdb", None, True, None))
    assert not isinstance(sides, SqlAnalysisError)
    assert sides.candidate is None and "cannot qualify" in str(sides.candidate_error)
    whole = analyse_sides(("SELECT count(*) FROM sales.sites", PIVOT, "duckdb", None, False, None))
    assert not isinstance(whole, SqlAnalysisError) and whole.gold is not None
    assert whole.candidate is None and "cannot qualify" in str(whole.candidate_error)
