"""Component family (SPEC section 7): which SQL parts are missing or extra.

Each query is reduced to sets of canonical strings (built by ``t2s_pipeline.sql.components``);
here every set gets a precision and a recall, never folded into one number.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

COMPONENT_NAMES: tuple[str, ...] = (
    "select",
    "tables",
    "joins",
    "filters",
    "group_by",
    "aggregations",
    "order_by",
    "limit",
)


@dataclass(frozen=True)
class ComponentSets:
    """The parts of one prepared query, as canonical strings: each element is the normal form
    of its meaning (SPEC 7); ``display`` maps an element to the text as written, where the two
    differ, for the reader. ``display`` takes no part in comparisons.

    >>> ComponentSets(tables=frozenset({"sales.orders"})).tables
    frozenset({'sales.orders'})
    """

    select: frozenset[str] = frozenset()
    tables: frozenset[str] = frozenset()
    joins: frozenset[str] = frozenset()
    filters: frozenset[str] = frozenset()
    group_by: frozenset[str] = frozenset()
    aggregations: frozenset[str] = frozenset()
    order_by: frozenset[str] = frozenset()
    limit: frozenset[str] = frozenset()
    display: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class PR:
    """Precision and recall of one set; None where that side's set is empty."""

    precision: float | None
    recall: float | None

    def to_json(self) -> dict[str, float | None]:
        """``{"precision": ..., "recall": ...}`` as SPEC section 15 prints it."""
        return {"precision": self.precision, "recall": self.recall}


@dataclass(frozen=True)
class ComponentScores:
    """One PR per component set."""

    select: PR
    tables: PR
    joins: PR
    filters: PR
    group_by: PR
    aggregations: PR
    order_by: PR
    limit: PR

    def to_json(self) -> dict[str, dict[str, float | None]]:
        """The ``component`` object of ``t2s score --json``.

        >>> score_components(ComponentSets(), ComponentSets()).to_json()["select"]
        {'precision': None, 'recall': None}
        """
        return {f.name: getattr(self, f.name).to_json() for f in fields(self)}


def score_pr(gold: frozenset[str], candidate: frozenset[str]) -> PR:
    """Set precision and recall, each None when its denominator is empty.

    >>> score_pr(frozenset({"a", "b"}), frozenset({"a", "c", "d"}))
    PR(precision=0.3333333333333333, recall=0.5)
    """
    common = len(gold & candidate)
    return PR(
        precision=common / len(candidate) if candidate else None,
        recall=common / len(gold) if gold else None,
    )


def score_components(gold: ComponentSets, candidate: ComponentSets | None) -> ComponentScores:
    """Precision and recall per set; a candidate that did not parse counts as all-empty.

    >>> gold = ComponentSets(tables=frozenset({"sales.orders"}))
    >>> score_components(gold, None).tables
    PR(precision=None, recall=0.0)
    """
    prepared = candidate if candidate is not None else ComponentSets()
    scores = {
        name: score_pr(getattr(gold, name), getattr(prepared, name)) for name in COMPONENT_NAMES
    }
    return ComponentScores(**scores)
