"""Pairing output columns and scoring them (SPEC 6.1, 6.2).

Columns pair by proof first (same base-table origin, then identical qualified expression), then
by overlap of their distinct value sets, best first. Names and positions never pair columns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from t2s_pipeline.results import Column
from t2s_pipeline.scoring.encoding import Crosswalk, kinds_may_overlap


@dataclass(frozen=True)
class Pair:
    """A candidate column paired with a reference column, with its value-overlap P and R."""

    candidate: int
    reference: int
    by: str
    precision: float
    recall: float

    @property
    def strength(self) -> float:
        """``min(P, R)``: how well the weaker direction of the overlap holds."""
        return min(self.precision, self.recall)


def pair_columns(
    reference: Sequence[Column],
    candidate: Sequence[Column],
    crosswalk: Crosswalk,
    tau: float = 0.25,
) -> tuple[Pair, ...]:
    """Pair columns by origin, then expression, then values; sorted by reference position.

    Every pair carries its value overlap, origin pairs included.
    """
    matched: list[tuple[int, int, str]] = []
    for attribute in (_origin, _expression):
        matched += _pair_by_proof(reference, candidate, matched, attribute)
    proof = [_with_overlap(crosswalk, c, r, by) for c, r, by in matched]
    values = _pair_by_values(
        crosswalk, {p.candidate for p in proof}, {p.reference for p in proof}, tau
    )
    return tuple(sorted(proof + values, key=lambda p: p.reference))


def column_scores(
    pairs: Sequence[Pair], n_candidate: int, n_reference: int
) -> tuple[float | None, float | None]:
    """Column precision and recall; denominators are all columns on each side (None if 0).

    >>> column_scores([Pair(0, 0, "values", 0.5, 1.0)], 2, 1)
    (0.25, 1.0)
    """
    precision = sum(p.precision for p in pairs) / n_candidate if n_candidate else None
    recall = sum(p.recall for p in pairs) / n_reference if n_reference else None
    return precision, recall


def _origin(column: Column) -> str | None:
    return column.origin


def _expression(column: Column) -> str | None:
    return column.expression


def _pair_by_proof(
    reference: Sequence[Column],
    candidate: Sequence[Column],
    taken: list[tuple[int, int, str]],
    attribute: Callable[[Column], str | None],
) -> list[tuple[int, int, str]]:
    """One-to-one in order: the k-th candidate with a proof pairs with the k-th reference."""
    used_c = {c for c, _, _ in taken}
    used_r = {r for _, r, _ in taken}
    waiting: dict[str, list[int]] = {}
    for r, column in enumerate(reference):
        proof = attribute(column)
        if proof is not None and r not in used_r:
            waiting.setdefault(proof, []).append(r)
    found: list[tuple[int, int, str]] = []
    for c, column in enumerate(candidate):
        proof = attribute(column)
        if proof is not None and c not in used_c and waiting.get(proof):
            found.append((c, waiting[proof].pop(0), "origin"))
    return found


def _with_overlap(crosswalk: Crosswalk, c: int, r: int, by: str) -> Pair:
    shared = crosswalk.overlap(c, r)
    d_c = crosswalk.candidate.columns[c].distinct
    d_r = crosswalk.reference.columns[r].distinct
    return Pair(c, r, by, shared / d_c if d_c else 0.0, shared / d_r if d_r else 0.0)


def _pair_by_values(
    crosswalk: Crosswalk, used_c: set[int], used_r: set[int], tau: float
) -> list[Pair]:
    """Greedy best-first by min(P, R), ties by F1, reference position, candidate position."""
    options = sorted(
        _value_options(crosswalk, used_c, used_r, tau),
        key=lambda p: (-p.strength, -_f1(p), p.reference, p.candidate),
    )
    accepted: list[Pair] = []
    for option in options:
        if option.candidate not in used_c and option.reference not in used_r:
            accepted.append(option)
            used_c.add(option.candidate)
            used_r.add(option.reference)
    return accepted


def _value_options(
    crosswalk: Crosswalk, used_c: set[int], used_r: set[int], tau: float
) -> list[Pair]:
    """Every admissible value pair, skipping ones whose overlap could not reach tau."""
    reference, candidate = crosswalk.reference, crosswalk.candidate
    options: list[Pair] = []
    for r, ref in enumerate(reference.columns):
        # A constant discriminates nothing, unless the whole answer is one row (a scalar).
        if r in used_r or (reference.n_rows >= 2 and ref.distinct < 2):
            continue
        for c, cand in enumerate(candidate.columns):
            if c in used_c or not _may_reach(cand.distinct, ref.distinct, tau):
                continue
            if tau > 0 and not kinds_may_overlap(cand.kinds, ref.kinds):
                continue
            pair = _with_overlap(crosswalk, c, r, "values")
            if pair.strength >= tau:
                options.append(pair)
    return options


def _may_reach(d_c: int, d_r: int, tau: float) -> bool:
    """min(P, R) can never exceed min(d_c, d_r) / max(d_c, d_r)."""
    if max(d_c, d_r) == 0:
        return tau <= 0
    return min(d_c, d_r) / max(d_c, d_r) >= tau


def _f1(pair: Pair) -> float:
    total = pair.precision + pair.recall
    return 2 * pair.precision * pair.recall / total if total else 0.0
