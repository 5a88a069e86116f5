"""The demo cases evaluated on MariaDB score as on DuckDB for the same answers.

The demo warehouse is loaded into the session's private MariaDB server, the case folder is
written for MySQL (gold transpiled by sqlglot, the password from an environment variable), and
one set of answers — each case's own gold for half the cases, another case's gold for the
rest — is replayed on both engines (transpiled for MySQL). Every answer's order is determined
(a gold query either sorts or returns one row), so each item's EX must agree.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from t2s_pipeline.cases import load_cases
from t2s_pipeline.demo.mysql import load_mysql, transpile_sql, write_mysql_cases
from t2s_pipeline.run.runner import run_config_plainly
from t2s_pipeline.store import ResultsStore

from .conftest import Project

PASSWORD = "T2S_TEST_MYSQL_PASSWORD"


def test_the_demo_scores_on_mariadb_as_on_duckdb(
    project: Project,
    demo_warehouse: Path,
    mysql_admin_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    load_mysql(demo_warehouse, mysql_admin_url, password="t2s_reader")
    host = mysql_admin_url.split("@", 1)[1].split("/", 1)[0]
    mysql_cases = tmp_path / "erp-mysql"
    source = Path(project.settings.cases_dir)
    write_mysql_cases(source, mysql_cases, f"mysql://t2s_reader:${{{PASSWORD}}}@{host}/sales")
    assert "${" + PASSWORD + "}" in (mysql_cases / "domain.yaml").read_text()  # no secret
    monkeypatch.setenv(PASSWORD, "t2s_reader")

    cases = load_cases(source).cases
    answers = [
        {"case_id": case.id, "phrasing": 0,
         "sql": (case if i % 2 == 0 else cases[(i + 1) % len(cases)]).gold_sql}
        for i, case in enumerate(cases)
    ]  # fmt: skip
    exact = {}
    for engine, folder, transpile in (("duckdb", source, False), ("mysql", mysql_cases, True)):
        replay = tmp_path / f"{engine}.jsonl"
        replay.write_text(
            "".join(
                json.dumps(
                    {**a, "sql": transpile_sql(str(a["sql"]), "duckdb") if transpile else a["sql"]}
                )
                + "\n"
                for a in answers
            )  # fmt: skip
        )
        config = project.config(
            f"replay-{engine}", cases=str(folder), sut={"kind": "replay", "file": str(replay)}
        )
        results = tmp_path / f"results-{engine}"
        done = run_config_plainly(config, results, tmp_path / "runs", say=lambda _m: None)
        store = ResultsStore(results)
        gold = store.read("gold_results", done.spec.run_id)
        assert (gold["status"] == "ok").all(), gold[gold["status"] != "ok"].to_dict("records")
        frame = store.read("exact_matches", done.spec.run_id)
        exact[engine] = dict(zip(frame["item_id"], frame["exact_match"], strict=True))

    assert len(exact["mysql"]) == len(cases)
    differ = {i: (exact["duckdb"][i], exact["mysql"].get(i)) for i in exact["duckdb"]
              if exact["duckdb"][i] != exact["mysql"].get(i)}  # fmt: skip
    assert not differ, differ
    right = sum(bool(v) for v in exact["mysql"].values())
    assert len(cases) // 2 <= right < len(cases)  # every own gold, and no other case's
    assert yaml.safe_load((mysql_cases / "domain.yaml").read_text())["engine"] == "mysql"
