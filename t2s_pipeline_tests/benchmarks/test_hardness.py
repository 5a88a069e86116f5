"""Spider's hardness bands computed with sqlglot, checked on hand-counted queries."""

from __future__ import annotations

import json

import pytest

from t2s_pipeline.benchmarks.hardness import HardnessCounts, hardness_counts, spider_hardness
from t2s_pipeline.errors import SqlAnalysisError
from t2s_pipeline_tests.benchmarks.conftest import FIXTURES

# (query, component 1, component 2, others, band), each counted by hand from the published rule.
HAND_COUNTED = [
    ("SELECT count(*) FROM singer", 0, 0, 0, "easy"),
    ("SELECT name FROM singer WHERE country = 'France'", 1, 0, 0, "easy"),
    # two columns: others 1; ORDER BY: component 1
    ("SELECT name, age FROM singer ORDER BY age DESC", 1, 0, 1, "medium"),
    # three aggregates and three columns: others 2
    ("SELECT avg(age), min(age), max(age) FROM singer WHERE country = 'France'", 1, 0, 2, "medium"),
    ("SELECT song FROM singer ORDER BY age LIMIT 1", 2, 0, 0, "medium"),
    ("SELECT name FROM stadium WHERE id NOT IN (SELECT stadium_id FROM concert)", 1, 1, 0, "hard"),
    ("SELECT c FROM s WHERE a > 40 INTERSECT SELECT c FROM s WHERE a < 30", 1, 1, 0, "hard"),
    # WHERE + two joins: component 1 is 3
    ("SELECT c.x FROM a JOIN b ON a.i = b.i JOIN c ON b.j = c.j WHERE a.n = 'z'", 3, 0, 0, "hard"),
    # WHERE, GROUP BY, ORDER BY, LIMIT, one join: 5
    (
        "SELECT T2.name, T2.capacity FROM concert AS T1 JOIN stadium AS T2 "
        "ON T1.stadium_id = T2.stadium_id WHERE T1.year >= 2014 GROUP BY T2.stadium_id "
        "ORDER BY count(*) DESC LIMIT 1",
        5,
        0,
        1,
        "extra",
    ),
    # WHERE, OR, LIKE: 3; nested: 1; two columns and two WHERE conditions: 2
    ("SELECT a, b FROM s WHERE age > (SELECT avg(age) FROM s) OR a LIKE 'A%'", 3, 1, 2, "extra"),
    # aggregates: select 1 + order 1 = 2 (>1), columns 2, where conditions 2, group by 2: others 4
    (
        "SELECT a, count(*) FROM t WHERE x = 1 AND y = 2 GROUP BY a, b ORDER BY sum(z) DESC",
        3,
        0,
        4,
        "extra",
    ),
    # the join condition's OR and LIKE count like WHERE's
    ("SELECT a FROM t JOIN u ON t.i = u.i OR t.n LIKE u.n", 3, 0, 0, "hard"),
    # EXISTS is a nested query; a subquery in FROM is one more table unit, not nesting
    ("SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u)", 1, 1, 0, "hard"),
    ("SELECT a FROM (SELECT a FROM t) AS s JOIN u ON s.a = u.a", 1, 0, 0, "easy"),
]


@pytest.mark.parametrize(("sql", "c1", "c2", "others", "band"), HAND_COUNTED)
def test_counts_and_band_match_hand_count(
    sql: str, c1: int, c2: int, others: int, band: str
) -> None:
    """Each count, not only the band, so a wrong count cannot hide behind a right band."""
    assert hardness_counts(sql) == HardnessCounts(c1, c2, others)
    assert spider_hardness(sql) == band


def test_negated_where_condition_counts_as_an_aggregate() -> None:
    """The published script reads a NOT IN as an aggregate: with one more real aggregate the
    query has two, so 'others' rises (reproduced so bands match the official split)."""
    plain = hardness_counts("SELECT count(*) FROM t WHERE a IN (SELECT a FROM u)")
    negated = hardness_counts("SELECT count(*) FROM t WHERE a NOT IN (SELECT a FROM u)")
    assert (plain.others, negated.others) == (0, 1)


def test_having_connective_counts_as_aggregate_but_its_aggregates_do_not() -> None:
    """HAVING count(*) > 1 adds no aggregate; an AND between two HAVING conditions adds one."""
    one = hardness_counts("SELECT a, count(*) FROM t GROUP BY a HAVING count(*) > 1")
    two = hardness_counts("SELECT a, count(*) FROM t GROUP BY a HAVING count(*) > 1 AND sum(b) < 9")
    assert (one.others, two.others) == (1, 2)


def test_is_not_null_is_not_a_negation() -> None:
    assert hardness_counts("SELECT count(*) FROM t WHERE a IS NOT NULL").others == 0


@pytest.mark.parametrize(
    "counts",
    [(c1, c2, o) for c1 in range(6) for c2 in range(3) for o in range(5)],
)
def test_every_count_triple_gets_exactly_one_band(counts: tuple[int, int, int]) -> None:
    """The decision table is total: no count combination falls through."""
    band = HardnessCounts(*counts).band
    assert band in ("easy", "medium", "hard", "extra")
    if counts[1] >= 2:
        assert band == "extra"


def test_fixture_bands_are_the_hand_checked_ones() -> None:
    """The Spider fixture's expected bands were assigned by hand before running the code."""
    questions = json.loads((FIXTURES / "spider" / "dev.json").read_text())
    expected = json.loads((FIXTURES / "spider" / "expected.json").read_text())["bands"]
    assert [spider_hardness(q["query"]) for q in questions] == expected


def test_unparseable_query_raises() -> None:
    with pytest.raises(SqlAnalysisError):
        spider_hardness("SELECT FROM WHERE")
