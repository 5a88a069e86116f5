"""Choosing the row key (SPEC 6.3): the one or two paired columns that best identify rows.

Selectivity is ``distinct key values / reference rows``. Ties: higher minimum ``min(P, R)``
over the key's pairs, then fewer columns, then earlier reference positions. Two-column keys
whose best possible outcome cannot beat the current best are never counted, which keeps the
search cheap on wide results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from t2s_pipeline.scoring.columns import Pair
from t2s_pipeline.scoring.encoding import EncodedSide


@dataclass(frozen=True)
class Key:
    """The chosen row key: positions in the pair list, and how many distinct values it has."""

    pairs: tuple[int, ...]
    distinct: int
    strength: float
    reference_columns: tuple[int, ...]

    def selectivity(self, reference_rows: int) -> float:
        """Distinct key values per reference row."""
        return self.distinct / reference_rows

    def rank(self) -> tuple[int, float, int, tuple[int, ...]]:
        """Smaller is better, in the order of the SPEC 6.3 tie-breaks."""
        return (-self.distinct, -self.strength, len(self.pairs), self.reference_columns)


def choose_key(pairs: Sequence[Pair], reference: EncodedSide) -> Key | None:
    """The best key over all subsets of one or two pairs; None when nothing is paired."""
    singles = [_key(reference, pairs, (i,)) for i in range(len(pairs))]
    if not singles:
        return None
    best = min(singles, key=Key.rank)
    for doubles in sorted(_optimistic_doubles(pairs, reference), key=Key.rank):
        if doubles.rank() >= best.rank():
            break  # sorted by optimistic rank: nothing later can win either
        actual = _key(reference, pairs, doubles.pairs)
        if actual.rank() < best.rank():
            best = actual
    return best


def _optimistic_doubles(pairs: Sequence[Pair], reference: EncodedSide) -> list[Key]:
    """Two-column keys with an upper bound on their distinct count."""
    out = []
    for i, j in combinations(range(len(pairs)), 2):
        d_i = reference.columns[pairs[i].reference].distinct
        d_j = reference.columns[pairs[j].reference].distinct
        bound = min(reference.n_rows, d_i * d_j)
        out.append(_describe(pairs, (i, j), bound))
    return out


def _key(reference: EncodedSide, pairs: Sequence[Pair], members: tuple[int, ...]) -> Key:
    codes = [reference.columns[pairs[m].reference] for m in members]
    if len(codes) == 1:
        return _describe(pairs, members, codes[0].distinct)
    left, right = codes
    combined = left.codes * right.distinct + right.codes
    size = left.distinct * right.distinct
    if size <= 4 * len(combined):
        distinct = int(np.count_nonzero(np.bincount(combined, minlength=size)))
    else:  # counting needs no hash table: sorting machine integers is cheaper and cache-friendly
        ordered = np.sort(combined)
        distinct = 1 + int(np.count_nonzero(ordered[1:] != ordered[:-1]))
    return _describe(pairs, members, distinct)


def _describe(pairs: Sequence[Pair], members: tuple[int, ...], distinct: int) -> Key:
    chosen = [pairs[m] for m in members]
    return Key(
        pairs=members,
        distinct=distinct,
        strength=min(p.strength for p in chosen),
        reference_columns=tuple(sorted(p.reference for p in chosen)),
    )
