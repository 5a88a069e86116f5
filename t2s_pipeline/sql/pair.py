"""Preparing a gold and a candidate query identically before they are compared (SPEC 7)."""

from __future__ import annotations

from dataclasses import dataclass

from t2s_pipeline.errors import SqlAnalysisError
from t2s_pipeline.execution.registry import engine_speaking
from t2s_pipeline.sql.analysis import QueryAnalysis, analyse_tree
from t2s_pipeline.sql.clean import CleaningRules, clean_candidate
from t2s_pipeline.sql.parse import parse_one_query
from t2s_pipeline.sql.schema import Schema
from t2s_pipeline.sql.sqlite_literals import literal_double_quotes


@dataclass(frozen=True)
class PairAnalysis:
    """Gold and cleaned candidate; ``candidate`` is None and ``candidate_error`` says why when
    the candidate does not parse."""

    gold: QueryAnalysis
    candidate: QueryAnalysis | None
    candidate_error: str | None


def analyse_pair(
    gold_sql: str,
    candidate_sql: str,
    dialect: str,
    schema: Schema | None,
    rules: CleaningRules | None = None,
) -> PairAnalysis:
    """Parse both sides the same way, clean the candidate, analyse both.

    A gold query that does not parse raises SqlAnalysisError; a candidate that does not parse
    is a result, not an error.

    >>> pair = analyse_pair("SELECT 1 AS x", "SELECT 1 AS x LIMIT 1000", "duckdb", None)
    >>> pair.candidate is not None and pair.candidate.has_limit
    False
    """
    speaker = engine_speaking(dialect)
    if speaker is not None and speaker.bare_double_quotes and schema is not None:
        # SQLite reads "France" as a string when no column has that name; say so explicitly.
        columns = frozenset(
            column.lower()
            for tables in schema.tables.values()
            for table in tables.values()
            for column in table
        )
        gold_sql = literal_double_quotes(gold_sql, columns)
        candidate_sql = literal_double_quotes(candidate_sql, columns)
    gold_tree = parse_one_query(gold_sql, dialect)
    gold = analyse_tree(gold_tree, dialect, schema, gold_sql)
    try:
        candidate_tree = parse_one_query(candidate_sql, dialect)
    except SqlAnalysisError as error:
        return PairAnalysis(gold=gold, candidate=None, candidate_error=str(error))
    cleaned = clean_candidate(candidate_tree, gold_tree, rules)
    candidate = analyse_tree(cleaned, dialect, schema, candidate_sql)
    return PairAnalysis(gold=gold, candidate=candidate, candidate_error=None)
