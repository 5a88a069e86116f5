"""Row order under ``ordered_compare: auto`` (SPEC 8): a candidate is held to the order its own
query fixes, so the verdict does not depend on the order an engine happened to return.

The cases come from the DuckDB/MariaDB replay (bench/engines.py), where 5 of 381 items got
another EX on the other engine only because of rows in no fixed order (4 grouped answers without
ORDER BY, and one tie the gold breaks and the answer does not)."""

from __future__ import annotations

import itertools

import pytest

from t2s_pipeline.results import ResultSet
from t2s_pipeline.scoring.ordering import RowOrder
from t2s_pipeline.scoring.output import OutputSettings, score_output
from t2s_pipeline.scoring.presentation import ORDER_FINDING
from t2s_pipeline.sql.analysis import order_keys
from t2s_pipeline.sql.parse import parse_one_query

GOLD = [["Electrical", 7.54], ["Plumbing", 7.52], ["Safety", 7.55], ["Tools", 7.53]]


def _result(rows: list[list[object]]) -> ResultSet:
    return ResultSet.from_names(["category", "avg_discount"], rows)


def _keys(sql: str) -> tuple[int, ...] | None:
    return order_keys(parse_one_query(sql, "duckdb"))


def _score(reference: list[list[object]], candidate: list[list[object]], order: RowOrder):
    return score_output(
        _result(reference), _result(candidate), reference_ordered=True, row_order=order
    )


@pytest.mark.parametrize("candidate", list(itertools.permutations(GOLD)))
def test_a_candidate_without_order_by_never_matches_an_ordered_gold_by_luck(candidate):
    # Gold: ... ORDER BY category; the candidate has no ORDER BY. MariaDB returned its rows
    # sorted (its GROUP BY sorts), DuckDB in hash order: the verdict must not depend on it.
    order = RowOrder(reference=(0,), candidate=())
    score = _score(GOLD, [list(r) for r in candidate], order)
    assert score.exact_match is False
    assert ORDER_FINDING in score.presentation


def test_one_row_has_no_order_to_get_wrong():
    order = RowOrder(reference=(0,), candidate=())
    assert _score(GOLD[:1], GOLD[:1], order).exact_match is True
    assert _score([["a", 1]] * 3, [["a", 1]] * 3, order).exact_match is True


FR_NL = [["FR", 91], ["NL", 91], ["IT", 85]]
NL_FR = [["NL", 91], ["FR", 91], ["IT", 85]]


@pytest.mark.parametrize("candidate", [FR_NL, NL_FR])
def test_a_tie_the_reference_breaks_and_the_candidate_does_not_fails_whatever_came_first(
    candidate,
):
    # Gold ORDER BY n DESC, country (FR before NL); candidate ORDER BY COUNT(*) DESC: which of
    # FR and NL comes first is luck, so neither order may decide the verdict. The data is
    # right: the diagnosis says the rows are in another order.
    order = RowOrder(reference=(1, 0), candidate=(1,))
    score = _score(FR_NL, candidate, order)
    assert score.exact_match is False
    assert ORDER_FINDING in score.presentation


@pytest.mark.parametrize("candidate", [FR_NL, NL_FR])
def test_rows_tied_on_both_sides_keys_may_come_in_either_order(candidate):
    order = RowOrder(reference=(1,), candidate=(1,))
    assert _score(FR_NL, candidate, order).exact_match is True


@pytest.mark.parametrize("reference", [FR_NL, NL_FR])
def test_rows_tied_on_the_golds_keys_may_come_in_either_order(reference):
    order = RowOrder(reference=(1,), candidate=(1, 0))
    assert _score(reference, FR_NL, order).exact_match is True


def test_a_candidate_tie_over_identical_rows_needs_no_order():
    rows = [["FR", 91], ["FR", 91], ["IT", 85]]
    assert _score(rows, rows, RowOrder(reference=(1, 0), candidate=(1,))).exact_match is True


def test_an_order_the_candidate_does_fix_is_still_held_to():
    order = RowOrder(reference=(1, 0), candidate=(1,))
    ascending = [["IT", 85], ["FR", 91], ["NL", 91]]
    score = _score(FR_NL, ascending, order)
    assert score.exact_match is False
    assert ORDER_FINDING in score.presentation


def test_the_candidates_unknown_keys_are_held_to_the_golds_ties_only():
    order = RowOrder(reference=(1,), candidate=None)
    assert _score(FR_NL, NL_FR, order).exact_match is True


def test_ties_do_not_excuse_other_rows():
    order = RowOrder(reference=(1,), candidate=(1,))
    assert _score(FR_NL, [["FR", 91], ["DE", 91], ["IT", 85]], order).exact_match is False


def test_keys_outside_the_output_compare_the_rows_as_returned():
    order = RowOrder(reference=None, candidate=None)
    assert _score(FR_NL, FR_NL, order).exact_match is True
    assert _score(FR_NL, NL_FR, order).exact_match is False


def test_forced_order_compares_the_rows_as_returned():
    forced = OutputSettings(ordered_compare=True)
    order = RowOrder(reference=(0,), candidate=())
    score = score_output(_result(GOLD), _result(GOLD), forced, row_order=order)
    assert score.exact_match is True


def test_an_unordered_gold_ignores_order_whatever_the_candidate_does():
    order = RowOrder(reference=(), candidate=())
    score = score_output(_result(GOLD), _result(GOLD[::-1]), row_order=order)
    assert score.exact_match is True


@pytest.mark.parametrize(
    ("sql", "keys"),
    [
        ("SELECT a FROM t", ()),
        ("SELECT a, COUNT(*) AS n FROM t GROUP BY a ORDER BY COUNT(*) DESC", (1,)),
        ("SELECT a, COUNT(*) AS n FROM t GROUP BY a ORDER BY n DESC, a", (1, 0)),
        ("SELECT a, b FROM t ORDER BY 2, 1", (1, 0)),
        ("SELECT t.a AS x FROM t ORDER BY t.a", (0,)),
        ("SELECT a FROM t UNION SELECT b FROM u ORDER BY 1", (0,)),
        ("SELECT a FROM t ORDER BY b", None),
        ("SELECT * FROM t ORDER BY a", None),
        ("SELECT a FROM (SELECT a FROM t ORDER BY a) AS s", ()),
        ("SELECT a FROM t ORDER BY 3", None),
    ],
)
def test_order_keys_are_the_output_columns_the_outermost_order_by_sorts_by(sql, keys):
    assert _keys(sql) == keys
