"""The output family (SPEC 6) and exact match (SPEC 8) for one reference/candidate pair.

``score_output`` normalises and encodes both result sets once, then pairs columns, scores
them, picks a row key, pairs rows on shelves and counts matched cells, and checks exact match.
Empty and failed sides follow SPEC 6.4: a zero denominator gives ``None``, never 0 or 1.

>>> from t2s_pipeline.results import PackedResultSet, ResultSet
>>> gold = ResultSet.from_names(["n"], [[3]])
>>> score_output(gold, ResultSet.from_names(["count"], [[3.0]])).exact_match
True
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from t2s_pipeline.results import PackedResultSet, ResultSet
from t2s_pipeline.scoring.columns import Pair, column_scores, pair_columns
from t2s_pipeline.scoring.encoding import Crosswalk, encode
from t2s_pipeline.scoring.exact import PERMUTATION_BOUND, ExactMatch, exact_match
from t2s_pipeline.scoring.keys import choose_key
from t2s_pipeline.scoring.ordering import RowOrder, arrange
from t2s_pipeline.scoring.presentation import presentation_findings
from t2s_pipeline.scoring.rows import match_rows

__all__ = ["OutputScore", "OutputSettings", "Pair", "score_output"]


@dataclass(frozen=True)
class OutputSettings:
    """Knobs of the output family; the defaults are the SPEC defaults."""

    tau: float = 0.25
    float_decimals: int = 6
    shelf_bound: int = 512
    ordered_compare: Literal["auto"] | bool = "auto"
    """``auto``: order matters when the reference query sorts its outermost result."""
    permutation_bound: int = 5040

    def __post_init__(self) -> None:
        if not 0.0 <= self.tau <= 1.0:
            raise ValueError(f"tau must lie in [0, 1], got {self.tau}")
        if self.float_decimals < 0:
            raise ValueError(f"float_decimals must be >= 0, got {self.float_decimals}")
        if self.shelf_bound < 1 or self.permutation_bound < 1:
            raise ValueError("shelf_bound and permutation_bound must be >= 1")


@dataclass(frozen=True)
class OutputScore:
    """Columns, cells and exact match for one item, with the ceilings met."""

    exact_match: bool
    columns_precision: float | None
    columns_recall: float | None
    cells_precision: float | None
    cells_recall: float | None
    pairs: tuple[Pair, ...] = ()
    key: tuple[int, ...] = ()
    selectivity: float | None = None
    matched_cells: int = 0
    reference_rows: int | None = None
    candidate_rows: int | None = None
    ceilings: tuple[str, ...] = ()
    scorer_fault: bool = False
    presentation: tuple[str, ...] = ()
    """Findings when only the presentation differs (SPEC 11); empty otherwise."""

    @property
    def metrics(self) -> tuple[float | None, ...]:
        """The four output metrics: column precision, recall, cell precision, recall."""
        return (
            self.columns_precision,
            self.columns_recall,
            self.cells_precision,
            self.cells_recall,
        )

    def to_json(self) -> dict[str, Any]:
        """The SPEC 15 pieces this family owns, ready for ``json.dumps``."""
        return {
            "exact_match": self.exact_match,
            "output": {
                "columns": {"precision": self.columns_precision, "recall": self.columns_recall},
                "cells": {"precision": self.cells_precision, "recall": self.cells_recall},
                "pairs": [
                    {
                        "candidate": p.candidate,
                        "reference": p.reference,
                        "by": p.by,
                        "precision": p.precision,
                        "recall": p.recall,
                    }
                    for p in self.pairs
                ],
                "key": list(self.key),
                "selectivity": self.selectivity,
            },
            "ceilings": list(self.ceilings),
            "scorer_fault": self.scorer_fault,
        }


@dataclass(frozen=True)
class _Output:
    """The output-family numbers before exact match is folded in."""

    columns: tuple[float | None, float | None]
    cells: tuple[float | None, float | None]
    pairs: tuple[Pair, ...] = ()
    key: tuple[int, ...] = ()
    selectivity: float | None = None
    matched_cells: int = 0
    ceilings: tuple[str, ...] = field(default_factory=tuple)


def score_output(
    reference: ResultSet | None,
    candidate: ResultSet | None,
    settings: OutputSettings = OutputSettings(),  # noqa: B008 - frozen, so sharing is safe
    *,
    reference_ordered: bool = False,
    row_order: RowOrder | None = None,
) -> OutputScore:
    """Score a candidate result against the reference (SPEC 6 and 8).

    ``None`` for a side means that query failed, was refused or timed out. When the reference
    is None every metric is None and exact match is False (the caller counts ``gold_failed``).
    ``row_order``: both queries' ORDER BY keys; under ``auto`` order, the candidate is held
    only to the order its query fixes (``t2s_pipeline.scoring.ordering``). Without it the
    rows are compared as returned.
    """
    if reference is None:
        return OutputScore(False, None, None, None, None, candidate_rows=_rows(candidate))
    if candidate is None:
        return _finish(_empty_sides(reference, None), ExactMatch(False), reference, None)
    ordered = settings.ordered_compare is True or (
        settings.ordered_compare == "auto" and reference_ordered
    )
    order = row_order if ordered and settings.ordered_compare == "auto" else None
    unordered = False
    if order is not None:
        arranged = arrange(reference, candidate, order, settings.float_decimals)
        reference, candidate = arranged.reference, arranged.candidate
        unordered = arranged.undetermined
    crosswalk = Crosswalk(
        encode(reference, settings.float_decimals), encode(candidate, settings.float_decimals)
    )
    exact = exact_match(
        crosswalk,
        ordered=ordered,
        permutation_bound=settings.permutation_bound,
        order_undetermined=unordered,
    )
    if reference.n_rows == 0 or candidate.n_rows == 0:
        output = _empty_sides(reference, candidate)
    else:
        output = _score_both(reference, candidate, crosswalk, settings)
    score = _finish(output, exact, reference, candidate)
    if exact.match or PERMUTATION_BOUND in exact.ceilings:
        return score
    shown = presentation_findings(
        reference,
        candidate,
        ordered=ordered,
        order_undetermined=unordered,
        float_decimals=settings.float_decimals,
        permutation_bound=settings.permutation_bound,
    )
    return replace(score, presentation=shown)


@dataclass(frozen=True)
class OutputJob:
    """One :func:`score_output` call as a value, so a batch can be spread over cores."""

    reference: ResultSet | PackedResultSet | None
    candidate: ResultSet | PackedResultSet | None
    settings: OutputSettings
    reference_ordered: bool
    row_order: RowOrder | None


def score_output_job(job: OutputJob) -> OutputScore:
    """:func:`score_output` of one job (module level, light to import: a spread worker)."""
    return score_output(
        _unpacked(job.reference),
        _unpacked(job.candidate),
        job.settings,
        reference_ordered=job.reference_ordered,
        row_order=job.row_order,
    )


def _unpacked(side: ResultSet | PackedResultSet | None) -> ResultSet | None:
    return side.unpack() if isinstance(side, PackedResultSet) else side


def results_match(
    reference: ResultSet,
    candidate: ResultSet,
    settings: OutputSettings = OutputSettings(),  # noqa: B008 - frozen, so sharing is safe
) -> bool:
    """Exact match alone (SPEC 8), decided as :func:`score_output` decides it for two results
    whose rows are compared as returned, without the output family's pairing, key and cells:
    the frozen ``expected_result`` of a case against its live gold (gold drift)."""
    crosswalk = Crosswalk(
        encode(reference, settings.float_decimals), encode(candidate, settings.float_decimals)
    )
    ordered = settings.ordered_compare is True
    return exact_match(
        crosswalk, ordered=ordered, permutation_bound=settings.permutation_bound
    ).match


def _score_both(
    reference: ResultSet, candidate: ResultSet, crosswalk: Crosswalk, settings: OutputSettings
) -> _Output:
    """Both sides returned rows: pair columns, pick a key, pair rows, count cells."""
    pairs = pair_columns(reference.columns, candidate.columns, crosswalk, settings.tau)
    columns = column_scores(pairs, candidate.n_columns, reference.n_columns)
    key = choose_key(pairs, crosswalk.reference)
    if key is None:
        return _Output(columns, (0.0, 0.0), pairs)
    rows = match_rows(pairs, key, crosswalk.reference, crosswalk, settings.shelf_bound)
    width = len(pairs)
    cells = (
        rows.matched_cells / (candidate.n_rows * width),
        rows.matched_cells / (reference.n_rows * width),
    )
    return _Output(
        columns=columns,
        cells=cells,
        pairs=pairs,
        key=key.reference_columns,
        selectivity=key.selectivity(reference.n_rows),
        matched_cells=rows.matched_cells,
        ceilings=rows.ceilings,
    )


def _empty_sides(reference: ResultSet, candidate: ResultSet | None) -> _Output:
    """SPEC 6.4 rules when a side failed or returned no rows."""
    ref_rows = reference.n_rows > 0
    cand_rows = candidate is not None and candidate.n_rows > 0
    if ref_rows and not cand_rows:
        return _Output((None, 0.0), (None, 0.0))
    if cand_rows and not ref_rows:
        return _Output((0.0, None), (0.0, None))
    both_empty = candidate is not None and not ref_rows and not cand_rows
    return _Output((None, None), (None, None), ceilings=("empty_vs_empty",) if both_empty else ())


def _finish(
    output: _Output, exact: ExactMatch, reference: ResultSet, candidate: ResultSet | None
) -> OutputScore:
    """Fold exact match in: the scorer self-test (SPEC 8) and the ceilings."""
    metrics = (*output.columns, *output.cells)
    # Giving up at the permutation bound is a ceiling of exact match, not a fault of the scorer.
    fault = (
        all(m == 1.0 for m in metrics)
        and not exact.match
        and not exact.match_ignoring_order
        and PERMUTATION_BOUND not in exact.ceilings
    )
    partial = exact.match and any(m is not None and m < 1.0 for m in metrics)
    ceilings = output.ceilings + exact.ceilings
    ceilings += ("scorer_fault",) if fault else ()
    ceilings += ("exact_but_partial",) if partial else ()
    return OutputScore(
        exact_match=exact.match,
        columns_precision=output.columns[0],
        columns_recall=output.columns[1],
        cells_precision=output.cells[0],
        cells_recall=output.cells[1],
        pairs=output.pairs,
        key=output.key,
        selectivity=output.selectivity,
        matched_cells=output.matched_cells,
        reference_rows=reference.n_rows,
        candidate_rows=_rows(candidate),
        ceilings=ceilings,
        scorer_fault=fault,
    )


def _rows(result: ResultSet | None) -> int | None:
    return None if result is None else result.n_rows
