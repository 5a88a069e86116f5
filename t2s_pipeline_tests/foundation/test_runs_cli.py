"""``t2s runs`` on a store with no runs and with a run that never finished."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd
import pytest

from t2s_pipeline.cli import main
from t2s_pipeline.store import ResultsStore


def test_no_runs_says_how_to_make_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "--results", str(tmp_path / "r.duckdb")]) == 0
    assert "no runs in" in capsys.readouterr().out


def test_an_unfinished_run_is_marked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run that failed midway keeps its row but never gets an end time: say so."""
    store = ResultsStore(tmp_path / "r.duckdb")
    row = {"run_id": "x-1", "config_name": "x", "started_at": dt.datetime(2026, 1, 1),
           "ended_at": pd.NaT, "summary_json": None}  # fmt: skip
    frame = pd.DataFrame([row]).astype({"ended_at": "datetime64[us]", "summary_json": "string"})
    store.replace_run("runs", "x-1", frame)
    assert main(["runs", "--results", str(tmp_path / "r.duckdb")]) == 0
    out = capsys.readouterr().out
    assert "x-1  (config x, 0 items)  NOT FINISHED" in out and "undefined (n=0)" in out


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("kind", ["http", "replay"])
def test_run_checks_the_sut_before_registering(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """An unreachable SUT or an unreadable replay file stops `t2s run` before any run exists."""
    (tmp_path / "bad.jsonl").write_text('{"meta": {}}\nnot json\n')
    sut = (
        f"  kind: http\n  url: http://127.0.0.1:{_closed_port()}/\n"
        if kind == "http"
        else f"  kind: replay\n  file: {tmp_path / 'bad.jsonl'}\n"
    )
    config = tmp_path / "c.yaml"
    config.write_text(f"name: c\ncases: cases/erp\nsut:\n{sut}")
    results = tmp_path / "r.duckdb"
    assert main(["run", "--config", str(config), "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert "the SUT is not ready" in err and "no run was registered" in err
    assert ("bad.jsonl:2: not JSON" in err) if kind == "replay" else ("Connection refused" in err)
    assert ResultsStore(results).read("runs").empty


def test_run_refuses_an_empty_replay_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No run is registered for a replay file with no predictions; the error says what to write."""
    (tmp_path / "empty.jsonl").write_text("")
    config = tmp_path / "c.yaml"
    config.write_text(
        f"name: c\ncases: cases/erp\nsut:\n  kind: replay\n  file: {tmp_path / 'empty.jsonl'}\n"
    )
    results = tmp_path / "r.duckdb"
    assert main(["run", "--config", str(config), "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert "holds no predictions" in err and "no run was registered" in err
    assert ResultsStore(results).read("runs").empty


def test_run_refuses_a_replay_file_that_misses_items(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A short replay file (here: one prediction) would score every other item as an agent
    error; the run is not started, and the error says how many are missing."""
    (tmp_path / "short.jsonl").write_text(
        '{"case_id": "rev-card-last-month", "phrasing": 0, "sql": "SELECT 1"}\n'
    )
    config = tmp_path / "c.yaml"
    config.write_text(
        f"name: c\ncases: cases/erp\nsut:\n  kind: replay\n  file: {tmp_path / 'short.jsonl'}\n"
    )
    results = tmp_path / "r.duckdb"
    assert main(["run", "--config", str(config), "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert "has no prediction for" in err and "set phrasings: main" in err
    assert ResultsStore(results).read("runs").empty
