"""Preparing a gold and a candidate query identically before they are compared (SPEC 7)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlglot import exp

from t2s_pipeline.errors import SqlAnalysisError
from t2s_pipeline.execution.registry import engine_speaking
from t2s_pipeline.sql.analysis import QueryAnalysis, analyse_tree
from t2s_pipeline.sql.canonical import canonical_form
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
    """Parse both sides the same way, clean the candidate, analyse both (without their
    canonical forms: ``sql.canonical`` gives those).

    A gold query that does not parse raises SqlAnalysisError; a candidate that does not parse
    is a result, not an error.

    >>> pair = analyse_pair("SELECT 1 AS x", "SELECT 1 AS x LIMIT 1000", "duckdb", None)
    >>> pair.candidate is not None and pair.candidate.has_limit
    False
    """
    gold_sql, candidate_sql = (
        _as_read(gold_sql, dialect, schema),
        _as_read(candidate_sql, dialect, schema),
    )
    gold_tree = parse_one_query(gold_sql, dialect)
    gold = analyse_tree(gold_tree, dialect, schema, gold_sql, canonical=False)
    candidate, error = _candidate(gold_tree, candidate_sql, dialect, schema, rules)
    return PairAnalysis(gold=gold, candidate=candidate, candidate_error=error)


def analyse_candidate(
    gold_sql: str,
    candidate_sql: str,
    dialect: str,
    schema: Schema | None,
    rules: CleaningRules | None = None,
    gold_clauses: frozenset[str] | None = None,
) -> tuple[QueryAnalysis | None, str | None]:
    """The candidate side of :func:`analyse_pair` alone, for a gold whose analysis is known:
    the gold is parsed (the candidate is cleaned against it) but not analysed, and not even
    parsed when its ``gold_clauses`` (:attr:`QueryAnalysis.top_clauses`) are given.

    >>> candidate, error = analyse_candidate("SELECT 1 AS x", "SELECT 2 AS x LIMIT 9", "duckdb", None)
    >>> candidate is not None and candidate.has_limit, error
    (False, None)
    >>> candidate, _ = analyse_candidate("", "SELECT 2 AS x LIMIT 9", "duckdb", None,
    ...                                  gold_clauses=frozenset({"limit"}))
    >>> candidate is not None and candidate.has_limit
    True
    """
    gold: exp.Expr | frozenset[str] = (
        parse_one_query(_as_read(gold_sql, dialect, schema), dialect)
        if gold_clauses is None
        else gold_clauses
    )
    return _candidate(gold, _as_read(candidate_sql, dialect, schema), dialect, schema, rules)


def _as_read(sql: str, dialect: str, schema: Schema | None) -> str:
    """The text as the engine reads it: SQLite reads ``"France"`` as a string when no column
    has that name, so such literals are said explicitly."""
    speaker = engine_speaking(dialect)
    if speaker is None or not speaker.bare_double_quotes or schema is None:
        return sql
    columns = frozenset(
        column.lower()
        for tables in schema.tables.values()
        for table in tables.values()
        for column in table
    )
    return literal_double_quotes(sql, columns)


def _candidate(
    gold: exp.Expr | frozenset[str],
    candidate_sql: str,
    dialect: str,
    schema: Schema | None,
    rules: CleaningRules | None,
) -> tuple[QueryAnalysis | None, str | None]:
    """The cleaned candidate's analysis, or None and why it does not parse or cannot be
    analysed (sqlglot cannot qualify it: a DuckDB PIVOT statement). ``gold``: the gold's tree
    or its top-level clauses (:func:`~t2s_pipeline.sql.clean.clean_candidate`)."""
    try:
        candidate_tree = parse_one_query(candidate_sql, dialect)
    except SqlAnalysisError as error:
        return None, str(error)
    cleaned = clean_candidate(candidate_tree, gold, rules, copy=False)  # parsed here
    try:  # the tree was parsed here: qualified in place, not copied
        analysis = analyse_tree(
            cleaned, dialect, schema, candidate_sql, copy=False, canonical=False
        )
    except SqlAnalysisError as error:  # parsed but not analysable: a result, as not parsing is
        return None, str(error)
    return analysis, None


PairJob = tuple[str, str | None, str, "Schema | None", bool, "frozenset[str] | None"]
"""One pair to analyse: the gold SQL, the candidate SQL (None: the SUT gave none), the dialect,
the schema, whether the gold's analysis is known already (then only the candidate is), and the
known gold's top-level clauses (None: the gold is parsed again to clean the candidate)."""


