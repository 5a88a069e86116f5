"""Honest aggregation, diagnosis rules and run comparison on hand-built item tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from t2s_pipeline.scoring.compare import compare_runs, load_decision, unaccepted
from t2s_pipeline.scoring.diagnosis import ItemEvidence, diagnose
from t2s_pipeline.scoring.stats import (
    THREADS_FROM,
    mean_and_n,
    mean_with_ci,
    means_with_ci,
    paired_delta,
    percentile_interval,
)
from t2s_pipeline.scoring.summary import ex_by_band, family_means, robustness


def test_undefined_is_left_out_not_zero() -> None:
    """None and NaN never count as 0 or 1; n says how many values the mean has."""
    mean = mean_with_ci([1.0, None, float("nan"), 0.0, 1.0])
    assert mean.n == 3 and mean.mean == pytest.approx(2 / 3)
    assert mean.ci is not None and 0.0 <= mean.ci[0] <= mean.mean <= mean.ci[1] <= 1.0
    assert mean_with_ci([None, None]).mean is None and mean_with_ci([None]).n == 0


def test_paired_delta_uses_only_items_defined_on_both_sides() -> None:
    """A comparison is paired: an item undefined in either run is not in the delta."""
    delta = paired_delta([1.0, 0.5, None, 1.0], [0.0, 0.5, 1.0, None])
    assert delta.n == 2 and delta.mean == pytest.approx(-0.5)


def test_intervals_resample_whole_cases() -> None:
    """Three phrasings of a case that succeed or fail together are not three independent
    items: resampling cases gives the same mean and n with a wider interval, and one case
    alone has no interval at all."""
    values = [float(c % 3 == 0) for c in range(20) for _ in range(3)]
    cases = [c for c in range(20) for _ in range(3)]
    by_item, by_case = mean_with_ci(values), mean_with_ci(values, cases)
    assert (by_item.mean, by_item.n) == (by_case.mean, by_case.n) == (pytest.approx(0.35), 60)
    assert by_item.ci is not None and by_case.ci is not None
    assert by_case.ci[1] - by_case.ci[0] > 1.3 * (by_item.ci[1] - by_item.ci[0])
    assert mean_with_ci([1.0, 0.0, 1.0], ["a", "a", "a"]).ci is None
    delta = paired_delta(values, [0.0] * 60, cases)
    assert delta.mean == pytest.approx(-0.35) and delta.ci is not None and delta.ci[1] < 0


@pytest.mark.parametrize("uniform", [False, True])
@pytest.mark.parametrize("n_clusters", [2, 7, 380, 1000, 2_500, 10_000])
def test_intervals_equal_scipys_bootstrap_to_the_last_bit(n_clusters: int, uniform: bool) -> None:
    """The interval is scipy's percentile bootstrap over resampled clusters, computed without
    its overhead: equal bits for cluster counts with and without kept resample indices, and
    again on a second call (the kept indices are not changed by use)."""
    rng = np.random.default_rng(n_clusters)
    counts = rng.integers(1, 4, n_clusters).astype(float)
    if uniform:  # one item per case (the main phrasing), or every phrasing of every case
        counts = np.full(n_clusters, float(n_clusters % 3 + 1))
    sums = np.round(rng.random(n_clusters) * counts, 3)
    expected = stats.bootstrap(
        (sums, counts),
        lambda s, c, axis=-1: s.sum(axis=axis) / c.sum(axis=axis),
        paired=True,
        vectorized=True,
        confidence_level=0.95,
        n_resamples=2000,
        method="percentile",
        rng=np.random.default_rng(20251),
    ).confidence_interval
    for _ in range(2):
        low, high = percentile_interval(sums, counts)
        assert (low, high) == (float(expected[0]), float(expected[1]))


def _evidence(**changes: object) -> ItemEvidence:
    base = dict(
        gold_failed=False, scorer_fault=False, exact_match=False, candidate_failed=False,
        retrieval_recall=1.0, tables_differ=False, filters_differ=False, group_by_differ=False,
        metric_differ=False, cells_precision=0.5, cells_recall=0.5, reference_rows=4,
        candidate_rows=4,
    )  # fmt: skip
    base.update(changes)
    return ItemEvidence(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "changes, category",
    [
        ({"gold_failed": True, "exact_match": True}, "harness_bug"),
        ({"scorer_fault": True}, "harness_bug"),
        ({"exact_match": True}, "correct"),
        ({"candidate_failed": True, "retrieval_recall": 0.5}, "no_result"),
        ({"retrieval_recall": 0.5, "filters_differ": True}, "wrong_table"),
        ({"tables_differ": True}, "wrong_table"),
        ({"filters_differ": True, "group_by_differ": True}, "wrong_filter"),
        ({"group_by_differ": True}, "wrong_grain"),
        ({"candidate_rows": 8, "cells_precision": 0.25}, "wrong_grain"),
        ({"cells_precision": 0.4, "cells_recall": 0.5, "candidate_rows": 4}, "wrong_filter"),
        ({"metric_differ": True}, "wrong_metric"),
        ({}, "wrong_metric"),
    ],
)
def test_diagnosis_rule_order(changes: dict[str, object], category: str) -> None:
    """The first rule that holds names the failure, in the order of SPEC §11."""
    assert diagnose(_evidence(**changes)).category == category


def _items(exact: list[bool | None], cells: list[float | None]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "item_id": [f"c{i // 2}#{i % 2}" for i in range(len(exact))],
            "case_id": [f"c{i // 2}" for i in range(len(exact))],
            "difficulty": ["easy" if i < 2 else "hard" for i in range(len(exact))],
            "exact_match": pd.Series(exact, dtype="boolean"),
            "cells_recall": pd.Series(cells, dtype="Float64"),
        }
    )


def test_summary_bands_and_robustness() -> None:
    """EX per band and the share of cases whose EX is the same for every phrasing."""
    items = _items([True, True, True, False], [1.0, 1.0, None, 0.5])
    bands = ex_by_band(items)
    assert bands["easy"].mean == 1.0 and bands["hard"].mean == 0.5
    assert robustness(items).mean == 0.5 and robustness(items).n == 2
    assert family_means(items)["cells"]["recall"].n == 3


def test_regressions_listed_and_accepted_only_by_a_decision(tmp_path: Path) -> None:
    """A lower EX on a shared item is a regression until decisions/<run>.yaml accepts it."""
    before = _items([True, True, True, False], [1.0, 1.0, 1.0, 0.0])
    after = _items([True, False, True, True], [1.0, 0.5, 1.0, 1.0])
    comparison = compare_runs("a", before, "b", after)
    assert comparison.n_shared == 4
    assert comparison.exact_regressions() == ["c0#1"]
    assert {(r.item_id, r.family) for r in comparison.regressions} == {
        ("c0#1", "exact"),
        ("c0#1", "cells"),
    }
    assert unaccepted(comparison, load_decision(tmp_path, "b")) == ["c0#1"]
    (tmp_path / "b.yaml").write_text("accepted_by: jane\nreason: reviewed\nitems: [other#0]\n")
    assert unaccepted(comparison, load_decision(tmp_path, "b")) == ["c0#1"]
    (tmp_path / "b.yaml").write_text("accepted_by: jane\nreason: reviewed\n")
    assert unaccepted(comparison, load_decision(tmp_path, "b")) == []
    (tmp_path / "b.yaml").write_text("reason: nobody signed\n")
    assert unaccepted(comparison, load_decision(tmp_path, "b")) == ["c0#1"]


def test_every_headline_figure_regresses_and_so_does_becoming_undefined(tmp_path: Path) -> None:
    """Cell recall alone going down is a regression the check warns about; so is a figure that
    could be measured before and cannot be now (listed as ``after=None``)."""
    before = _items([True, True, False, False], [1.0, 0.8, 0.5, 0.5])
    after = _items([True, True, False, False], [1.0, 0.6, None, 0.7])
    comparison = compare_runs("a", before, "b", after)
    assert comparison.exact_regressions() == []
    assert [(r.item_id, r.before, r.after) for r in comparison.regressions] == [
        ("c0#1", 0.8, 0.6),
        ("c1#0", 0.5, None),
    ]
    assert unaccepted(comparison, load_decision(tmp_path, "b")) == ["c0#1", "c1#0"]
    assert "c1#0" in comparison.to_text() and "0.500 -> undefined" in comparison.to_text()
    frame = comparison.regressions_frame()
    assert frame["after"].isna().tolist() == [False, True]


def test_permutation_bound_is_a_ceiling_not_a_scorer_fault() -> None:
    """Exact match giving up at the bound must not trip the blocking scorer self-test."""
    from t2s_pipeline.results import Column, ResultSet
    from t2s_pipeline.scoring.output import OutputSettings, score_output

    # Both columns hold {1, 2, 3}: only a column permutation shows the results are equal,
    # while origins pair the columns right, so every output metric reads 1.0.
    a, b = Column("a", origin="s.t.a"), Column("b", origin="s.t.b")
    reference = ResultSet((a, b), [(1, 3), (2, 1), (3, 2)])
    candidate = ResultSet((b, a), [(3, 1), (1, 2), (2, 3)])
    bounded = score_output(reference, candidate, OutputSettings(permutation_bound=1))
    assert "permutation_bound" in bounded.ceilings and bounded.cells_recall == 1.0
    assert not bounded.scorer_fault and "scorer_fault" not in bounded.ceilings
    assert score_output(reference, candidate).exact_match


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.none() | st.booleans() | st.floats(-1e6, 1e6) | st.just(float("nan")) | st.just(1.0),
        max_size=30,
    )
)
def test_the_mean_without_an_interval_is_the_mean_with_one(values: list[object]) -> None:
    """An asset's metadata shows the mean and n of :func:`mean_with_ci` without resampling:
    the same numbers to the last bit, undefined and NaN values left out alike."""
    with_ci = mean_with_ci(values)  # type: ignore[arg-type]
    without = mean_and_n(values)  # type: ignore[arg-type]
    assert (without.mean, without.n) == (with_ci.mean, with_ci.n) and without.ci is None


def test_a_batch_of_means_on_two_threads_equals_one_at_a_time() -> None:
    """``means_with_ci`` on a batch large enough for two threads: every figure as
    ``mean_with_ci`` gives it alone (series of different lengths, so different draws run at
    once)."""
    rng = np.random.default_rng(7)
    batch: list[tuple[list[float | bool | None], list[object] | None]] = []
    for n in (3000, 2999, 1500, 3000, 40):
        values: list[float | bool | None] = [
            None if v < 0.1 else float(v > 0.5) for v in rng.random(n)
        ]
        batch.append((values, [i // 3 for i in range(n)] if n % 2 == 0 else None))
    assert sum(len(v) for v, _ in batch) >= THREADS_FROM
    together = means_with_ci(batch)
    assert together == [mean_with_ci(values, clusters) for values, clusters in batch]
    assert all(m.ci is not None for m in together)
