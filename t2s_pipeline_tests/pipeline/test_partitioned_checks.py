"""Each run partition has its own check status: a later run that passes does not hide an
earlier run's failure (SPEC 13)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from t2s_pipeline.assets.evaluation import FAST_CHECKS
from t2s_pipeline.assets.launch import run_config
from t2s_pipeline.cases import load_cases
from t2s_pipeline_tests.sut import foreign_service

from .conftest import Project


def _statuses(instance: dg.DagsterInstance, asset: str, check: str) -> dict[str, str]:
    key = dg.AssetCheckKey(dg.AssetKey(asset), check)
    infos = instance.event_log_storage.get_asset_check_partition_info([key])
    return {str(i.partition_key): i.latest_execution_status.value for i in infos}


def test_a_failed_check_stays_failed_on_its_own_partition(
    project: Project, instance: dg.DagsterInstance
) -> None:
    foreign_service.ANSWERS.clear()
    callable_ = "t2s_pipeline_tests.sut.foreign_service:answer_async"
    leaky = project.config("leaky", sut={"kind": "python", "callable": callable_})
    honest = project.config(
        "honest", sut={"kind": "python", "callable": callable_, "supports_exclusions": True}
    )
    first = run_config(leaky, project.settings, instance, checks=FAST_CHECKS)
    second = run_config(honest, project.settings, instance, checks=FAST_CHECKS)
    assert not first.success and second.success
    assert any(f.startswith("isolation") for f in first.failed_checks)
    statuses = _statuses(instance, "sut_responses", "isolation")
    assert statuses[first.run_id] == "FAILED"
    assert statuses[second.run_id] == "SUCCEEDED"
    # Every check has a status on each partition it evaluated (not one latest status).
    for asset, check in (
        ("gold_results", "gold_executes"),
        ("output_scores", "scorer_self_test"),
        ("run_summary", "ceilings"),
        ("run_summary", "regression"),
    ):
        assert second.run_id in _statuses(instance, asset, check), check
    assert _statuses(instance, "gold_results", "gold_executes")[second.run_id] == "SUCCEEDED"


def test_a_run_says_which_configuration_and_sut_it_evaluated(
    project: Project, instance: dg.DagsterInstance
) -> None:
    sut = {"kind": "python", "callable": "t2s_pipeline_tests.sut.foreign_service:answer_async"}
    config = project.config("tagged", sut=sut, labels={"model": "m-7", "prompt_version": "p3"})
    outcome = run_config(config, project.settings, instance, checks=[])
    runs = [r for r in instance.get_runs() if r.tags.get("dagster/partition") == outcome.run_id]
    assert runs
    tags = runs[0].tags
    assert tags["t2s/config"] == "tagged" and tags["t2s/sut_kind"] == "python"
    assert tags["t2s/sut"].startswith("python:") and tags["t2s/label/model"] == "m-7"
    event = instance.get_latest_materialization_event(dg.AssetKey("items"))
    assert event is not None and event.asset_materialization is not None
    metadata = event.asset_materialization.metadata
    assert "tagged (python python:" in metadata["title"].value
    assert metadata["run/label/prompt_version"].value == "p3"


def test_a_ceiling_count_leads_to_its_items(project: Project, instance: dg.DagsterInstance) -> None:
    foreign_service.ANSWERS.clear()
    foreign_service.ANSWERS.update(
        {case.question: case.gold_sql for case in load_cases(project.settings.cases_dir).cases[:5]}
    )
    sut = {"kind": "python", "callable": "t2s_pipeline_tests.sut.foreign_service:answer_async"}
    outcome = run_config(
        project.config("ceilinged", sut=sut), project.settings, instance, checks=[]
    )
    event = instance.get_latest_materialization_event(dg.AssetKey("output_scores"))
    assert event is not None and event.asset_materialization is not None
    metadata = event.asset_materialization.metadata
    refused = metadata["ceiling/refused"].value
    assert refused == project.n_cases - 5
    table = metadata["ceiling_items"].value
    rows = [r.data for r in table.records if r.data["ceiling"] == "refused"]
    assert len(rows) == refused
    assert rows[0]["show"] == f"t2s show {outcome.run_id} --item {rows[0]['item_id']}"


def _check(instance: dg.DagsterInstance, partition: str, name: str) -> dg.AssetCheckEvaluation:
    run = next(r for r in instance.get_runs() if r.tags.get("dagster/partition") == partition)
    records = instance.get_records_for_run(run_id=run.run_id).records
    for record in records:
        event = record.event_log_entry.dagster_event
        if event is not None and event.event_type_value == "ASSET_CHECK_EVALUATION":
            data = event.event_specific_data
            if isinstance(data, dg.AssetCheckEvaluation) and data.check_name == name:
                return data
    raise AssertionError(f"no evaluation of {name}")


def test_the_ceilings_check_warns_on_a_rise_not_on_a_normal_run(
    project: Project, instance: dg.DagsterInstance
) -> None:
    from t2s_pipeline.assets.evaluation import ceilings

    cases = load_cases(project.settings.cases_dir).cases
    foreign_service.ANSWERS.clear()
    foreign_service.ANSWERS.update({case.question: case.gold_sql for case in cases})
    sut = {
        "kind": "python",
        "callable": "t2s_pipeline_tests.sut.foreign_service:answer_async",
        "retrieve": "t2s_pipeline_tests.sut.foreign_service:retrieve",
        "supports_exclusions": True,
    }
    outcome = run_config(
        project.config("all-answered", sut=sut), project.settings, instance, checks=[ceilings]
    )
    first = _check(instance, outcome.run_id, "ceilings")
    assert first.passed, first.description
    for case in cases[:20]:
        del foreign_service.ANSWERS[case.question]
    outcome = run_config(
        project.config("some-refused", sut=sut, compare_to="all-answered"),
        project.settings,
        instance,
        checks=[ceilings],
    )
    second = _check(instance, outcome.run_id, "ceilings")
    assert not second.passed and second.severity == dg.AssetCheckSeverity.WARN
    assert second.description is not None and "refused rose 0 -> 20" in second.description
    assert "covers 20 of" in second.description  # 20 of 127 items is over the 10% share


def test_a_partition_added_by_hand_registers_from_its_config_or_says_how_to_add_runs(
    project: Project, instance: dg.DagsterInstance
) -> None:
    """The UI's "Add partition": the run id a configuration gives today runs end to end; any
    other key fails at its first step with the way runs are added."""
    from t2s_pipeline.assets.evaluation import RUN_ASSETS
    from t2s_pipeline.assets.judge import JUDGE_ASSETS
    from t2s_pipeline.config import load_config
    from t2s_pipeline.runs import spec_for

    path = project.config("by-hand")
    run_id = spec_for(load_config(path), path).run_id
    registry = Path(project.settings.registry_dir)
    assert not (registry / f"{run_id}.json").exists()
    instance.add_dynamic_partitions("eval_run", [run_id, "by-hand-00000000", "nothing-here"])
    resources = {"settings": project.settings}
    done = dg.materialize([*RUN_ASSETS, *JUDGE_ASSETS], partition_key=run_id,
                          instance=instance, resources=resources)  # fmt: skip
    assert done.success and (registry / f"{run_id}.json").exists()
    for key, words in (
        ("by-hand-00000000", f"gives run {run_id} today"),
        ("nothing-here", "is not registered"),
    ):
        failed = dg.materialize([*RUN_ASSETS, *JUDGE_ASSETS], partition_key=key,
                                instance=instance, resources=resources, raise_on_error=False)  # fmt: skip
        assert not failed.success
        failures = failed.get_step_failure_events()
        assert [e.step_key for e in failures] == ["items"]
        message = str(failures[0].event_specific_data.error)  # type: ignore[union-attr]
        assert words in message and "configs/" in message
