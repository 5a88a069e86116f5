"""The demo label file is valid, labels real items, and labels only the candidate it judged."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from t2s_pipeline.cases import load_cases
from t2s_pipeline.errors import ConfigError
from t2s_pipeline.judge.labels import (
    Label,
    apply_labels,
    candidate_fingerprint,
    load_labels,
)

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "cases" / "erp"


def test_demo_labels_name_real_items_with_reasons() -> None:
    """At least 20 labels, each on an existing case and phrasing, with a reason and fingerprint."""
    labels = load_labels(DEMO / "labels.yaml")
    cases = load_cases(DEMO).by_id()
    assert len(labels) >= 20
    for item_id, label in labels.items():
        case_id, phrasing = item_id.rsplit("#", 1)
        assert case_id in cases, item_id
        assert int(phrasing) <= len(cases[case_id].phrasings), item_id
        assert label.reason.strip() and label.candidate
    assert len(Counter(label.category for label in labels.values())) >= 4


def test_labels_apply_only_to_the_candidate_they_judged() -> None:
    """A fingerprint mismatch makes a label stale; no fingerprint applies it to any candidate."""
    labels = {
        "a#0": Label(
            category="wrong_filter", reason="r", candidate=candidate_fingerprint("SELECT 1")
        ),
        "b#0": Label(
            category="wrong_grain", reason="r", candidate=candidate_fingerprint("SELECT 2")
        ),
        "c#0": Label(category="no_result", reason="r"),
        "d#0": Label(category="wrong_table", reason="r"),
    }
    candidates = {"a#0": "select  1".upper(), "b#0": "SELECT 3", "c#0": None}
    applied = apply_labels(labels, candidates)
    assert applied.categories == {"a#0": "wrong_filter", "c#0": "no_result"}
    assert applied.stale == ("b#0",)


@pytest.mark.parametrize(
    "text, field",
    [
        ("labels:\n  a#0: {category: wrong_join, reason: r}\n", "labels.a#0.category"),
        ("labels:\n  a#0: {category: wrong_grain}\n", "labels.a#0.reason"),
        ("labels:\n  a-0: {category: wrong_grain, reason: r}\n", "labels.a-0"),
        ("labels:\n  a#0: {category: wrong_grain, reason: r, why: x}\n", "labels.a#0.why"),
    ],
)
def test_invalid_label_files_name_the_field(tmp_path: Path, text: str, field: str) -> None:
    """Errors say which file and which field, so the reviewer can fix the label."""
    path = tmp_path / "labels.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        load_labels(path)
    assert str(path) in str(error.value) and f"'{field}'" in str(error.value)


def test_missing_label_file_means_no_labels(tmp_path: Path) -> None:
    """A domain without labels is calibrated against nothing rather than failing."""
    assert load_labels(tmp_path / "labels.yaml") == {}
