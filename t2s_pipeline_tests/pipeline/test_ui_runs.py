"""Issue 19's user path, read through the webserver's GraphQL API (what the UI shows) and a
real browser: three runs on one instance (two configurations, then a gold-case rerun that the
sensor asked for), each partition with its own check status, each comparison against its
declared baseline, a ceiling count that leads to its items, and the report in Chromium."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import dagster as dg
import httpx
import pytest

from t2s_pipeline.assets.evaluation import FAST_CHECKS, regression
from t2s_pipeline.assets.launch import run_config
from t2s_pipeline.assets.partitions import EVAL_RUN
from t2s_pipeline.definitions import build_definitions
from t2s_pipeline.run.baseline import promote

from .conftest import Project
from .test_report import chromium

RUN_VIEW = """
query ($run: String!) {
  checks: assetCheckExecutions(
    assetKey: {path: ["run_summary"]}, checkName: "regression", partition: $run, limit: 5
  ) { partition status evaluation { metadataEntries { label ... on TextMetadataEntry { text } } } }
  comparison: assetOrError(assetKey: {path: ["run_comparisons"]}) {
    ... on Asset { assetMaterializations(partitions: [$run], limit: 1) { runId metadataEntries {
      label ... on TextMetadataEntry { text } ... on PathMetadataEntry { path }
      ... on TableMetadataEntry { table { records } } } } }
  }
  scores: assetOrError(assetKey: {path: ["output_scores"]}) {
    ... on Asset { assetMaterializations(partitions: [$run], limit: 1) { metadataEntries {
      label ... on IntMetadataEntry { intValue } ... on TableMetadataEntry { table { records } }
    } } }
  }
  runs: runsOrError(filter: {tags: [{key: "dagster/partition", value: $run}]}) {
    ... on Runs { results { runId tags { key value } } }
  }
}
"""

INSTANCE_VIEW = """
{
  node: assetNodeOrError(assetKey: {path: ["run_summary"]}) { ... on AssetNode {
    assetChecksOrError { ... on AssetChecks { checks { name partitionStatuses {
      ... on AssetCheckDefaultPartitionStatuses { succeededPartitions failedPartitions }
    } } } }
  } }
  gold: assetOrError(assetKey: {path: ["gold_cases"]}) {
    ... on Asset { assetMaterializations(limit: 1) { runId metadataEntries {
      label ... on IntMetadataEntry { intValue } } } }
  }
}
"""


def _ask(url: str, query: str, variables: dict[str, str] | None = None) -> dict[str, Any]:
    deadline = time.monotonic() + 90
    while True:
        body = {"query": query, "variables": variables or {}}
        data = httpx.post(f"{url}/graphql", json=body, timeout=60).json()
        if data.get("data") and "errors" not in data:
            return dict(data["data"])
        if time.monotonic() > deadline:  # the code location may still be loading
            pytest.fail(f"GraphQL answered {json.dumps(data)[:2000]}")
        time.sleep(1)


def _entries(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {entry["label"]: entry for entry in entries}


def _sensor_rerun(project: Project, instance: dg.DagsterInstance, config: str) -> str:
    """Add a gold case, tick the gold-case sensor, and execute the run it requests for
    ``config`` as the daemon would (the eval job, on the requested partition and tags)."""
    source = Path(project.settings.cases_dir) / "cancelled-orders-count.yaml"
    added = source.with_name("cancelled-orders-count-again.yaml")
    added.write_text(
        source.read_text().replace("id: cancelled-orders-count", "id: cancelled-orders-count-again")
    )
    defs = build_definitions(project.settings)
    result = defs.get_sensor_def("gold_case_sensor")(
        dg.build_sensor_context(instance=instance, definitions=defs)
    )
    assert isinstance(result, dg.SensorResult)
    [request] = [r for r in result.run_requests or [] if r.tags["t2s/config"] == config]
    assert request.partition_key is not None
    instance.add_dynamic_partitions(EVAL_RUN, [request.partition_key])
    done = defs.get_job_def("eval_job").execute_in_process(
        partition_key=request.partition_key, instance=instance, tags=request.tags
    )
    assert done.success
    return request.partition_key


@pytest.mark.slow
def test_three_runs_read_in_the_ui_and_the_report(
    project: Project, home: Path, webserver: str
) -> None:
    instance = dg.DagsterInstance.from_config(str(home))
    settings = project.settings
    checks = [*FAST_CHECKS, regression]
    alpha = run_config(project.config("alpha"), settings, instance, checks=checks)
    assert alpha.success
    promote(settings.store(), alpha.run_id, "qa", "first run", Path(settings.decisions_dir))
    narrow = {"kind": "builtin", "tables_k": 1, "isolate": True}
    beta = run_config(
        project.config("beta", sut=narrow, compare_to="alpha"), settings, instance, checks=checks
    )
    rerun = _sensor_rerun(project, instance, "alpha")  # started after beta, same config as alpha

    views = {run: _ask(webserver, RUN_VIEW, {"run": run}) for run in (alpha.run_id, beta.run_id)}
    views[rerun] = _ask(webserver, RUN_VIEW, {"run": rerun})

    # Each partition's check shows its own status: beta regressed against alpha, the others not.
    status = {run: [c["status"] for c in view["checks"]] for run, view in views.items()}
    regressed = settings.store().read("regressions", rerun)
    assert status == {alpha.run_id: ["SUCCEEDED"], beta.run_id: ["FAILED"], rerun: ["SUCCEEDED"]}, (
        f"the rerun's regressions against alpha:\n{regressed.to_string()}"
    )
    partitions = {c["partition"] for view in views.values() for c in view["checks"]}
    assert partitions == set(views)
    [check] = [
        c
        for c in _ask(webserver, INSTANCE_VIEW)["node"]["assetChecksOrError"]["checks"]
        if c["name"] == "regression"
    ]
    assert beta.run_id in check["partitionStatuses"]["failedPartitions"]
    assert {alpha.run_id, rerun} <= set(check["partitionStatuses"]["succeededPartitions"])

    # Each comparison uses the declared baseline, not the run that started just before it:
    # beta names alpha by compare_to; the sensor's rerun of alpha (after beta) the champion.
    declared = {
        alpha.run_id: (None, "champion"),  # promoted after it ran: it had none of its own
        beta.run_id: (alpha.run_id, "compare_to: alpha"),
        rerun: (alpha.run_id, "champion, promoted by qa"),
    }
    for run, (baseline, chosen_by) in declared.items():
        [materialization] = views[run]["comparison"]["assetMaterializations"]
        entries = _entries(materialization["metadataEntries"])
        assert entries["baseline"]["text"] == (baseline or "none"), run
        if baseline:
            assert entries["baseline_chosen_by"]["text"].startswith(chosen_by), run
            assert entries["deltas"]["table"]["records"], run
        assert Path(entries["report"]["path"]).is_file()
    regressed = _entries(views[beta.run_id]["comparison"]["assetMaterializations"][0]
                         ["metadataEntries"])["regressed"]["table"]["records"]  # fmt: skip
    assert regressed and all(json.loads(r)["item"] for r in regressed)

    # Tags name the configuration on every run, the sensor's run included.
    for run, config in ((alpha.run_id, "alpha"), (beta.run_id, "beta"), (rerun, "alpha")):
        [dagster_run] = views[run]["runs"]["results"]
        tags = {t["key"]: t["value"] for t in dagster_run["tags"]}
        assert tags["t2s/config"] == config and tags["t2s/sut_kind"] == "builtin"
    assert tags["t2s/trigger"] == "gold cases changed"

    # A ceiling count leads to its items.
    [scores] = views[alpha.run_id]["scores"]["assetMaterializations"]
    entries = _entries(scores["metadataEntries"])
    counts = {k.split("/", 1)[1]: v["intValue"] for k, v in entries.items()
              if k.startswith("ceiling/")}  # fmt: skip
    assert counts and sum(counts.values()) > 0
    rows = [json.loads(r) for r in entries["ceiling_items"]["table"]["records"]]
    for ceiling, count in counts.items():
        listed = [r for r in rows if r["ceiling"] == ceiling]
        assert len(listed) == count, ceiling
        assert all(r["show"] == f"t2s show {alpha.run_id} --item {r['item_id']}" for r in listed)

    # gold_cases is part of each run: its latest materialisation is the sensor's run, with the
    # case that was added.
    [gold] = _ask(webserver, INSTANCE_VIEW)["gold"]["assetMaterializations"]
    assert gold["runId"] == views[rerun]["runs"]["results"][0]["runId"]
    assert _entries(gold["metadataEntries"])["n_cases"]["intValue"] == project.n_cases

    # The report the comparison points to opens in a browser, charts drawn.
    report = _entries(views[beta.run_id]["comparison"]["assetMaterializations"][0]
                      ["metadataEntries"])["report"]["path"]  # fmt: skip
    with chromium() as browser:
        page = browser.new_page()  # type: ignore[attr-defined]
        page.goto(Path(report).as_uri())
        assert page.locator("svg#ex-by-band circle.dot").count() >= 1
        assert page.locator("table#item-table tr.item").count() > 0
        assert alpha.run_id in page.content()
