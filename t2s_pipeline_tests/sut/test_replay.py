"""Replay: score recorded predictions without a live service; nothing is silently dropped."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from t2s_pipeline.errors import SutError
from t2s_pipeline.sut.client import Item, build_items
from t2s_pipeline.sut.replay import MISSING, ReplayClient
from t2s_pipeline_tests.agent.sample import TWINS, sample_case_set


def _write(path: Path, *lines: object) -> Path:
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def test_recorded_predictions_become_responses(tmp_path: Path) -> None:
    """sql, refusal, message and the recorded trace come back as the SUT's answer."""
    path = _write(
        tmp_path / "p.jsonl",
        {"case_id": "a", "phrasing": 0, "sql": "SELECT 1", "tables": ["sales.orders"]},
        {"case_id": "a", "phrasing": 1, "sql": None, "refused": True, "message": "unsure"},
    )
    items = [Item("a#0", "a", 0, "q", ("a",)), Item("a#1", "a", 1, "q2", ("a",))]
    outcomes = asyncio.run(ReplayClient(path).ask_all(items, "replay"))
    first, second = outcomes
    assert first.response is not None and first.response.sql == "SELECT 1"
    assert first.response.retrieval is not None
    assert [t.name for t in first.response.retrieval.tables] == ["sales.orders"]
    assert second.response is not None and second.response.refused
    assert second.response.retrieval is None  # no trace was recorded
    assert first.probe is None and first.probe_error_class is None


def test_a_missing_item_is_an_error_not_a_gap(tmp_path: Path) -> None:
    """Every item gets an outcome; one without a line is an invalid_response."""
    path = _write(tmp_path / "p.jsonl", {"case_id": "orders-count", "phrasing": 0, "sql": "x"})
    items = build_items(sample_case_set(), TWINS)
    outcomes = asyncio.run(ReplayClient(path).ask_all(items, "replay"))
    assert [o.item_id for o in outcomes] == [i.item_id for i in items]
    assert outcomes[0].response is not None
    missing = outcomes[1:]
    assert missing and all(
        (o.error_class, o.message) == ("invalid_response", MISSING) for o in missing
    )


def test_replay_is_not_isolated_unless_the_header_says_so(tmp_path: Path) -> None:
    """Nothing in a recording proves the model could not see the case; the header may vouch."""
    plain = ReplayClient(_write(tmp_path / "a.jsonl", {"case_id": "a", "phrasing": 0, "sql": "x"}))
    plain.health()
    assert plain.isolated is False
    vouched = ReplayClient(
        _write(
            tmp_path / "b.jsonl",
            {"meta": {"supports_exclusions": True, "model": "m"}},
            {"case_id": "a", "phrasing": 0, "sql": "x"},
        )
    )
    assert vouched.health().supports_exclusions is True and vouched.isolated is True


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("{not json", "not JSON"),
        ('{"case_id": "a", "sql": "x"}', "phrasing"),
        ('{"case_id": "a", "phrasing": "0", "sql": "x"}', "phrasing"),
        ('{"case_id": "a", "phrasing": 0, "sql": "x", "tabels": []}', "tabels"),
    ],
)
def test_a_malformed_line_names_file_and_line(tmp_path: Path, line: str, problem: str) -> None:
    """A broken recording is a configuration error pointing at the line to fix."""
    path = tmp_path / "p.jsonl"
    path.write_text('{"case_id": "ok", "phrasing": 0, "sql": "x"}\n' + line + "\n")
    with pytest.raises(SutError, match=rf"p\.jsonl:2: .*{problem}"):
        ReplayClient(path)


def test_a_duplicated_item_is_refused(tmp_path: Path) -> None:
    """Two predictions for one item would make the score depend on line order."""
    row = {"case_id": "a", "phrasing": 0, "sql": "x"}
    with pytest.raises(SutError, match="second prediction for a#0"):
        ReplayClient(_write(tmp_path / "p.jsonl", row, row))


def test_a_missing_file_is_a_configuration_error(tmp_path: Path) -> None:
    """The path is named so the user can fix it."""
    with pytest.raises(SutError, match="does not exist"):
        ReplayClient(tmp_path / "nope.jsonl")


@pytest.mark.parametrize("text", ["", "\n\n", '{"meta": {"supports_exclusions": true}}\n'])
def test_a_file_without_predictions_is_refused(tmp_path: Path, text: str) -> None:
    """An empty file would make every item an agent error in a run that says it succeeded."""
    path = tmp_path / "p.jsonl"
    path.write_text(text)
    with pytest.raises(SutError, match="holds no predictions"):
        ReplayClient(path)
