"""The configuration's `sut:` adapters against a real loopback service shaped unlike ours.

The service (``t2s_pipeline_tests/sut/foreign_service.py``) has its own routes, field names,
nested bodies, an API key and no retriever endpoint. Each adapter option is exercised by a
full run through Dagster, and the service's own record of what it received is checked.
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from t2s_pipeline.assets.launch import run_config
from t2s_pipeline.cases import load_cases
from t2s_pipeline.cli import main
from t2s_pipeline.commands.runs import preflight
from t2s_pipeline.errors import ConfigError
from t2s_pipeline.run.summary import summarise_run
from t2s_pipeline_tests.sut import foreign_service
from t2s_pipeline_tests.sut.foreign_service import FIELDS, PATHS, ForeignService, serve

from .conftest import Project

SECRET = "k-7f3a9-not-in-any-file"


def _gold_answers(project: Project) -> dict[str, str]:
    return {case.question: case.gold_sql for case in load_cases(project.settings.cases_dir).cases}


def _http_sut(url: str, **more: object) -> dict[str, object]:
    return {
        "kind": "http",
        "url": url,
        "paths": PATHS,
        "fields": FIELDS,
        "headers": {foreign_service.API_KEY_HEADER: "${T2S_TEST_API_KEY}"},
        "extra": {"options.engine": "{dialect}", "tenant": "acme-{domain}"},
        "probe": False,
        **more,
    }


def test_a_foreign_service_is_evaluated_through_every_adapter(
    project: Project, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("T2S_TEST_API_KEY", SECRET)
    domain = load_cases(project.settings.cases_dir).domain
    with serve(ForeignService(_gold_answers(project), SECRET, build="b-41")) as service:
        config = project.config("foreign", sut=_http_sut(service.url))
        preflight(config)
        outcome = run_config(config, project.settings, instance, checks=[])
    assert outcome.success
    store = project.settings.store()
    summary = summarise_run(store, outcome.run_id)
    assert summary.n_items == project.n_cases == len(service.requests)
    # Answers read from data.query.text: the gold SQL, so every item matches.
    assert summary.families["exact"]["ex"].mean == pytest.approx(1.0, abs=0.03)
    # No probe endpoint: counted, never a silent zero. Exclusions read from caps.exclusions.
    assert summary.ceilings["no_probe"] == project.n_cases
    assert summary.ceilings["not_isolated"] == 0
    assert store.read("runs", outcome.run_id)["sut_fingerprint"].iloc[0] == "http:version:b-41"
    # What the service received: its own names, nested; the context; the extra fields.
    first = service.requests[0]
    assert set(first) == {"prompt", "options", "meta", "tenant"}
    assert first["options"]["engine"] == domain.dialect
    assert first["options"]["exclude"], "the case itself is always excluded"
    assert first["meta"]["context"] == {
        "as_of": domain.as_of,
        "dialect": domain.dialect,
        "domain": domain.name,
    }
    assert first["meta"]["run"] == outcome.run_id
    assert first["tenant"] == f"acme-{domain.name}"
    assert all(h.get(foreign_service.API_KEY_HEADER) == SECRET for h in service.headers_seen)
    # The secret is read from the environment at run time, never written down.
    written = [p for p in project.root.rglob("*") if p.is_file() and p.suffix in {".json", ".yaml"}]
    assert written and not any(SECRET in p.read_text(errors="ignore") for p in written)


def test_a_new_service_version_is_a_new_run_and_the_old_one_is_kept(
    project: Project, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("T2S_TEST_API_KEY", SECRET)
    answers = _gold_answers(project)
    runs = []
    with serve(ForeignService(answers, SECRET)) as service:
        config = project.config("versioned", sut=_http_sut(service.url))
        for build in ("v1", "v2", "v2"):  # the configuration file stays the same
            service.build = build
            runs.append(run_config(config, project.settings, instance, checks=[]))
    first, second, again = runs
    assert first.run_id != second.run_id and second.run_id == again.run_id
    assert again.already_evaluated and not second.already_evaluated
    assert set(project.settings.store().run_ids()) >= {first.run_id, second.run_id}


def test_a_missing_secret_stops_the_run_before_it_is_registered(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("T2S_TEST_API_KEY", raising=False)
    with serve(ForeignService({}, SECRET)) as service:
        config = project.config("nokey", sut=_http_sut(service.url))
        with pytest.raises(ConfigError, match="T2S_TEST_API_KEY is not set"):
            preflight(config)
        monkeypatch.setenv("T2S_TEST_API_KEY", "wrong-key")
        with pytest.raises(ConfigError, match="HTTP 401"):
            preflight(config)
    assert not Path(project.settings.registry_dir).exists()


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("fields", {"sqll": "x"}, "unknown field name role"),
        ("extra", {"day": "{today}"}, "unknown placeholder {today}"),
        ("headers", {"X-Key": "${"}, "sut.headers.X-Key"),
        ("paths", {"ask": "api/ask"}, "must start with '/'"),
    ],
)
def test_a_bad_adapter_option_names_the_field_and_fix(
    project: Project,
    capsys: pytest.CaptureFixture[str],
    option: str,
    value: object,
    message: str,
) -> None:
    sut = {"kind": "http", "url": "http://127.0.0.1:9", option: value}
    config = project.config("bad", sut=sut)
    assert main(["run", "--config", str(config), "--results", str(project.root / "r.duckdb")]) == 2
    err = capsys.readouterr().err
    assert message in err and f"sut.{option}" in err, err


def test_an_adapter_option_on_the_wrong_kind_is_refused(project: Project) -> None:
    from t2s_pipeline.config import load_config

    config = project.config("wrongkind", sut={"kind": "builtin", "headers": {"A": "b"}})
    with pytest.raises(ConfigError, match="only kind http has it"):
        load_config(config)


@pytest.mark.parametrize("function", ["answer", "answer_async"])
def test_a_python_callable_is_evaluated_in_process(
    project: Project, instance: dg.DagsterInstance, function: str
) -> None:
    foreign_service.ANSWERS.clear()
    foreign_service.ANSWERS.update(_gold_answers(project))
    foreign_service.SEEN.clear()
    sut = {
        "kind": "python",
        "callable": f"t2s_pipeline_tests.sut.foreign_service:{function}",
        "supports_exclusions": True,
        "fields": {"sql": "data.query.text", "refused": "data.declined"},
    }
    config = project.config(function.replace("_", "-"), sut=sut)
    outcome = run_config(config, project.settings, instance, checks=[])
    assert outcome.success
    summary = summarise_run(project.settings.store(), outcome.run_id)
    assert summary.families["exact"]["ex"].mean == pytest.approx(1.0, abs=0.03)
    assert summary.ceilings["not_isolated"] == 0 and summary.ceilings["no_probe"] == project.n_cases
    assert len(foreign_service.SEEN) == project.n_cases
    assert all(r.context is not None and r.context.dialect for r in foreign_service.SEEN)
    runs = project.settings.store().read("runs", outcome.run_id)
    assert (
        runs["sut_fingerprint"].iloc[0].startswith("python:t2s_pipeline_tests.sut.foreign_service:")
    )


def test_a_python_callable_that_raises_is_recorded_per_item(
    project: Project, instance: dg.DagsterInstance
) -> None:
    sut = {"kind": "python", "callable": "t2s_pipeline_tests.sut.foreign_service:broken"}
    outcome = run_config(project.config("broken", sut=sut), project.settings, instance, checks=[])
    responses = project.settings.store().read("sut_responses", outcome.run_id)
    assert set(responses["error_class"]) == {"exception"}
    assert responses["error_message"].str.contains("model backend unavailable").all()


def test_a_python_callable_that_cannot_be_imported_is_a_setup_error(project: Project) -> None:
    sut = {"kind": "python", "callable": "no_such_package.module:answer"}
    with pytest.raises(ConfigError, match="cannot import 'no_such_package.module'"):
        preflight(project.config("missing", sut=sut))


def test_the_registry_keeps_the_header_template_not_its_value(
    project: Project, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("T2S_TEST_API_KEY", SECRET)
    with serve(ForeignService(_gold_answers(project), SECRET, build="t")) as service:
        outcome = run_config(
            project.config("registry", sut=_http_sut(service.url)),
            project.settings,
            instance,
            checks=[],
        )
    registered = json.loads(
        (Path(project.settings.registry_dir) / f"{outcome.run_id}.json").read_text()
    )
    assert registered["config"]["sut"]["headers"] == {
        foreign_service.API_KEY_HEADER: "${T2S_TEST_API_KEY}"
    }
