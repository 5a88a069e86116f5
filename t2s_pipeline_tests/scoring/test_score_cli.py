"""``t2s score --json``: one pair on a live database, with the ceilings a run would record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from t2s_pipeline.cli import main

SITES = "SELECT site_id, region_cd FROM sales.sites"


def _score(warehouse: Path, capsys: pytest.CaptureFixture[str], gold: str, candidate: str) -> dict:
    code = main(["score", "--db", str(warehouse), "--gold", gold, "--candidate", candidate,
                 "--json"])  # fmt: skip
    assert code == 0
    return dict(json.loads(capsys.readouterr().out))


def test_equal_queries_match_with_no_ceiling(
    warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reordered, aliased columns over the same rows: an exact match, nothing limiting it."""
    data = _score(warehouse, capsys, SITES, "SELECT region_cd AS r, site_id AS s FROM sales.sites")
    assert data["exact_match"] is True and data["ceilings"] == []
    assert data["gold"]["status"] == data["candidate"]["status"] == "ok"


def test_a_failed_gold_is_a_ceiling(warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A gold query that does not run limits what the pair can say: gold_failed, as in a run."""
    data = _score(warehouse, capsys, "SELECT no_such_column FROM sales.sites", SITES)
    assert data["gold"]["status"] == "error"
    assert data["ceilings"] == ["gold_failed"]


@pytest.mark.parametrize(
    "candidate", ["SELECT * FROM read_csv('/etc/hostname')", "SELECT FROM WHERE (("]
)
def test_a_refused_candidate_is_a_ceiling(
    warehouse: Path, capsys: pytest.CaptureFixture[str], candidate: str
) -> None:
    """The guard refuses a file read and text it cannot parse: both are the refused ceiling."""
    data = _score(warehouse, capsys, SITES, candidate)
    assert data["candidate"]["status"] == "refused"
    assert data["ceilings"] == ["refused"]
    assert data["exact_match"] is False


@pytest.mark.parametrize(
    ("db", "expected"),
    [
        ("postgresql://u:secret@127.0.0.1:1/db", "cannot open postgresql://u:***@127.0.0.1:1/db"),
        ("postgresql://u:secret@[bad", "not a valid PostgreSQL URL"),
        ("README.md", "cannot open README.md"),
    ],
)
def test_a_database_that_cannot_be_opened_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], db: str, expected: str
) -> None:
    """No traceback: exit 2 with the database named (password masked) and the fix."""
    code = main(["score", "--db", db, "--gold", "SELECT 1", "--candidate", "SELECT 1"])
    err = capsys.readouterr().err
    assert code == 2 and expected in err and "Fix:" in err and "secret" not in err


def test_a_missing_sql_file_is_a_clear_error(
    warehouse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nofile.sql"
    code = main(["score", "--db", str(warehouse), "--gold", f"@{missing}", "--candidate", "x"])
    assert code == 2 and f"cannot read SQL from {missing}" in capsys.readouterr().err
