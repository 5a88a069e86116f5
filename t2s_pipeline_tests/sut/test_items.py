"""Items: one per (case, phrasing), each excluding its case and the case's twins."""

from __future__ import annotations

import pytest

from t2s_pipeline.errors import SutError
from t2s_pipeline.sut.client import build_items
from t2s_pipeline_tests.agent.sample import TWINS, sample_case_set


def test_every_phrasing_is_an_item_main_first() -> None:
    """Phrasing 0 is the main question; item ids are <case_id>#<phrasing>."""
    case_set = sample_case_set()
    items = build_items(case_set, TWINS)
    assert len(items) == sum(len(c.questions) for c in case_set.cases)
    first = case_set.cases[0]
    assert [(i.item_id, i.question) for i in items[:3]] == [
        (f"{first.id}#{n}", q) for n, q in enumerate(first.questions)
    ]


def test_exclusions_are_the_case_and_its_twins() -> None:
    """Leave-one-out (SPEC section 4): the case itself and every twin, sorted."""
    items = {i.item_id: i for i in build_items(sample_case_set(), TWINS)}
    assert items["orders-count#1"].exclude == ("orders-count", "orders-total")
    assert items["invoice-net#0"].exclude == ("invoice-net",)


def test_a_case_missing_from_the_twin_map_still_excludes_itself() -> None:
    """An incomplete twin map never lets a case retrieve itself."""
    items = build_items(sample_case_set(), {})
    assert all(i.exclude == (i.case_id,) for i in items)


def test_without_isolation_nothing_is_excluded() -> None:
    """isolate=False is the leaky control run."""
    assert all(i.exclude == () for i in build_items(sample_case_set(), TWINS, isolate=False))


def test_main_phrasing_only() -> None:
    """phrasings="main" sends each case once."""
    case_set = sample_case_set()
    items = build_items(case_set, TWINS, phrasings="main")
    assert [i.item_id for i in items] == [f"{c.id}#0" for c in case_set.cases]


def test_unknown_phrasing_choice_is_a_configuration_error() -> None:
    """Only "all" and "main" exist."""
    with pytest.raises(SutError, match="phrasings"):
        build_items(sample_case_set(), TWINS, phrasings="first")
