"""Deterministic diagnosis (SPEC 11): one primary category, and the findings behind it.

Every category that holds is kept; the primary one is the first that holds in the precedence
``harness_bug``, ``correct``, ``no_result``, ``wrong_table``, ``wrong_filter``, ``wrong_grain``,
``wrong_metric``, ``presentation`` (the most upstream fix first). A category holds when a
finding supports it (a component element missing, extra or changed; a required table not
offered; a presentation difference) or, failing any structural finding, when the shape of the
numbers points at it (rows counted differently, cells unbalanced). When the data is right but
shown differently, structural differences changed nothing and the item is ``presentation``.
Each rule reads only stored figures and the facts the diagnose stage asked the data
(``t2s_pipeline.scoring.facts``: whether an extra join changes the rows, whether differing
conditions select the same rows), so the same numbers and data give the same diagnosis.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from t2s_pipeline.scoring.findings import NOTE, Finding

CATEGORIES: tuple[str, ...] = (
    "correct",
    "presentation",
    "wrong_table",
    "no_result",
    "wrong_filter",
    "wrong_grain",
    "wrong_metric",
    "harness_bug",
    "ambiguous_question",
)
PRECEDENCE: tuple[str, ...] = (
    "harness_bug",
    "correct",
    "no_result",
    "wrong_table",
    "wrong_filter",
    "wrong_grain",
    "wrong_metric",
    "presentation",
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
    findings: tuple[Finding, ...] = ()
    """Structural findings (components, retrieval), each naming the category it supports."""
    presentation: tuple[str, ...] = ()
    """What differs only in presentation; non-empty means the data is right."""
    failure: str | None = None
    """Why the candidate (or the gold) gave no result, for the finding."""
    snapshot_only: str | None = None
    """Exact match on the snapshot, but not on a neighbour of the case's test suite: the
    evidence (neighbour and rows), said as the finding "matches on the snapshot only"."""


@dataclass(frozen=True)
class Diagnosis:
    category: str
    rule: str
    categories: tuple[str, ...] = ()
    """Every category that holds, in precedence order (the primary first)."""
    findings: tuple[Finding, ...] = ()


def _row_ratio_differs(e: ItemEvidence) -> bool:
    return e.reference_rows is not None and e.candidate_rows not in (None, e.reference_rows)


def _cells_unbalanced(e: ItemEvidence) -> bool:
    p, r = e.cells_precision, e.cells_recall
    return p is not None and r is not None and abs(p - r) > 1e-9


Rule = tuple[str, str, Callable[[ItemEvidence], bool]]

RULES: tuple[Rule, ...] = (
    ("harness_bug", "gold failed or scorer fault", lambda e: e.gold_failed or e.scorer_fault),
    ("correct", "exact match", lambda e: e.exact_match and not e.snapshot_only),
    ("no_result", "error, refusal or no SQL", lambda e: e.candidate_failed),
    (
        "wrong_table",
        "a required table was not offered, or the tables set differs",
        lambda e: (e.retrieval_recall is not None and e.retrieval_recall < 1.0) or e.tables_differ,
    ),
    ("wrong_filter", "filters set differs", lambda e: e.filters_differ),
    ("wrong_grain", "group_by differs", lambda e: e.group_by_differ),
    ("wrong_metric", "aggregations or select differ", lambda e: e.metric_differ),
)

# When no component or retrieval difference explains a wrong answer, the numbers' shape does.
FALLBACK_RULES: tuple[Rule, ...] = (
    ("wrong_grain", "the row count differs with the same components", _row_ratio_differs),
    ("wrong_filter", "cell recall differs from precision at the same grain", _cells_unbalanced),
    ("wrong_metric", "cells wrong at equal row counts", lambda e: True),
)


def diagnose(evidence: ItemEvidence) -> Diagnosis:
    """The primary category (first in precedence that holds), every category that holds, and
    the findings.

    >>> diagnose(ItemEvidence(False, False, True, False, 1.0, False, False, False, False,
    ...                       1.0, 1.0, 3, 3)).category
    'correct'
    """
    for category, rule, holds in RULES[:3]:
        if holds(evidence):
            found = _settled_findings(category, evidence)
            return Diagnosis(category, rule, (category,), found)
    if evidence.presentation and not evidence.snapshot_only:
        found = tuple(Finding("presentation", text) for text in evidence.presentation)
        return Diagnosis(
            "presentation", "the data is right, shown differently", ("presentation",), found
        )
    holding: dict[str, str] = {}
    for category, rule, holds in RULES[3:]:
        if category not in holding and holds(evidence):
            holding[category] = rule
    for finding in evidence.findings:
        if finding.category in PRECEDENCE:
            holding.setdefault(finding.category, "a finding supports it")
    if not holding:
        for category, rule, holds in FALLBACK_RULES:
            if holds(evidence):
                holding[category] = rule
                break
    ordered = tuple(c for c in PRECEDENCE if c in holding)
    kept = tuple(f for f in evidence.findings if f.category in holding or f.category == NOTE)
    if evidence.snapshot_only:
        kept += (Finding(ordered[0], evidence.snapshot_only),)
    return Diagnosis(ordered[0], holding[ordered[0]], ordered, kept)


def _settled_findings(category: str, evidence: ItemEvidence) -> tuple[Finding, ...]:
    if category == "correct":
        return ()
    if category == "harness_bug":
        text = "scorer fault: every output metric is 1 but exact match failed"
        if evidence.gold_failed:
            text = f"the gold query gave no result ({evidence.failure or 'failed'})"
        return (Finding(category, text),)
    return (Finding(category, f"no result: {evidence.failure or 'the candidate failed'}"),)
