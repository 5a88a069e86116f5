"""Calibration maths on hand-computed examples, and when the judge counts as calibrated."""

from __future__ import annotations

import pytest

from t2s_pipeline.judge.calibration import (
    ConfusionMatrix,
    agreement,
    calibrate,
    cohens_kappa,
)
from t2s_pipeline.judge.labels import AppliedLabels
from t2s_pipeline.judge.report import JUDGE, build_report


def test_kappa_of_a_two_by_two_matrix() -> None:
    """[[20, 5], [10, 15]]: p_o = 35/50 = 0.7; p_e = (25*30 + 25*20)/50^2 = 0.5; kappa 0.4."""
    matrix = ConfusionMatrix(("a", "b"), ((20, 5), (10, 15)))
    assert agreement(matrix) == pytest.approx(0.7)
    assert cohens_kappa(matrix) == pytest.approx(0.4)


def test_kappa_of_a_three_by_three_matrix() -> None:
    """[[5,1,0],[2,3,1],[0,1,7]]: p_o = 15/20; rows 6,6,8, columns 7,5,8 give p_e = 136/400;
    kappa = (0.75 - 0.34) / 0.66 = 41/66."""
    matrix = ConfusionMatrix(("a", "b", "c"), ((5, 1, 0), (2, 3, 1), (0, 1, 7)))
    assert agreement(matrix) == pytest.approx(0.75)
    assert cohens_kappa(matrix) == pytest.approx(41 / 66)


def test_matrix_is_tallied_from_pairs_in_category_order() -> None:
    """Rows are labels, columns predictions, categories in §11 order."""
    pairs = [("wrong_grain", "wrong_filter"), ("wrong_table", "wrong_table")] * 2
    pairs.append(("wrong_grain", "wrong_grain"))
    matrix = ConfusionMatrix.from_pairs(pairs)
    assert matrix.categories == ("wrong_table", "wrong_filter", "wrong_grain")
    assert matrix.count("wrong_grain", "wrong_filter") == 2
    assert matrix.count("wrong_filter", "wrong_grain") == 0
    assert matrix.n == 5 and agreement(matrix) == pytest.approx(3 / 5)


def test_undefined_cases_are_none_not_numbers() -> None:
    """No items: agreement undefined. One shared category only: kappa undefined (p_e = 1)."""
    empty = ConfusionMatrix.from_pairs([])
    assert agreement(empty) is None and cohens_kappa(empty) is None
    same = ConfusionMatrix.from_pairs([("wrong_table", "wrong_table")] * 3)
    assert agreement(same) == 1.0 and cohens_kappa(same) is None


def test_perfect_and_chance_level_raters() -> None:
    """Perfect agreement gives kappa 1; a rater always answering one class gives kappa 0."""
    perfect = calibrate("x", {"1": "a", "2": "b"}, {"1": "a", "2": "b"})
    assert perfect.kappa == pytest.approx(1.0)
    constant = calibrate("x", {"1": "a", "2": "b", "3": "a", "4": "b"}, dict.fromkeys("1234", "a"))
    assert constant.agreement == pytest.approx(0.5) and constant.kappa == pytest.approx(0.0)


def test_calibrate_uses_only_items_both_cover() -> None:
    """Unlabelled predictions and unpredicted labels are left out (n says how many were used)."""
    result = calibrate("x", {"1": "a", "2": "b"}, {"2": "b", "3": "a"})
    assert result.n == 1 and result.agreement == 1.0


@pytest.mark.parametrize("floor, calibrated", [(0.5, True), (0.75, True), (0.8, False)])
def test_judge_is_calibrated_only_at_or_above_the_floor(floor: float, calibrated: bool) -> None:
    """Agreement 3/4 against the floor decides the judge histogram's mark."""
    labels = AppliedLabels({"1": "a", "2": "b", "3": "a", "4": "b"}, {}, ())
    judged = {"1": "a", "2": "b", "3": "a", "4": "a"}
    report = build_report(labels, 4, judged, judged, floor, judge_enabled=True)
    assert report.lane(JUDGE).agreement == pytest.approx(0.75)
    assert report.judge_calibrated is calibrated
    assert ("NOT calibrated" in report.histogram_markdown()) is not calibrated


def test_disabled_judge_is_never_calibrated() -> None:
    """Without the judge, the deterministic lane is still measured; the judge lane is empty."""
    labels = AppliedLabels({"1": "a"}, {}, ())
    report = build_report(labels, 1, {"1": "a"}, {}, 0.0, judge_enabled=False)
    assert not report.judge_calibrated
    assert report.lane("deterministic").agreement == 1.0 and report.lane(JUDGE).n == 0


def test_set_jaccard_is_the_mean_over_items() -> None:
    """Item 1: {f, m} vs {f}: 1/2; item 2: {g} vs {g}: 1; item 3 has no set on either side, so
    each side's set is its primary: {t} vs {f}: 0. Mean (0.5 + 1 + 0) / 3 = 0.5."""
    labels = {"1": "f", "2": "g", "3": "t"}
    predicted = {"1": "f", "2": "g", "3": "f"}
    label_sets = {"1": frozenset({"f", "m"}), "2": frozenset({"g"})}
    predicted_sets = {"1": frozenset({"f"}), "2": frozenset({"g"})}
    result = calibrate("x", labels, predicted, label_sets, predicted_sets)
    assert result.jaccard == pytest.approx(0.5) and result.jaccard_n == 3
    assert calibrate("x", {}, {}).jaccard is None


def test_report_carries_the_set_jaccard_per_lane() -> None:
    """The deterministic lane uses the diagnosis' sets; the judge's set is its one category."""
    labels = AppliedLabels({"1": "f"}, {"1": frozenset({"f", "m"})}, ())
    report = build_report(
        labels, 1, {"1": "f"}, {"1": "f"}, 0.5, True, {"1": frozenset({"f", "m"})}
    )
    assert report.lane("deterministic").jaccard == pytest.approx(1.0)
    assert report.lane(JUDGE).jaccard == pytest.approx(0.5)
    assert "set Jaccard" in report.to_markdown()
    assert list(report.frame()["jaccard"]) == pytest.approx([1.0, 0.5, 1.0])
