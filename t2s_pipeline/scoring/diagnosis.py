"""Deterministic diagnosis (SPEC §11): the shape of the numbers names the failure.

Rules are tried in order; the first that holds names the item's category. Each rule reads
only the families' figures, so the same numbers always give the same diagnosis.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

CATEGORIES: tuple[str, ...] = (
    "correct",
    "wrong_table",
    "no_result",
    "wrong_filter",
    "wrong_grain",
    "wrong_metric",
    "harness_bug",
    "ambiguous_question",
)


@dataclass(frozen=True)
class ItemEvidence:
    """What the diagnosis may look at for one item."""

    gold_failed: bool
    scorer_fault: bool
    exact_match: bool
    candidate_failed: bool  # agent error, refusal, no SQL, or the query did not run
    retrieval_recall: float | None
    tables_differ: bool
    filters_differ: bool
    group_by_differ: bool
    metric_differ: bool  # aggregations or select sets differ
    cells_precision: float | None
    cells_recall: float | None
    reference_rows: int | None
    candidate_rows: int | None


@dataclass(frozen=True)
class Diagnosis:
    category: str
    rule: str


def _row_ratio_differs(e: ItemEvidence) -> bool:
    return e.reference_rows is not None and e.candidate_rows not in (None, e.reference_rows)


def _cells_unbalanced(e: ItemEvidence) -> bool:
    p, r = e.cells_precision, e.cells_recall
    return p is not None and r is not None and abs(p - r) > 1e-9


Rule = tuple[str, str, Callable[[ItemEvidence], bool]]

RULES: tuple[Rule, ...] = (
    ("harness_bug", "gold failed or scorer fault", lambda e: e.gold_failed or e.scorer_fault),
    ("correct", "exact match", lambda e: e.exact_match),
    ("no_result", "error, refusal or no SQL", lambda e: e.candidate_failed),
    (
        "wrong_table",
        "a required table was not offered, or the tables set differs",
        lambda e: (e.retrieval_recall is not None and e.retrieval_recall < 1.0) or e.tables_differ,
    ),
    (
        "wrong_filter",
        "filters set differs",
        lambda e: e.filters_differ,
    ),
    (
        "wrong_grain",
        "group_by differs, or the row count differs with the same filters",
        lambda e: e.group_by_differ or _row_ratio_differs(e),
    ),
    (
        "wrong_filter",
        "cell recall differs from precision with the same grain",
        _cells_unbalanced,
    ),
    (
        "wrong_metric",
        "aggregations or select differ, or cells wrong at equal row counts",
        lambda e: True,
    ),
)


def diagnose(evidence: ItemEvidence) -> Diagnosis:
    """The first rule that holds names the category.

    >>> diagnose(ItemEvidence(False, False, True, False, 1.0, False, False, False, False,
    ...                       1.0, 1.0, 3, 3)).category
    'correct'
    """
    for category, rule, holds in RULES:
        if holds(evidence):
            return Diagnosis(category, rule)
    raise AssertionError("the last rule always holds")
