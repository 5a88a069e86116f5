"""Findings (SPEC 11): each concrete difference between the candidate and the reference.

A finding names the category it supports and what differs, in the words a reader acts on:
``missing filter sales.orders.status_cd = 'delivered'``, ``aggregation avg(x) where the
reference has sum(x)``, ``required table finance.payments not offered``. They are read from
the component sets both sides were reduced to (section 7) and the retrieval trace; a missing
and an extra element over the same columns are reported as one changed element.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError


@dataclass(frozen=True)
class Finding:
    """One difference and the category it supports."""

    category: str
    text: str


Sets = Mapping[str, Sequence[str]]

# Component set -> (category, the words for one element).
_SETS: tuple[tuple[str, str, str], ...] = (
    ("tables", "wrong_table", "table"),
    ("filters", "wrong_filter", "filter"),
    ("group_by", "wrong_grain", "group-by"),
    ("limit", "wrong_grain", "LIMIT"),
    ("aggregations", "wrong_metric", "aggregation"),
)


def component_findings(
    gold: Sets,
    candidate: Sets,
    display: Mapping[str, str] | None = None,
) -> list[Finding]:
    """Differences between the two sides' component sets, one finding each.

    ``display`` maps a (normalised) element to the text as written, for the reader.

    >>> gold = {"filters": ["o.status = 'delivered'", "o.year = 2024"], "tables": ["o"]}
    >>> cand = {"filters": ["o.status = 'placed'", "o.year = 2024"], "tables": ["o", "c"]}
    >>> [f.text for f in component_findings(gold, cand)]
    ['extra table c', "filter o.status = 'placed' where the reference has o.status = 'delivered'"]
    """
    shown = display or {}
    found: list[Finding] = []
    for name, category, noun in _SETS:
        missing, extra = _difference(gold.get(name, ()), candidate.get(name, ()))
        found += (Finding(category, text) for text in _texts(noun, missing, extra, shown))
    if not any(f.category == "wrong_metric" for f in found):
        missing, extra = _difference(gold.get("select", ()), candidate.get("select", ()))
        found += (
            Finding("wrong_metric", text)
            for text in _texts("output expression", missing, extra, shown)
        )
    if gold.get("limit"):
        missing, extra = _difference(gold.get("order_by", ()), candidate.get("order_by", ()))
        found += (
            Finding("wrong_grain", text) for text in _texts("ORDER BY", missing, extra, shown)
        )
    return found


def retrieval_findings(not_offered: Sequence[str]) -> list[Finding]:
    """A required table the SUT's retriever did not offer.

    >>> retrieval_findings(["finance.payments"])[0].text
    'required table finance.payments not offered'
    """
    return [Finding("wrong_table", f"required table {t} not offered") for t in not_offered]


def _difference(gold: Sequence[str], candidate: Sequence[str]) -> tuple[list[str], list[str]]:
    gold_set, candidate_set = set(gold), set(candidate)
    return sorted(gold_set - candidate_set), sorted(candidate_set - gold_set)


def _texts(
    noun: str, missing: list[str], extra: list[str], shown: Mapping[str, str]
) -> Iterator[str]:
    """``X where the reference has Y`` for a missing and an extra element over the same columns
    (one each), else ``missing``/``extra`` one by one."""
    extra_left = list(extra)
    for element in missing:
        partner = _partner(element, extra_left)
        if partner is not None:
            extra_left.remove(partner)
            yield f"{noun} {_show(partner, shown)} where the reference has {_show(element, shown)}"
        else:
            yield f"missing {noun} {_show(element, shown)}"
    for element in extra_left:
        yield f"extra {noun} {_show(element, shown)}"


def _show(element: str, shown: Mapping[str, str]) -> str:
    return shown.get(element, element)


def _partner(element: str, candidates: list[str]) -> str | None:
    """The one candidate element over exactly the same columns, if there is exactly one."""
    columns = _columns(element)
    if not columns:
        return None
    same = [c for c in candidates if _columns(c) == columns]
    return same[0] if len(same) == 1 else None


def _columns(element: str) -> frozenset[str]:
    try:
        tree = sqlglot.parse_one(element)
    except SqlglotError:
        return frozenset()
    return frozenset(column.sql() for column in tree.find_all(exp.Column))
