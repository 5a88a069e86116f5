"""Import + predictions + a full pipeline run: EX is the known share of right predictions,
reported per the benchmark's own bands."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import dagster as dg
import pytest

from t2s_pipeline.assets.evaluation import FAST_CHECKS
from t2s_pipeline.assets.launch import run_config
from t2s_pipeline.benchmarks.imports import import_bird, import_spider
from t2s_pipeline.benchmarks.manifest import read_manifest
from t2s_pipeline.benchmarks.predictions import convert_predictions, write_replay_config
from t2s_pipeline.cases import load_cases
from t2s_pipeline.run.summary import summarise_run
from t2s_pipeline.scoring.summary import RunSummary
from t2s_pipeline_tests.benchmarks.conftest import Benchmark, settings_for


def _expected_ex(bands: list[str], right: set[int]) -> tuple[float, dict[str, float]]:
    per_band: dict[str, list[bool]] = defaultdict(list)
    for index, band in enumerate(bands):
        per_band[band].append(index in right)
    overall = len(right) / len(bands)
    return overall, {band: sum(v) / len(v) for band, v in per_band.items()}


def _run(
    kind: str, predictions: Path, cases: Path, root: Path, instance: dg.DagsterInstance
) -> RunSummary:
    replay = root / "preds" / f"{kind}.jsonl"
    convert_predictions(kind, predictions, cases, replay)
    config = write_replay_config(
        root / "configs" / f"{kind}-fix.yaml", cases, replay, kind, predictions
    )
    # cases_dir must name the imported folder: run_config's own override of it does not reach
    # the gold_cases asset (reported upstream).
    settings = settings_for(root, cases)
    # With the blocking checks: a replay (which cannot prove isolation) is scored, not stopped.
    outcome = run_config(config, settings, instance, checks=FAST_CHECKS)
    assert outcome.success
    return summarise_run(settings.store(), outcome.run_id)


def _assert_ex(summary: RunSummary, overall: float, per_band: dict[str, float]) -> None:
    assert summary.families["exact"]["ex"].mean == pytest.approx(overall)
    assert {band: m.mean for band, m in summary.ex_by_difficulty.items()} == pytest.approx(per_band)


@pytest.mark.slow
def test_spider_run_scores_the_known_right_predictions(
    spider: Benchmark, instance: dg.DagsterInstance, tmp_path: Path
) -> None:
    cases = tmp_path / "cases" / "spider-fix"
    import_spider(spider.files / "tables.json", spider.files / "dev.json", spider.db_dir, cases)
    expected = spider.expected()
    bands = [f"spider:{band}" for band in expected["bands"]]
    summary = _run("spider", spider.files / "pred.sql", cases, tmp_path, instance)
    _assert_ex(summary, *_expected_ex(bands, set(expected["right"])))
    assert summary.n_items == len(bands)
    # A replayed file proves nothing about isolation; no gold fails on its own database.
    assert summary.ceilings["not_isolated"] == len(bands)
    assert summary.ceilings["gold_failed"] == 0
    assert summary.diagnoses["all"]["correct"] == len(expected["right"])


@pytest.mark.slow
def test_bird_run_scores_the_known_right_predictions(
    bird: Benchmark, instance: dg.DagsterInstance, tmp_path: Path
) -> None:
    """A question with no prediction is an item error scored as a miss, never dropped."""
    cases = tmp_path / "cases" / "bird-fix"
    import_bird(bird.files / "dev.json", bird.db_dir, cases)
    expected = bird.expected()
    by_id = load_cases(cases).by_id()
    bands = [by_id[entry.case_id].difficulty for entry in read_manifest(cases).entries]
    summary = _run("bird", bird.files / "predict_dev.json", cases, tmp_path, instance)
    _assert_ex(summary, *_expected_ex(bands, set(expected["right"])))
    assert summary.ceilings["agent_error"] == len(expected["missing"])
    assert summary.ceilings["gold_failed"] == 0
