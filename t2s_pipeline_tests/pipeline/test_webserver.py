"""What the UI shows: the webserver's GraphQL API sees assets, the partition, metadata, checks."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import httpx
import pytest

from t2s_pipeline.assets.evaluation import FAST_CHECKS
from t2s_pipeline.assets.launch import run_config

from .conftest import REPO, Project

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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "dagster_home"
    folder.mkdir()
    (folder / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return folder


@pytest.fixture
def webserver(home: Path) -> Iterator[str]:
    """dagster-webserver on loopback over the project's workspace.yaml and ``home``."""
    port = _free_port()
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    command = [sys.executable, "-m", "dagster_webserver", "-h", "127.0.0.1", "-p", str(port)]
    process = subprocess.Popen(
        [*command, "-w", str(REPO / "workspace.yaml")],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/server_info", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            pytest.fail("dagster-webserver did not start within 120 s")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


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
    node = result["checks"]
    assert outcome.run_id in node["partitionKeysByDimension"][0]["partitionKeys"]
    checks = {c["name"]: c for c in node["assetChecksOrError"]["checks"]}
    assert checks["scorer_self_test"]["executionForLatestMaterialization"]["status"] == "SUCCEEDED"
