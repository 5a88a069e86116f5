"""docs/sut.md stays true: the committed OpenAPI document is what the agent serves, and the
guide's example service, run as its own process, is evaluated end to end."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import httpx

from t2s_pipeline.agent.openapi import openapi_document
from t2s_pipeline.assets.launch import run_config
from t2s_pipeline.run.summary import summarise_run

from .conftest import REPO, Project


def test_the_committed_openapi_document_is_the_served_one() -> None:
    committed = json.loads((REPO / "docs" / "openapi.json").read_text(encoding="utf-8"))
    assert committed == json.loads(json.dumps(openapi_document())), (
        "regenerate: python -c 'import json; from t2s_pipeline.agent.openapi import "
        "openapi_document as d; print(json.dumps(d(), indent=2, sort_keys=True))' "
        "> docs/openapi.json"
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_guide_example_service_is_evaluated(
    project: Project, instance: dg.DagsterInstance
) -> None:
    port = _free_port()
    example = REPO / "docs" / "examples" / "keyword_sut.py"
    server = subprocess.Popen([sys.executable, str(example), str(port)])
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                httpx.get(f"{url}/v1/health", timeout=1.0)
                break
            except httpx.HTTPError:
                time.sleep(0.05)
        config = project.config("keyword", sut={"kind": "http", "url": url})
        outcome = run_config(config, project.settings, instance, checks=[])
    finally:
        server.terminate()
        server.wait(10)
    assert outcome.success
    store = project.settings.store()
    summary = summarise_run(store, outcome.run_id)
    assert summary.n_items == project.n_cases
    assert summary.ceilings["not_isolated"] == 0 and summary.ceilings["no_probe"] == 0
    about_orders = sum(
        "order" in q.lower() for q in store.read("items", outcome.run_id)["question"]
    )
    assert summary.ceilings["refused"] == project.n_cases - about_orders
    assert store.read("runs", outcome.run_id)["sut_fingerprint"].iloc[0] == "http:version:keyword-1"
    assert Path(example).read_text(encoding="utf-8").count("\n") <= 45  # the guide's "40 lines"
