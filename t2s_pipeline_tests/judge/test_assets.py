"""The judge lane as Dagster assets on a real baseline run, with a fake judge model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from t2s_pipeline.agent.server import serve_in_thread
from t2s_pipeline.assets.judge import JUDGE_ASSETS
from t2s_pipeline.assets.launch import run_config
from t2s_pipeline.cases import load_cases
from t2s_pipeline.judge.calibration import calibrate
from t2s_pipeline.judge.inputs import candidate_sql, deterministic_categories
from t2s_pipeline.judge.labels import apply_labels, label_for, load_labels
from t2s_pipeline.judge.report import judge_section, section_markdown
from t2s_pipeline_tests.pipeline.conftest import Project

from .fake_llm import KEY, FakeJudge, question_of

BROKEN = "card-payment-count#1"  # the fake answers this labelled item with prose: a failure
# The demo labels judge the answers of the nearest-example agent with leave-one-out on
# (configs/inactive/nearest-example.yaml); on another agent's answers they are stale.
LABELLED_SUT = {"kind": "builtin", "isolate": True, "generation": "nearest_example"}


def _oracle(project: Project) -> Callable[[str], str]:
    """Judge message -> fake behaviour: the human label judging that item's candidate SQL where
    there is one, else wrong_metric."""
    labels = load_labels(Path(project.settings.cases_dir) / "labels.yaml")
    items = {
        question: f"{case.id}#{n}"
        for case in load_cases(project.settings.cases_dir).cases
        for n, question in enumerate((case.question, *case.phrasings))
    }

    def behave(message: str) -> str:
        item = items[question_of(message)]
        sql = message.split("Candidate SQL:\n", 1)[1].split("\n\nGold result:", 1)[0]
        label = label_for(labels.get(item, ()), None if sql == "(none)" else sql)
        if item == BROKEN:
            return "prose"
        return f"answer:{label.primary if label else 'wrong_metric'}"

    return behave


def _metadata(instance: dg.DagsterInstance, asset: str) -> dict[str, object]:
    event = instance.get_latest_materialization_event(dg.AssetKey(asset))
    assert event is not None and event.asset_materialization is not None
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


def test_judge_lane_on_a_baseline_run_is_cached_and_calibrated(
    project: Project, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every failed item gets a verdict or a failure class; a rerun makes no call; both the
    judge and the deterministic diagnosis are measured against the demo labels."""
    monkeypatch.setenv("T2S_TEST_JUDGE_KEY", KEY)
    fake = FakeJudge("anthropic", behave=_oracle(project), whole_message=True)
    resources = {"settings": project.settings}
    with serve_in_thread(fake.app()) as url:
        judge = {"enabled": True, "api": "anthropic", "base_url": url, "model": "fake-judge-1",
                 "key_env": "T2S_TEST_JUDGE_KEY", "agreement_floor": 0.9}  # fmt: skip
        config = project.config("judged", phrasings="all", sut=LABELLED_SUT, judge=judge)
        outcome = run_config(config, project.settings, instance, checks=[])
        assert outcome.success
        run = dg.materialize(
            JUDGE_ASSETS, partition_key=outcome.run_id, instance=instance, resources=resources
        )
        assert run.success
        calls = len(fake.calls)
        rerun = dg.materialize(
            JUDGE_ASSETS, partition_key=outcome.run_id, instance=instance, resources=resources
        )
        assert rerun.success
    store = project.settings.store()
    deterministic = deterministic_categories(store, outcome.run_id)
    failed_items = {i for i, c in deterministic.items() if c != "correct"}
    verdicts = store.read("judge_diagnoses", outcome.run_id).set_index("item_id")
    assert set(verdicts.index) == failed_items and calls == len(failed_items)
    assert verdicts.loc[BROKEN, "failure_class"] == "malformed"
    assert verdicts["category"].notna().sum() == len(failed_items) - 1
    assert len(fake.calls) == calls  # the rerun read everything from the cache
    meta = _metadata(instance, "judge_diagnoses")
    assert (meta["cache_hits"], meta["cache_misses"]) == (len(failed_items), 0)

    calibration = store.read("judge_calibration", outcome.run_id).set_index("lane")
    labels = apply_labels(
        load_labels(Path(project.settings.cases_dir) / "labels.yaml"),
        candidate_sql(store, outcome.run_id),
    )
    expected = calibrate("deterministic", labels.categories, deterministic)
    # The judge lane leaves out the item it failed on.
    assert calibration.loc["judge", "n"] == len(set(labels.categories) - {BROKEN})
    assert calibration.loc["judge", "agreement"] == 1.0 and calibration.loc["judge", "calibrated"]
    assert calibration.loc["deterministic", "n"] == expected.n == len(labels.categories) >= 40
    assert calibration.loc["deterministic", "agreement"] == pytest.approx(expected.agreement)
    assert calibration.loc["deterministic", "kappa"] == pytest.approx(expected.kappa)
    section = judge_section(store, outcome.run_id)["judge"]
    assert isinstance(section, dict) and section["calibrated"] is True
    assert section["cache_hits"] == len(failed_items) and section["failures"] == {"malformed": 1}
    assert section_markdown(section).startswith("Judge histogram (calibrated)")
    print(
        f"\ndeterministic diagnosis vs demo labels: n={expected.n} "
        f"agreement={expected.agreement:.3f} kappa={expected.kappa:.3f}\n"
        + expected.matrix.to_markdown()
    )


def test_disabled_judge_records_nothing_but_still_measures_the_diagnosis(
    project: Project, instance: dg.DagsterInstance
) -> None:
    """Off by default: zero judge rows, metadata says so; the deterministic lane is calibrated."""
    config = project.config("plain", sut=LABELLED_SUT)
    outcome = run_config(config, project.settings, instance, checks=[])
    resources = {"settings": project.settings}
    assert dg.materialize(
        JUDGE_ASSETS, partition_key=outcome.run_id, instance=instance, resources=resources
    ).success
    store = project.settings.store()
    assert store.read("judge_diagnoses", outcome.run_id).empty
    assert _metadata(instance, "judge_diagnoses")["enabled"] is False
    calibration = store.read("judge_calibration", outcome.run_id).set_index("lane")
    labels = load_labels(Path(project.settings.cases_dir) / "labels.yaml")
    applied = apply_labels(labels, candidate_sql(store, outcome.run_id)).categories
    assert all(item.endswith("#0") for item in applied)  # phrasings: main asks phrasing 0 only
    assert calibration.loc["deterministic", "n"] == len(applied) > 0
    assert calibration.loc["judge", "n"] == 0 and not calibration.loc["judge", "calibrated"]
    assert _metadata(instance, "judge_calibration")["judge_calibrated"] is False
    section = judge_section(store, outcome.run_id)["judge"]
    assert isinstance(section, dict)
    assert section_markdown(section).startswith("Judge: disabled.\ndeterministic vs labels")
