"""Sensors turn new or changed configurations, and changed gold cases, into new runs."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from t2s_pipeline.definitions import build_definitions
from t2s_pipeline.runs import load_spec

from .conftest import Project


def _tick(
    project: Project, name: str, instance: dg.DagsterInstance, cursor: str | None
) -> tuple[list[str], str | None]:
    """Evaluate one tick of a sensor; apply its partition requests like the daemon would."""
    defs = build_definitions(project.settings)
    sensor = defs.get_sensor_def(name)
    context = dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs)
    result = sensor(context)
    if isinstance(result, dg.SkipReason):
        return [], context.cursor
    assert isinstance(result, dg.SensorResult)
    for request in result.dynamic_partitions_requests or []:
        assert isinstance(request, dg.AddDynamicPartitionsRequest)
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    keys = [r.partition_key for r in result.run_requests or [] if r.partition_key]
    return keys, context.cursor


def test_new_and_changed_configs_become_partitions(
    project: Project, instance: dg.DagsterInstance
) -> None:
    """A new config is one run; an unchanged tick is none; an edit is a new partition."""
    path = project.config("base")
    first, cursor = _tick(project, "config_sensor", instance, None)
    assert len(first) == 1 and first[0].startswith("base-")
    assert instance.has_dynamic_partition("eval_run", first[0])
    spec = load_spec(first[0], Path(project.settings.registry_dir))
    assert spec.config_path == str(path)
    again, cursor = _tick(project, "config_sensor", instance, cursor)
    assert again == []
    project.config("base", sut={"kind": "builtin", "tables_k": 2})
    changed, cursor = _tick(project, "config_sensor", instance, cursor)
    assert len(changed) == 1 and changed[0] != first[0] and changed[0].startswith("base-")


def test_invalid_config_is_skipped_not_fatal(
    project: Project, instance: dg.DagsterInstance
) -> None:
    """One broken file must not stop the other configurations from running."""
    project.config("good")
    (Path(project.settings.configs_dir) / "broken.yaml").write_text("name: Not Valid!\n")
    runs, _ = _tick(project, "config_sensor", instance, None)
    assert len(runs) == 1 and runs[0].startswith("good-")


def test_changed_gold_cases_rerun_active_configs(
    project: Project, instance: dg.DagsterInstance
) -> None:
    """Editing a gold case gives every active configuration a new run partition."""
    project.config("one")
    project.config("two", sut={"kind": "builtin", "examples_k": 1})
    registered, _ = _tick(project, "config_sensor", instance, None)
    assert len(registered) == 2
    baseline, cursor = _tick(project, "gold_case_sensor", instance, None)
    assert baseline == []
    case = Path(project.settings.cases_dir) / "cancelled-orders-count.yaml"
    case.write_text(case.read_text() + "\n# edited\n")
    rerun, _ = _tick(project, "gold_case_sensor", instance, cursor)
    assert len(rerun) == 2
    assert not set(rerun) & set(registered)
    assert {r.split("-")[0] for r in rerun} == {"one", "two"}
    idle, _ = _tick(project, "gold_case_sensor", instance, None)
    assert idle == []


def test_a_case_added_while_the_sensor_was_off_still_triggers_runs(
    project: Project, instance: dg.DagsterInstance
) -> None:
    """The comparison is with the case set each configuration's latest run used, not with a
    cursor the sensor wrote on its first tick."""
    project.config("one")
    registered, _ = _tick(project, "config_sensor", instance, None)
    source = Path(project.settings.cases_dir) / "cancelled-orders-count.yaml"
    added = source.with_name("cancelled-orders-count-copy.yaml")
    added.write_text(
        source.read_text().replace("id: cancelled-orders-count", "id: cancelled-orders-count-copy")
    )
    defs = build_definitions(project.settings)
    context = dg.build_sensor_context(instance=instance, definitions=defs)
    result = defs.get_sensor_def("gold_case_sensor")(context)
    assert isinstance(result, dg.SensorResult)
    keys = [r.partition_key for r in result.run_requests or []]
    assert len(keys) == 1 and keys[0].startswith("one-") and keys[0] not in registered
    assert result.run_requests[0].tags["t2s/config"] == "one"
    skip = defs.get_sensor_def("gold_case_sensor")(
        dg.build_sensor_context(instance=instance, definitions=defs)
    )
    assert isinstance(skip, dg.SkipReason) and "nothing changed" in str(skip.skip_message)
