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
    dump_labels,
    load_labels,
    n_labels,
)

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "cases" / "erp"


def test_demo_labels_name_real_items_with_reasons() -> None:
    """At least 150 labels, each on an existing case and phrasing, with a reason and fingerprint."""
    labels = load_labels(DEMO / "labels.yaml")
    cases = load_cases(DEMO).by_id()
    assert n_labels(labels) >= 150
    for item_id, entries in labels.items():
        case_id, phrasing = item_id.rsplit("#", 1)
        assert case_id in cases, item_id
        assert int(phrasing) <= len(cases[case_id].phrasings), item_id
        for label in entries:
            assert label.reason.strip() and label.candidate
    assert len(Counter(e.primary for entries in labels.values() for e in entries)) >= 4


def test_labels_apply_only_to_the_candidate_they_judged() -> None:
    """A fingerprint mismatch makes a label stale; no fingerprint applies it to any candidate."""
    labels = {
        "a#0": (
            Label(primary="wrong_filter", reason="r", candidate=candidate_fingerprint("SELECT 1")),
        ),
        "b#0": (
            Label(primary="wrong_grain", reason="r", candidate=candidate_fingerprint("SELECT 2")),
        ),
        "c#0": (Label(primary="no_result", reason="r"),),
        "d#0": (Label(primary="wrong_table", reason="r"),),
    }
    candidates = {"a#0": "select  1".upper(), "b#0": "SELECT 3", "c#0": None}
    applied = apply_labels(labels, candidates)
    assert applied.categories == {"a#0": "wrong_filter", "c#0": "no_result"}
    assert applied.stale == ("b#0",)


def test_one_file_labels_several_systems(tmp_path: Path) -> None:
    """An item holds one label per candidate; each run gets the one for its own answer, with
    the categories the reviewer found beside the primary."""
    one, two = candidate_fingerprint("SELECT 1"), candidate_fingerprint("SELECT 2")
    path = tmp_path / "labels.yaml"
    path.write_text(
        "labels:\n"
        "  a#0:\n"
        f"    - {{candidate: '{one}', primary: wrong_filter, also: [wrong_metric], reason: r}}\n"
        f"    - {{candidate: '{two}', primary: presentation, reason: unrounded}}\n"
        f"  b#1: {{candidate: '{one}', primary: correct, reason: same rows}}\n"
    )
    labels = load_labels(path)
    assert n_labels(labels) == 3
    first = apply_labels(labels, {"a#0": "SELECT 1", "b#1": "SELECT 1"})
    assert first.categories == {"a#0": "wrong_filter", "b#1": "correct"}
    assert first.sets["a#0"] == {"wrong_filter", "wrong_metric"}
    second = apply_labels(labels, {"a#0": "SELECT 2", "b#1": "SELECT 2"})
    assert second.categories == {"a#0": "presentation"} and second.stale == ("b#1",)
    assert second.sets["a#0"] == {"presentation"}
    dump_labels(path, labels, "header")
    assert load_labels(path) == labels and path.read_text().startswith("# header\n")


@pytest.mark.parametrize(
    "text, field",
    [
        ("labels:\n  a#0: {primary: wrong_join, reason: r}\n", "labels.a#0.primary"),
        ("labels:\n  a#0: {primary: wrong_grain}\n", "labels.a#0.reason"),
        ("labels:\n  a-0: {primary: wrong_grain, reason: r}\n", "labels.a-0"),
        ("labels:\n  a#0: {primary: wrong_grain, reason: r, why: x}\n", "labels.a#0.why"),
        ("labels:\n  a#0: {category: wrong_grain, reason: r}\n", "labels.a#0.primary"),
        (
            "labels:\n  a#0: {primary: wrong_grain, also: [wrong_join], reason: r}\n",
            "labels.a#0.also",
        ),
        (
            "labels:\n  a#0: [{primary: correct, reason: r}, {primary: correct, reason: s}]\n",
            "labels.a#0",
        ),
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
