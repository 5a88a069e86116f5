"""Calibration maths: agreement, Cohen's kappa and the confusion matrix against human labels,
and the mean Jaccard index of the category sets.

Rows of a confusion matrix are the human labels, columns the predicted categories. Agreement
is the share of items on the diagonal; kappa corrects it for the agreement two raters with the
same marginals would reach by chance: ``(p_o - p_e) / (1 - p_e)``. Both are undefined (None)
when nothing was compared; kappa is also undefined when chance agreement is already 1 (both
raters used one and the same category for every item). The sets compare every category each
side found to hold (a label's primary and ``also``; the diagnosis' categories): Jaccard is
``|A & B| / |A | B|`` per item, averaged over the items with both sets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from t2s_pipeline.scoring.diagnosis import CATEGORIES


@dataclass(frozen=True)
class ConfusionMatrix:
    """Counts of (human label, predicted category) pairs.

    >>> m = ConfusionMatrix.from_pairs([("wrong_table", "wrong_table"), ("wrong_grain", "wrong_filter")])
    >>> m.categories, m.n, agreement(m)
    (('wrong_table', 'wrong_filter', 'wrong_grain'), 2, 0.5)
    """

    categories: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]  # counts[label][predicted], in ``categories`` order

    @classmethod
    def from_pairs(
        cls, pairs: Iterable[tuple[str, str]], categories: Iterable[str] | None = None
    ) -> ConfusionMatrix:
        """Tally pairs; categories default to those present, in §11 order."""
        pairs = list(pairs)
        present = {c for pair in pairs for c in pair}
        order = tuple(categories) if categories is not None else _ordered(present)
        index = {c: i for i, c in enumerate(order)}
        grid = [[0] * len(order) for _ in order]
        for label, predicted in pairs:
            grid[index[label]][index[predicted]] += 1
        return cls(order, tuple(tuple(row) for row in grid))

    @property
    def n(self) -> int:
        return sum(map(sum, self.counts))

    def count(self, label: str, predicted: str) -> int:
        return self.counts[self.categories.index(label)][self.categories.index(predicted)]

    def to_json(self) -> dict[str, object]:
        return {"categories": list(self.categories), "counts": [list(r) for r in self.counts]}

    def to_markdown(self) -> str:
        """Rows: human label; columns: predicted."""
        short = [c.replace("_", " ") for c in self.categories]
        lines = ["| label \\ predicted | " + " | ".join(short) + " |"]
        lines.append("|---|" + "---|" * len(short))
        for name, row in zip(short, self.counts, strict=True):
            lines.append(f"| {name} | " + " | ".join(str(v) for v in row) + " |")
        return "\n".join(lines)


def _ordered(present: set[str]) -> tuple[str, ...]:
    known = [c for c in CATEGORIES if c in present]
    return (*known, *sorted(present - set(CATEGORIES)))


def agreement(matrix: ConfusionMatrix) -> float | None:
    """Observed agreement: the diagonal's share; None when the matrix is empty."""
    if matrix.n == 0:
        return None
    return sum(matrix.counts[i][i] for i in range(len(matrix.categories))) / matrix.n


def cohens_kappa(matrix: ConfusionMatrix) -> float | None:
    """Cohen's kappa of the two raters in the matrix.

    >>> round(cohens_kappa(ConfusionMatrix(("a", "b"), ((20, 5), (10, 15)))), 6)
    0.4
    """
    n = matrix.n
    observed = agreement(matrix)
    if observed is None:
        return None
    rows = [sum(row) for row in matrix.counts]
    columns = [sum(column) for column in zip(*matrix.counts, strict=True)]
    chance = sum(r * c for r, c in zip(rows, columns, strict=True)) / (n * n)
    if chance >= 1.0:
        return None
    return (observed - chance) / (1.0 - chance)


@dataclass(frozen=True)
class Calibration:
    """One lane (judge or deterministic diagnosis) against the human labels."""

    lane: str
    matrix: ConfusionMatrix
    agreement: float | None
    kappa: float | None
    jaccard: float | None = None  # mean Jaccard of the category sets
    jaccard_n: int = 0

    @property
    def n(self) -> int:
        return self.matrix.n

    def calibrated(self, floor: float) -> bool:
        """Trustworthy here: agreement with the labels reaches the configured floor."""
        return self.agreement is not None and self.agreement >= floor


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Shared categories over all categories of the two sets (1 when both are empty).

    >>> jaccard(frozenset({"wrong_filter", "wrong_metric"}), frozenset({"wrong_filter"}))
    0.5
    """
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def calibrate(
    lane: str,
    labels: Mapping[str, str],
    predicted: Mapping[str, str],
    label_sets: Mapping[str, frozenset[str]] | None = None,
    predicted_sets: Mapping[str, frozenset[str]] | None = None,
) -> Calibration:
    """Compare a lane's primary categories with the labels on the items both cover, and its
    category sets with the labels' sets (a set defaults to the primary category alone)."""
    shared = sorted(set(labels) & set(predicted))
    matrix = ConfusionMatrix.from_pairs((labels[i], predicted[i]) for i in shared)
    human = label_sets or {}
    lane_sets = predicted_sets or {}
    scores = [
        jaccard(human.get(i, frozenset({labels[i]})), lane_sets.get(i, frozenset({predicted[i]})))
        for i in shared
    ]
    mean = sum(scores) / len(scores) if scores else None
    return Calibration(lane, matrix, agreement(matrix), cohens_kappa(matrix), mean, len(scores))
