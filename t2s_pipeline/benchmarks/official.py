"""The official evaluators' execution match, restated to reconcile our EX with theirs.

These mimic the published definitions on two lists of result rows; they are not used to score
runs (SPEC 8 defines our EX) but explain, item by item, why a published number differs.

- **Spider** (the test-suite evaluation): equal when both are empty; otherwise the same number
  of rows and columns, and some reordering of the prediction's columns makes the rows equal —
  as sequences when the gold query has an ORDER BY anywhere, else as multisets. Values compare
  with Python's ``==`` (so ``1 == 1.0``, but ``0.1 + 0.2 != 0.3``).
- **BIRD**: ``set(predicted rows) == set(gold rows)``: duplicates and row order ignored, column
  order significant, values exact.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import permutations
from typing import Any

from sqlglot import exp

from t2s_pipeline.sql.parse import parse_one_query

Rows = Sequence[tuple[Any, ...]]


def bird_ex(gold: Rows, predicted: Rows) -> bool:
    """BIRD's execution match: the two sets of row tuples are equal.

    >>> bird_ex([(1, "a"), (1, "a")], [(1, "a")])
    True
    >>> bird_ex([(1, "a")], [("a", 1)])
    False
    """
    return set(predicted) == set(gold)


def spider_order_matters(gold_sql: str, dialect: str = "sqlite") -> bool:
    """Spider compares row order when the gold query has an ORDER BY anywhere in it.

    >>> spider_order_matters("SELECT name FROM singer ORDER BY age")
    True
    """
    return parse_one_query(gold_sql, dialect).find(exp.Order) is not None


def spider_ex(gold: Rows, predicted: Rows, order_matters: bool) -> bool:
    """Spider's execution match (test-suite evaluation) on two row lists.

    >>> spider_ex([(1, "a"), (2, "b")], [("b", 2), ("a", 1)], order_matters=False)
    True
    >>> spider_ex([(1,), (2,)], [(2,), (1,)], order_matters=True)
    False
    """
    if not gold and not predicted:
        return True
    if len(gold) != len(predicted) or len(gold[0]) != len(predicted[0]):
        return False
    for order in _column_orders(gold, predicted):
        reordered = [tuple(row[j] for j in order) for row in predicted]
        if order_matters and list(gold) == reordered:
            return True
        if not order_matters and Counter(gold) == Counter(reordered):
            return True
    return False


def _column_orders(gold: Rows, predicted: Rows) -> Iterator[tuple[int, ...]]:
    """Orders of the prediction's columns under which each column's value set matches."""
    width = len(gold[0])
    gold_sets = [{row[i] for row in gold} for i in range(width)]
    predicted_sets = [{row[j] for row in predicted} for j in range(width)]
    for order in permutations(range(width)):
        if all(gold_sets[i] == predicted_sets[j] for i, j in enumerate(order)):
            yield order
