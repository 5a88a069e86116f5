"""Where our EX (SPEC 8) and the official Spider/BIRD evaluators disagree, by design.

Each test runs a gold and a predicted query on a fixture database, scores them with our scorer
and with the reference restatements in ``t2s_pipeline.benchmarks.official``, and states which
agree. docs/benchmarks.md walks through the same examples.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from t2s_pipeline.benchmarks.official import bird_ex, spider_ex, spider_order_matters
from t2s_pipeline.config import ScorerSettings
from t2s_pipeline.scoring.pair import score_pair
from t2s_pipeline_tests.benchmarks.conftest import Benchmark


@dataclass(frozen=True)
class Verdicts:
    ours: bool
    spider: bool
    bird: bool
    ceilings: tuple[str, ...]


def _verdicts(db: Path, gold: str, predicted: str, **scorer: object) -> Verdicts:
    pair = score_pair(str(db), gold, predicted, "sqlite", ["main"], ScorerSettings(**scorer))
    assert pair.gold.ok and pair.candidate.ok
    reference, candidate = pair.gold.rows, pair.candidate.rows
    return Verdicts(
        ours=pair.output.exact_match,
        spider=spider_ex(reference, candidate, spider_order_matters(gold)),
        bird=bird_ex(reference, candidate),
        ceilings=tuple(pair.output.to_json()["ceilings"]),  # type: ignore[arg-type]
    )


@pytest.fixture(scope="module")
def library(bird: Benchmark) -> Path:
    return bird.db_dir / "library" / "library.sqlite"


@pytest.fixture(scope="module")
def concerts(spider: Benchmark) -> Path:
    return spider.db_dir / "concert_hall" / "concert_hall.sqlite"


def test_float_tolerance_we_round_they_compare_exactly(library: Path) -> None:
    """The average price computed in cents differs in the 15th digit: equal after rounding to
    float_decimals (6), different for both official evaluators."""
    gold = "SELECT AVG(price) FROM book"
    predicted = "SELECT SUM(price * 100) / 100 / COUNT(*) FROM book"
    assert _verdicts(library, gold, predicted) == Verdicts(True, False, False, ())
    # With 15 decimals our scorer sees the difference too.
    assert not _verdicts(library, gold, predicted, float_decimals=15).ours


def test_duplicates_count_for_us_and_spider_not_for_bird(concerts: Path) -> None:
    """France appears twice among singers over 40; BIRD's set() drops the second one."""
    gold = "SELECT country FROM singer WHERE age > 40"
    predicted = "SELECT DISTINCT country FROM singer WHERE age > 40"
    assert _verdicts(concerts, gold, predicted) == Verdicts(False, False, True, ())


def test_swapped_columns_match_for_us_and_spider_not_for_bird(concerts: Path) -> None:
    """Both we and Spider reorder columns; BIRD compares tuples as written."""
    gold = "SELECT name, age FROM singer"
    predicted = "SELECT age, name FROM singer"
    assert _verdicts(concerts, gold, predicted) == Verdicts(True, True, False, ())


def test_column_search_is_bounded_for_us_not_for_spider(concerts: Path) -> None:
    """Two columns holding the same values in different rows: finding the swap needs a search.
    With the bound at one check we stop, say no and count the ceiling; Spider keeps looking."""
    gold = "SELECT 1 AS p, 2 AS q UNION ALL SELECT 2, 3 UNION ALL SELECT 3, 1"
    predicted = "SELECT 2 AS q, 1 AS p UNION ALL SELECT 3, 2 UNION ALL SELECT 1, 3"
    assert _verdicts(concerts, gold, predicted) == Verdicts(True, True, False, ())
    bounded = _verdicts(concerts, gold, predicted, permutation_bound=1)
    assert (bounded.ours, bounded.spider, bounded.bird) == (False, True, False)
    assert "permutation_bound" in bounded.ceilings


def test_order_by_spider_and_we_compare_order_bird_does_not(concerts: Path) -> None:
    """Oldest-first asked, youngest-first given: Spider and we (``ordered_compare: auto``, the
    default) say wrong, BIRD right; with ordered_compare off we compare a multiset."""
    gold = "SELECT name FROM singer ORDER BY age DESC"
    predicted = "SELECT name FROM singer ORDER BY age"
    assert _verdicts(concerts, gold, predicted) == Verdicts(False, False, True, ())
    assert _verdicts(concerts, gold, predicted, ordered_compare=False).ours


def test_order_by_inside_a_subquery_spider_still_compares_order(concerts: Path) -> None:
    """Spider looks for ORDER BY anywhere in the gold text; ``auto`` only for a top-level one,
    so the rows compare as a multiset."""
    gold = (
        "SELECT name FROM singer WHERE age > (SELECT age FROM singer ORDER BY age LIMIT 1) ORDER BY"
    )
    gold = gold.removesuffix(" ORDER BY")
    predicted = (
        "SELECT name FROM singer WHERE age > (SELECT min(age) FROM singer) ORDER BY name DESC"
    )
    verdicts = _verdicts(concerts, gold, predicted)
    assert (verdicts.ours, verdicts.spider, verdicts.bird) == (True, False, True)


def test_empty_results_with_different_widths(concerts: Path) -> None:
    """Two empty results: Spider and BIRD call any two equal; we also need the same columns."""
    gold = "SELECT name FROM singer WHERE age > 99"
    predicted = "SELECT name, age FROM singer WHERE age > 99"
    verdicts = _verdicts(concerts, gold, predicted)
    assert (verdicts.ours, verdicts.spider, verdicts.bird) == (False, True, True)
    same_width = _verdicts(concerts, gold, "SELECT country FROM singer WHERE age > 99")
    assert same_width.ours and "empty_vs_empty" in same_width.ceilings


def test_all_agree_on_a_plainly_right_and_a_plainly_wrong_answer(concerts: Path) -> None:
    """The differences are at the edges: on ordinary answers the three verdicts are one."""
    gold = "SELECT name FROM singer WHERE country = 'France'"
    right = "SELECT s.name FROM singer AS s WHERE s.country IN ('France')"
    wrong = "SELECT name FROM singer WHERE country = 'Portugal'"
    assert _verdicts(concerts, gold, right) == Verdicts(True, True, True, ())
    assert _verdicts(concerts, gold, wrong) == Verdicts(False, False, False, ())
