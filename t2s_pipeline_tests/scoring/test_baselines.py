"""A run's baseline is explicit (SPEC 13): compare_to, else the champion, never the run that
merely started before it."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from t2s_pipeline.cli import main
from t2s_pipeline.config import RunConfig
from t2s_pipeline.errors import ConfigError
from t2s_pipeline.run.baseline import baseline_for, champion, promote
from t2s_pipeline.store import ResultsStore

START = dt.datetime(2026, 12, 1, 9, 0)


def _run(
    store: ResultsStore,
    run_id: str,
    config: str,
    minute: int,
    cases: str = "cases/erp",
    compare_to: str | None = None,
    finished: bool = True,
) -> None:
    config_json = {"name": config, "cases": cases, "compare_to": compare_to}
    row = {
        "config_name": config,
        "config_json": json.dumps(config_json),
        "cases_dir": cases,
        "started_at": START + dt.timedelta(minutes=minute),
        "ended_at": START + dt.timedelta(minutes=minute + 5) if finished else pd.NaT,
    }
    store.replace_run("runs", run_id, pd.DataFrame([row]))


@pytest.fixture
def store(tmp_path: Path) -> ResultsStore:
    return ResultsStore(tmp_path / "results")


def test_without_compare_to_or_a_champion_a_run_has_no_baseline(
    store: ResultsStore, tmp_path: Path
) -> None:
    """The run that started just before (another configuration) is not a baseline."""
    _run(store, "other-1", "other", 0)
    _run(store, "mine-1", "mine", 10)
    baseline = baseline_for(store, "mine-1", tmp_path / "decisions")
    assert baseline.run_id is None and "t2s promote" in baseline.chosen_by


def test_compare_to_a_configuration_takes_its_latest_finished_run_whatever_the_start_order(
    store: ResultsStore, tmp_path: Path
) -> None:
    _run(store, "base-1", "base", 0)
    _run(store, "base-2", "base", 20)
    _run(store, "base-3", "base", 25, finished=False)  # still running: not a baseline
    _run(store, "noise-1", "noise", 30)
    _run(store, "base-other-cases", "base", 31, cases="cases/shop")
    _run(store, "mine-1", "mine", 5, compare_to="base")  # started before base-2 finished
    baseline = baseline_for(store, "mine-1", tmp_path / "decisions")
    assert baseline.run_id == "base-2"
    assert baseline.chosen_by == "compare_to: base (its latest finished run)"


def test_compare_to_a_run_id_and_to_a_name_with_no_run_yet(
    store: ResultsStore, tmp_path: Path
) -> None:
    _run(store, "base-1", "base", 0)
    _run(store, "base-2", "base", 20)
    _run(store, "mine-1", "mine", 30, compare_to="base-1")
    assert baseline_for(store, "mine-1", tmp_path).run_id == "base-1"
    _run(store, "mine-2", "mine", 40, compare_to="nobody")
    missing = baseline_for(store, "mine-2", tmp_path)
    assert missing.run_id is None and "no finished run" in missing.chosen_by


def test_the_champion_is_the_last_promoted_run_of_the_case_set(
    store: ResultsStore, tmp_path: Path
) -> None:
    decisions = tmp_path / "decisions"
    _run(store, "a-1", "a", 0)
    _run(store, "b-1", "b", 10)
    _run(store, "shop-1", "shop", 15, cases="cases/shop")
    _run(store, "c-1", "c", 20)
    promote(store, "b-1", "jane", "narrower retrieval is intended", decisions)
    promote(store, "shop-1", "ann", "another case set", decisions)
    assert baseline_for(store, "c-1", decisions).run_id == "b-1"
    assert baseline_for(store, "c-1", decisions).chosen_by.startswith("champion, promoted by jane")
    assert baseline_for(store, "b-1", decisions).run_id is None  # not its own baseline
    stored = yaml.safe_load((decisions / "promotions" / "b-1.yaml").read_text())
    assert stored["promoted_by"] == "jane" and stored["cases"] == "cases/erp"
    champ = champion(store, "cases/erp", decisions)
    assert champ is not None and champ.run_id == "b-1"


def test_promote_refuses_an_unfinished_or_unknown_run_and_an_empty_reason(
    store: ResultsStore, tmp_path: Path
) -> None:
    _run(store, "r-1", "r", 0, finished=False)
    with pytest.raises(ConfigError, match="has not finished"):
        promote(store, "r-1", "jane", "why", tmp_path)
    with pytest.raises(ConfigError, match="--by WHO --reason WHY"):
        promote(store, "r-1", "jane", " ", tmp_path)


def test_t2s_promote_records_the_decision(
    store: ResultsStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(store, "r-1", "r", 0)
    decisions = tmp_path / "decisions"
    argv = ["promote", "r-1", "--by", "jane", "--reason", "best so far"]
    argv += ["--results", str(store.path), "--decisions", str(decisions)]
    assert main(argv) == 0
    assert "r-1 is the champion of cases/erp" in capsys.readouterr().out
    assert (decisions / "promotions" / "r-1.yaml").is_file()
    assert main(["promote", "nope", "--by", "j", "--reason", "x", "--results", str(store.path),
                 "--decisions", str(decisions)]) == 2  # fmt: skip
    assert "has not finished" in capsys.readouterr().err


def test_an_unset_compare_to_keeps_the_run_id_and_a_set_one_changes_it() -> None:
    plain = RunConfig(name="base")
    assert plain.run_id("0" * 64) == RunConfig(name="base", compare_to=None).run_id("0" * 64)
    assert plain.run_id("0" * 64) != RunConfig(name="base", compare_to="x").run_id("0" * 64)
