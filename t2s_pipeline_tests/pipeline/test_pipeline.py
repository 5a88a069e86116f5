"""The evaluation graph end to end on the demo set, through real Dagster materialisations."""

from __future__ import annotations

import json
from typing import Any

import dagster as dg
import pandas as pd
import pytest

from t2s_pipeline.agent.app import build_app
from t2s_pipeline.agent.server import serve_in_thread
from t2s_pipeline.assets.evaluation import FAST_CHECKS, guardrails, regression
from t2s_pipeline.assets.launch import run_config
from t2s_pipeline.cases import load_cases
from t2s_pipeline.cli import main
from t2s_pipeline.evaluation import compare, summarise_run

from .conftest import Project

TABLES = (
    "items",
    "sut_responses",
    "retrieval_probes",
    "gold_results",
    "candidate_results",
    "sql_analyses",
    "retrieval_scores",
    "component_scores",
    "output_scores",
    "exact_matches",
    "diagnoses",
)


def test_whole_graph_materialises_with_every_family(
    project: Project, instance: dg.DagsterInstance
) -> None:
    """One partition through every asset and check: each family carries a mean with its n."""
    outcome = run_config(
        project.config("baseline"), project.settings, instance, checks=[*FAST_CHECKS, guardrails]
    )
    assert outcome.success
    summary = summarise_run(project.settings.store(), outcome.run_id)
    assert summary.n_items == 65 and summary.n_cases == 65
    for family in ("retrieval", "columns", "cells", "component", "exact"):
        assert family in summary.families
        assert all(
            mean.n > 0 for mean in summary.families[family].values() if mean.mean is not None
        )
    assert summary.ceilings["gold_failed"] == 0 and summary.ceilings["gold_drift"] == 0
    assert summary.ceilings["scorer_fault"] == 0
    assert sum(summary.diagnoses["all"].values()) == 65
    evaluations = instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [
            dg.AssetCheckKey(dg.AssetKey("candidate_results"), "guardrails"),
            dg.AssetCheckKey(dg.AssetKey("output_scores"), "scorer_self_test"),
        ]
    )
    assert all(record.status.value == "SUCCEEDED" for record in evaluations.values())


def test_leave_one_out_changes_what_the_baseline_can_copy(
    project: Project, instance: dg.DagsterInstance
) -> None:
    """Without exclusions the retrieval baseline finds its own case; with them it cannot."""
    isolated = run_config(project.config("loo"), project.settings, instance, checks=FAST_CHECKS)
    leaky = run_config(
        project.config("leaky", sut={"kind": "builtin", "isolate": False}),
        project.settings,
        instance,
        checks=FAST_CHECKS,
    )
    store = project.settings.store()
    ex_isolated = summarise_run(store, isolated.run_id).families["exact"]["ex"].mean
    ex_leaky = summarise_run(store, leaky.run_id).families["exact"]["ex"].mean
    assert ex_leaky is not None and ex_isolated is not None
    assert ex_leaky == 1.0
    assert ex_isolated < 0.5
    # Nothing was hidden from the leaky run: every item says so under not_isolated (§4).
    assert summarise_run(store, leaky.run_id).ceilings["not_isolated"] == 65
    assert summarise_run(store, isolated.run_id).ceilings["not_isolated"] == 0
    responses = store.read("sut_responses", isolated.run_id)
    items = store.read("items", isolated.run_id)
    for row in responses.merge(items, on="item_id").itertuples():
        examples = [e["id"] for e in json.loads(row.response_json)["retrieval"]["examples"]]
        assert not set(examples) & set(json.loads(row.exclude_json))


def test_rematerialising_leaves_one_copy(project: Project, instance: dg.DagsterInstance) -> None:
    """Replacing a run's rows is transactional and by run: no duplicates after a second run."""
    config = project.config("twice")
    first = run_config(config, project.settings, instance, checks=[])
    second = run_config(config, project.settings, instance, checks=[])
    assert first.run_id == second.run_id
    store = project.settings.store()
    for table in TABLES:
        data = store.read(table, first.run_id)
        key = "key" if "key" in data else "item_id"
        assert not data.empty, table
        assert not data[key].duplicated().any(), table
    assert len(store.read("runs", first.run_id)) == 1


def test_changed_config_gives_a_comparable_second_partition(
    project: Project, instance: dg.DagsterInstance, capsys: pytest.CaptureFixture[str]
) -> None:
    """Offering fewer tables is a new run, and the comparison lists the retrieval regressions."""
    wide = run_config(project.config("wide"), project.settings, instance, checks=[])
    narrow = run_config(
        project.config("wide", sut={"kind": "builtin", "tables_k": 1}),
        project.settings,
        instance,
        checks=[regression],
    )
    assert wide.run_id != narrow.run_id
    assert set(instance.get_dynamic_partitions("eval_run")) >= {wide.run_id, narrow.run_id}
    comparison = compare(project.settings.store(), wide.run_id, narrow.run_id)
    assert comparison.n_shared == 65
    recall = next(d for d in comparison.deltas if (d.family, d.metric) == ("retrieval", "recall"))
    assert recall.delta.mean is not None and recall.delta.mean < 0
    assert any(r.family == "retrieval" for r in comparison.regressions)
    # Retrieval regressions alone (no EX change needed) make the regression check warn.
    key = dg.AssetCheckKey(dg.AssetKey("run_summary"), "regression")
    record = instance.event_log_storage.get_latest_asset_check_execution_by_key([key])[key]
    assert record.status.value == "FAILED"
    evaluation = record.event.dagster_event.event_specific_data  # type: ignore[union-attr]
    assert evaluation.metadata["regressed_items"].value == len(comparison.regressed_items()) > 0
    deltas = project.settings.store().read("run_comparisons")
    assert {(wide.run_id, narrow.run_id)} <= set(zip(deltas["run_a"], deltas["run_b"], strict=True))
    # The command line prints the same: every headline with its interval and n, JSON nulls.
    results = project.settings.results_path
    capsys.readouterr()
    assert main(["runs", "--results", results]) == 0
    listing = capsys.readouterr().out
    assert listing.count("retrieval recall") == 2 and listing.count("n=65") >= 8
    assert main(["compare", wide.run_id, narrow.run_id, "--json", "--results", results]) == 0
    printed = capsys.readouterr().out
    assert "<NA>" not in printed and "NaN" not in printed
    data = json.loads(printed)
    assert data["n_shared"] == 65
    assert len({r["item_id"] for r in data["regressions"]}) == len(comparison.regressed_items())