@dataclass(frozen=True)
class Sides:
    """What :func:`analyse_sides` made: the gold's analysis (None when it was known already),
    the candidate's (None when it does not parse or there is none) and why not."""

    gold: QueryAnalysis | None
    candidate: QueryAnalysis | None
    candidate_error: str | None


def analyse_sides(job: PairJob) -> Sides | SqlAnalysisError:
    """One pair's analyses, a gold that cannot be analysed returned as a value. Light to
    import, so the fresh interpreters of ``t2s_pipeline.spread`` start quickly.

    >>> sides = analyse_sides(("SELECT 1 AS x", None, "duckdb", None, False, None))
    >>> sides.gold is not None, sides.candidate, sides.candidate_error
    (True, None, 'no SQL')
    """
    gold_sql, candidate_sql, dialect, schema, gold_known, gold_clauses = job
    try:
        if gold_known:
            if not candidate_sql:
                return Sides(None, None, "no SQL")
            candidate, error = analyse_candidate(
                gold_sql, candidate_sql, dialect, schema, gold_clauses=gold_clauses
            )
            return Sides(None, candidate, error)
        pair = analyse_pair(gold_sql, candidate_sql or "SELECT 1", dialect, schema)
    except SqlAnalysisError as error:
        return error
    if not candidate_sql:
        return Sides(pair.gold, None, "no SQL")
    return Sides(pair.gold, pair.candidate, pair.candidate_error)


@dataclass(frozen=True)
class GoldReading:
    """A gold query read once for every stage that needs it: its analysis as
    :func:`analyse_pair` makes it (None, and why, when it cannot be analysed) and its
    canonical form as :func:`~t2s_pipeline.sql.canonical.canonical_form` makes it (None when it
    cannot be canonicalised: the case has no twins)."""

    analysis: QueryAnalysis | None
    canonical: str | None
    error: str | None = None


def read_gold(job: tuple[str, str, Schema | None]) -> GoldReading:
    """One gold query's reading (``job``: its SQL, the dialect, the schema), from one parse
    and one qualification when the engine reads the text as written. Light to import, like
    :func:`analyse_sides`.

    >>> reading = read_gold(("SELECT o.id FROM orders o", "duckdb", None))
    >>> reading.canonical == canonical_form("SELECT o.id FROM orders o", "duckdb", None)
    True
    >>> sorted(reading.analysis.required_tables)
    ['orders']
    """
    gold_sql, dialect, schema = job
    as_read = _as_read(gold_sql, dialect, schema)
    try:
        tree = parse_one_query(as_read, dialect)
        # parsed here and read nowhere else: qualified in place, not copied
        analysis = analyse_tree(
            tree, dialect, schema, as_read, copy=False, canonical=as_read == gold_sql
        )
    except SqlAnalysisError as error:
        return GoldReading(None, _canonical_or_none(gold_sql, dialect, schema), str(error))
    if analysis.canonical is not None:
        return GoldReading(replace(analysis, canonical=None), analysis.canonical)
    return GoldReading(analysis, _canonical_or_none(gold_sql, dialect, schema))


def _canonical_or_none(sql: str, dialect: str, schema: Schema | None) -> str | None:
    try:
        return canonical_form(sql, dialect, schema)
    except SqlAnalysisError:
        return None
