"""Exact execution match (SPEC 8): parameter-free equality of two result sets.

Same number of columns; rows as multisets (duplicates count), or as sequences when order is
compared; normalised values; column order ignored by trying only assignments between columns
whose value multisets are identical. Columns are compared through a 64-bit multiset signature
first; the row check that follows is exact, so a signature collision can cost time but never
give a wrong answer. The search checks partial assignments and abandons a branch as soon as
the rows built so far differ; it stops after ``permutation_bound`` checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from t2s_pipeline.scoring.encoding import Crosswalk, EncodedColumn, dense_ids

PERMUTATION_BOUND = "permutation_bound"
_ID_LIMIT = 2**62


@dataclass(frozen=True)
class ExactMatch:
    """Whether the results are equal, and a ceiling when the search had to stop early."""

    match: bool
    ceilings: tuple[str, ...] = ()
    # Row order is the only difference: the output family ignores order, so this is no fault.
    match_ignoring_order: bool = False


class _OutOfBudget(Exception):
    """The column-assignment search used up its permutation bound."""


def exact_match(
    crosswalk: Crosswalk,
    *,
    ordered: bool = False,
    permutation_bound: int = 5040,
    order_undetermined: bool = False,
) -> ExactMatch:
    """Compare the crosswalk's two sides as result sets (SPEC 8).

    ``order_undetermined``: the candidate's query leaves open an order the reference fixes
    (``t2s_pipeline.scoring.ordering``), so when order counts it does not match.

    When the search stops after ``permutation_bound`` checks without finding an assignment
    of columns that makes the rows equal, the answer is False with the ceiling
    ``permutation_bound`` (a match found within the bound is certain and needs no ceiling).
    """
    reference, candidate = crosswalk.reference, crosswalk.candidate
    if len(reference.columns) != len(candidate.columns) or reference.n_rows != candidate.n_rows:
        return ExactMatch(False)
    ref_sig = [_signature(c, crosswalk.value_ids(0, i)) for i, c in enumerate(reference.columns)]
    cand_sig = [_signature(c, crosswalk.value_ids(1, i)) for i, c in enumerate(candidate.columns)]
    if sorted(ref_sig) != sorted(cand_sig):
        return ExactMatch(False)
    options = [[r for r, sig in enumerate(ref_sig) if sig == s] for s in cand_sig]
    # No assignment of columns can give rows an order their query never set.
    luck = ordered and order_undetermined
    try:
        if not luck and _Search(crosswalk, options, ordered, permutation_bound).run():
            return ExactMatch(True)
        unordered = ordered and _Search(crosswalk, options, False, permutation_bound).run()
        return ExactMatch(False, match_ignoring_order=unordered)
    except _OutOfBudget:
        return ExactMatch(False, (PERMUTATION_BOUND,))


class _Search:
    """Depth-first assignment of reference columns to candidate columns, in candidate order."""

    def __init__(
        self, crosswalk: Crosswalk, options: Sequence[Sequence[int]], ordered: bool, budget: int
    ) -> None:
        self.crosswalk = crosswalk
        self.options = options
        self.ordered = ordered
        self.budget = budget
        self.checks = 0
        self.n_rows = crosswalk.reference.n_rows

    def run(self) -> bool:
        start = np.zeros(2 * self.n_rows, dtype=np.int64)
        return self._extend(0, start, 1, frozenset())

    def _extend(self, depth: int, ids: np.ndarray, bound: int, used: frozenset[int]) -> bool:
        if depth == len(self.options):
            return True
        choices = [r for r in self.options[depth] if r not in used]
        for reference in choices:
            column = self._column(depth, reference)
            if column is None:
                continue
            radix = max(self.crosswalk.reference.columns[reference].distinct, 1)
            if bound * radix >= _ID_LIMIT:
                ids, bound = dense_ids(ids)
            grown, grown_bound = ids * radix + column, bound * radix
            # Only check where the search branches, and at the end: elsewhere there is no
            # alternative to fall back on, so an early check would only cost time.
            if len(choices) > 1 or depth == len(self.options) - 1:
                grown, grown_bound = self._checked(grown)
                if grown is None:
                    continue
            if self._extend(depth + 1, grown, grown_bound, used | {reference}):
                return True
        return False

    def _column(self, candidate: int, reference: int) -> np.ndarray | None:
        """Both sides' rows in the reference column's codes; None if a value is missing."""
        mapped = self.crosswalk.candidate_codes(candidate, reference)
        if len(mapped) and int(mapped.min()) < 0:
            return None
        own = self.crosswalk.reference.columns[reference].codes
        return np.concatenate([own, mapped])

    def _checked(self, ids: np.ndarray) -> tuple[np.ndarray | None, int]:
        self.checks += 1
        if self.checks > self.budget:
            raise _OutOfBudget
        dense, size = dense_ids(ids)
        ref, cand = dense[: self.n_rows], dense[self.n_rows :]
        if self.ordered:
            same = bool(np.array_equal(ref, cand))
        else:
            ref_counts = np.bincount(ref, minlength=size)
            same = bool(np.array_equal(ref_counts, np.bincount(cand, minlength=size)))
        return (dense, size) if same else (None, size)


def _signature(column: EncodedColumn, value_ids: np.ndarray) -> tuple[int, int]:
    """Distinct count and a 64-bit hash of the value multiset (equal multisets, equal hash).

    ``value_ids`` are the crosswalk's global ids of the column's distinct values: equal values
    share an id on both sides, so they stand in for the values' hashes.
    """
    counts = np.bincount(column.codes, minlength=column.distinct).astype(np.uint64)
    return column.distinct, int((_mix(value_ids.astype(np.uint64) + np.uint64(1)) * counts).sum())


def _mix(values: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: spreads small integer ids over 64 bits."""
    z = values ^ (values >> np.uint64(30))
    z = z * np.uint64(0xBF58476D1CE4E5B9)
    z = z ^ (z >> np.uint64(27))
    z = z * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))