def test_failing_sut_items_are_recorded_and_the_run_completes(
    project: Project, instance: dg.DagsterInstance
) -> None:
    """An unreachable SUT fails every ask; the run still completes with each item recorded."""
    config = project.config(
        "down",
        sut={"kind": "http", "url": "http://127.0.0.1:9"},
        client={"max_attempts": 2, "timeout_s": 2},
    )
    outcome = run_config(config, project.settings, instance, checks=FAST_CHECKS)
    assert outcome.success
    store = project.settings.store()
    responses = store.read("sut_responses", outcome.run_id)
    assert len(responses) == 65
    assert set(responses["error_class"]) == {"connect"}
    summary = summarise_run(store, outcome.run_id)
    assert summary.ceilings["agent_error"] == 65
    assert summary.diagnoses["all"] == {"no_result": 65}
    assert summary.families["cells"]["recall"].mean == 0.0
    assert summary.families["cells"]["precision"].n == 0


def _flaky(app: Any) -> Any:
    """The built-in agent behind a proxy that answers 500 to every third question length."""

    async def proxy(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/v1/ask":
            await app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        if len(json.loads(body)["question"]) % 3 == 0:
            await send({"type": "http.response.start", "status": 500, "headers": []})
            await send({"type": "http.response.body", "body": b"boom"})
            return
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await app(scope, replay, send)

    return proxy


def test_sut_failing_on_some_items_still_completes(
    project: Project, instance: dg.DagsterInstance
) -> None:
    """Items the SUT fails are recorded with their error class; the others are scored."""
    case_set = load_cases(project.settings.cases_dir)
    failing = {c.id for c in case_set.cases if len(c.question) % 3 == 0}
    assert 0 < len(failing) < len(case_set.cases)
    with serve_in_thread(_flaky(build_app(case_set))) as url:
        config = project.config(
            "flaky", sut={"kind": "http", "url": url}, client={"max_attempts": 2}
        )
        outcome = run_config(config, project.settings, instance, checks=FAST_CHECKS)
    assert outcome.success
    store = project.settings.store()
    responses = store.read("sut_responses", outcome.run_id)
    failed = responses[responses["error_class"].notna()]
    assert set(failed["case_id"]) == failing
    assert set(failed["error_class"]) == {"http_status"} and set(failed["attempts"]) == {2}
    summary = summarise_run(store, outcome.run_id)
    assert summary.ceilings["agent_error"] == len(failing)
    assert summary.diagnoses["all"]["no_result"] == len(failing)
    assert summary.n_items == 65


@pytest.mark.parametrize("phrasings, expected", [("main", 65), ("all", 195)])
def test_phrasings_setting_decides_the_items(
    project: Project, instance: dg.DagsterInstance, phrasings: str, expected: int
) -> None:
    """`phrasings: main` asks only phrasing 0; `all` asks every wording."""
    outcome = run_config(
        project.config(f"p-{phrasings}", phrasings=phrasings), project.settings, instance, checks=[]
    )
    items = project.settings.store().read("items", outcome.run_id)
    assert len(items) == expected
    assert pd.Series(items["phrasing"]).min() == 0


def test_sut_refusals_and_returned_exclusions_are_ceilings(
    project: Project, instance: dg.DagsterInstance
) -> None:
    """A SUT that vouches for exclusions but returns the case itself is not isolated on that
    item; a SUT refusal counts under ``refused`` like a guard refusal (§4, §10)."""
    case_set = load_cases(project.settings.cases_dir)
    first, second, *rest = case_set.cases
    lines = [{"meta": {"supports_exclusions": True}}]
    lines.append({"case_id": first.id, "phrasing": 0, "sql": None, "refused": True,
                  "message": "I may not answer that"})  # fmt: skip
    lines.append({"case_id": second.id, "phrasing": 0, "sql": second.gold_sql,
                  "examples": [second.id]})  # fmt: skip
    lines += [{"case_id": c.id, "phrasing": 0, "sql": c.gold_sql, "examples": []} for c in rest]
    replay = project.root / "predictions.jsonl"
    replay.write_text("".join(json.dumps(line) + "\n" for line in lines))
    config = project.config("vouched", sut={"kind": "replay", "file": str(replay)})
    outcome = run_config(config, project.settings, instance, checks=[])
    assert outcome.success
    store = project.settings.store()
    summary = summarise_run(store, outcome.run_id)
    assert summary.ceilings["refused"] == 1
    assert summary.ceilings["not_isolated"] == 1
    responses = store.read("sut_responses", outcome.run_id).set_index("case_id")
    assert not responses.loc[second.id, "isolated"] and responses.loc[first.id, "isolated"]
    assert summary.diagnoses["all"]["no_result"] == 1
