"""What the UI shows: the webserver's GraphQL API sees assets, the partition, metadata, checks."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import dagster as dg
import httpx
import pytest

from t2s_pipeline.assets.evaluation import FAST_CHECKS
from t2s_pipeline.assets.launch import run_config

from .conftest import Project

# Plotted keys with one slash that are not a family's mean.
_NOT_MEANS = {"ceiling", "ex_by_difficulty", "dagster"}

QUERY = """
query ($run: String!) {
  assetNodes { assetKey { path } }
  summary: assetOrError(assetKey: {path: ["run_summary"]}) {
    ... on Asset {
      assetMaterializations(partitions: [$run], limit: 1) {
        partition
        metadataEntries {
          label
          ... on FloatMetadataEntry { floatValue }
          ... on IntMetadataEntry { intValue }
          ... on MarkdownMetadataEntry { mdStr }
        }
      }
    }
  }
  checks: assetNodeOrError(assetKey: {path: ["output_scores"]}) {
    ... on AssetNode {
      partitionKeysByDimension { partitionKeys }
      assetChecksOrError {
        ... on AssetChecks { checks { name executionForLatestMaterialization { status } } }
      }
    }
  }
}
"""


def _graphql(url: str, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        response = httpx.post(
            f"{url}/graphql", json={"query": QUERY, "variables": {"run": run_id}}, timeout=60
        )
        data = response.json()
        nodes = (data.get("data") or {}).get("assetNodes") or []
        if nodes or time.monotonic() > deadline:  # the code location may still be loading
            return data
        time.sleep(1)


@pytest.mark.slow
def test_ui_shows_assets_partition_metadata_and_checks(
    project: Project, home: Path, webserver: str
) -> None:
    """A materialised partition is visible through the same API the UI reads."""
    instance = dg.DagsterInstance.from_config(str(home))
    outcome = run_config(project.config("ui"), project.settings, instance, checks=FAST_CHECKS)
    assert outcome.success
    data = _graphql(webserver, outcome.run_id)
    assert "errors" not in data, data.get("errors")
    result = data["data"]
    keys = {"/".join(node["assetKey"]["path"]) for node in result["assetNodes"]}
    assert {"items", "sut_responses", "output_scores", "run_summary", "gold_cases"} <= keys
    [materialization] = result["summary"]["assetMaterializations"]
    assert materialization["partition"] == outcome.run_id
    metadata = {entry["label"]: entry for entry in materialization["metadataEntries"]}
    assert metadata["n_items"]["intValue"] == project.n_cases
    assert "cells/recall" in metadata and "exact/ex/n" in metadata
    # Curated plots: the readable summary first; each plotted mean with its interval; no zero
    # ceiling and no per-metric n beside EX's.
    entries = materialization["metadataEntries"]
    assert entries[0]["label"] == "summary" and entries[0]["mdStr"].startswith("### Run")
    plotted = [e["label"] for e in entries if "floatValue" in e or "intValue" in e]
    means = [k for k in plotted if k.count("/") == 1 and k.split("/")[0] not in _NOT_MEANS]
    assert means and all(f"{k}/ci_low" in plotted and f"{k}/ci_high" in plotted for k in means)
    ceilings = [e for e in entries if e["label"].startswith("ceiling/")]
    assert all(e["intValue"] > 0 for e in ceilings)
    assert [k for k in plotted if k.endswith("/n")] == ["exact/ex/n"]
    # Headlines only: the first round plotted 76 keys, the 16 component part means among them.
    assert not [k for k in plotted if k.startswith("component/")]
    assert len(plotted) <= 60, plotted
    node = result["checks"]
    assert outcome.run_id in node["partitionKeysByDimension"][0]["partitionKeys"]
    checks = {c["name"]: c for c in node["assetChecksOrError"]["checks"]}
    assert checks["scorer_self_test"]["executionForLatestMaterialization"]["status"] == "SUCCEEDED"
