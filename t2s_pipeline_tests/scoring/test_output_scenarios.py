"""Output-family scenarios driven by fixtures/output/scenarios.yaml, plus the SPEC 6.6 example."""

from __future__ import annotations

import json
from typing import Any

import pytest

from t2s_pipeline.results import Column, ResultSet
from t2s_pipeline.scoring.output import OutputScore, OutputSettings, score_output
from t2s_pipeline_tests.scoring.conftest import load_scenarios, result_set

SCENARIOS: list[dict[str, Any]] = load_scenarios("scenarios.yaml")


def _approx(value: float | None) -> Any:
    return None if value is None else pytest.approx(value, abs=5e-4)


def _score(entry: dict[str, Any]) -> OutputScore:
    return score_output(
        result_set(entry["reference"]),
        result_set(entry["candidate"]),
        OutputSettings(**entry.get("settings", {})),
        reference_ordered=entry.get("reference_ordered", False),
    )


@pytest.mark.parametrize("entry", SCENARIOS, ids=[e["name"] for e in SCENARIOS])
def test_output_scenario(entry: dict[str, Any]) -> None:
    """Each SPEC 6/8 behaviour (fan-out, extra rows, NULLs, weak keys...) on a small pair."""
    score = _score(entry)
    expected = entry["expected"]
    assert score.exact_match is expected["exact_match"]
    precision, recall = expected["columns"]  # every scenario states both families
    assert (score.columns_precision, score.columns_recall) == (_approx(precision), _approx(recall))
    precision, recall = expected["cells"]
    assert (score.cells_precision, score.cells_recall) == (_approx(precision), _approx(recall))
    if "key" in expected:
        assert list(score.key) == expected["key"]
    if "selectivity" in expected:
        assert score.selectivity == _approx(expected["selectivity"])
    if "pairs" in expected:
        assert [[p.candidate, p.reference, p.by] for p in score.pairs] == expected["pairs"]
    if "matched_cells" in expected:
        assert score.matched_cells == expected["matched_cells"]
    if "ceilings" in expected:
        assert list(score.ceilings) == expected["ceilings"]


def test_worked_example_reproduces_spec_numbers() -> None:
    """SPEC 6.6 must reproduce exactly: it is the contract other teams check against."""
    reference = ResultSet.from_names(
        ["item", "customer_id", "total"],
        [["A", "C001", 100], ["B", "C002", 250], ["HELM", "C001", 100], ["HELM", "C002", 250]],
    )
    candidate = ResultSet.from_names(
        ["item", "customer_id", "Total", "site"],
        [
            ["A", "C001", 100, "s1"],
            ["B", "C002", 250, "s1"],
            ["HELM", "C001", 30, "s1"],
            ["HELM", "C001", 50, "s2"],
        ],
    )
    score = score_output(reference, candidate)
    assert [(p.candidate, p.reference, p.by) for p in score.pairs] == [
        (0, 0, "values"),
        (1, 1, "values"),
        (2, 2, "values"),
    ]
    assert [(p.precision, p.recall) for p in score.pairs] == [(1.0, 1.0), (1.0, 1.0), (0.5, 1.0)]
    assert round(score.columns_precision or 0, 3) == 0.625
    assert score.columns_recall == 1.0
    assert score.key == (0, 1) and score.selectivity == 1.0
    assert score.matched_cells == 8
    assert round(score.cells_precision or 0, 3) == 0.667
    assert round(score.cells_recall or 0, 3) == 0.667
    assert not score.exact_match and score.ceilings == ()


def test_json_has_exactly_the_spec_15_pieces() -> None:
    """``t2s score --json`` embeds this object; scripts read these keys (SPEC 15)."""
    reference = ResultSet.from_names(["a", "b"], [[1, "x"], [2, "y"]])
    candidate = ResultSet.from_names(["b", "a"], [["x", 1], ["y", 3]])
    payload = score_output(reference, candidate).to_json()
    assert list(payload) == ["exact_match", "output", "ceilings", "scorer_fault"]
    assert list(payload["output"]) == ["columns", "cells", "pairs", "key", "selectivity"]
    assert payload["output"]["columns"] == {"precision": 0.75, "recall": 0.75}
    assert payload["output"]["pairs"][0] == {
        "candidate": 1,
        "reference": 0,
        "by": "values",
        "precision": 0.5,
        "recall": 0.5,
    }
    json.dumps(payload)  # must serialise as is


def test_undefined_metrics_serialise_as_null() -> None:
    """Undefined is not 0 or 1 (SPEC 10): JSON must carry null, not a number."""
    payload = score_output(ResultSet.from_names(["a"], [[1]]), None).to_json()
    assert payload["output"]["columns"] == {"precision": None, "recall": 0.0}
    assert payload["output"]["selectivity"] is None


def test_cut_short_exact_search_is_a_ceiling_not_a_fault() -> None:
    """A cut-short column search cannot say the results differ: it is counted as the ceiling
    permutation_bound, and must not trip the blocking scorer self-test."""
    # Every column holds the multiset {1, 1, 2, 3}: the search must try column assignments.
    rows = [[1, 2, 1], [3, 1, 3], [1, 3, 1], [2, 1, 2]]
    reference = ResultSet(tuple(_origin(f"t.c{i}") for i in range(3)), [tuple(r) for r in rows])
    candidate = ResultSet(
        tuple(_origin(f"t.c{i}") for i in (2, 0, 1)), [(r[2], r[0], r[1]) for r in rows]
    )
    assert score_output(reference, candidate).exact_match
    tight = score_output(reference, candidate, OutputSettings(permutation_bound=1))
    assert tight.metrics == (1.0, 1.0, 1.0, 1.0)
    assert not tight.exact_match and not tight.scorer_fault
    assert tight.ceilings == ("permutation_bound",)


def test_settings_reject_values_that_make_no_sense() -> None:
    """A mistyped setting must fail loudly rather than silently change every score."""
    with pytest.raises(ValueError, match="tau"):
        OutputSettings(tau=1.5)
    with pytest.raises(ValueError, match="float_decimals"):
        OutputSettings(float_decimals=-1)


def _origin(origin: str) -> Column:
    return Column(None, origin)
