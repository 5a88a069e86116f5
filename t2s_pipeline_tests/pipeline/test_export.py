"""`t2s export`: every item of a run, in JSONL, CSV and Parquet, with stable field names."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from t2s_pipeline.assets.launch import run_config
from t2s_pipeline.cli import main
from t2s_pipeline.export import FIELDS

from .conftest import Project


def test_export_lists_every_item_in_every_format(
    project: Project, instance: dg.DagsterInstance, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = run_config(project.config("exported"), project.settings, instance, checks=[])
    results = project.settings.results_path
    capsys.readouterr()
    assert main(["export", outcome.run_id, "--results", results]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == project.n_cases
    assert all(list(row) == list(FIELDS) for row in rows)
    assert {row["run_id"] for row in rows} == {outcome.run_id}
    assert all(row["gold_sql"] and isinstance(row["ceilings"], list) for row in rows)
    assert {type(row["ex"]) for row in rows} == {bool}
    summary_ex = sum(row["ex"] for row in rows) / len(rows)
    assert 0 < summary_ex < 1  # the built-in agent gets some right, some wrong
    # Undefined stays null: an item whose gold has no LIMIT has no limit recall.
    assert any(row["limit_recall"] is None for row in rows)
    assert all(row["diagnosis"] for row in rows)

    out_csv, out_parquet = project.root / "items.csv", project.root / "items.parquet"
    assert main(["export", outcome.run_id, "--format", "csv", "--out", str(out_csv),
                 "--results", results]) == 0  # fmt: skip
    with out_csv.open(newline="", encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == project.n_cases and list(table[0]) == list(FIELDS)
    assert main(["export", outcome.run_id, "--format", "parquet", "--out", str(out_parquet),
                 "--results", results]) == 0  # fmt: skip
    con = duckdb.connect()
    count, names = con.execute(
        "SELECT count(*), any_value(item_id) FROM read_parquet(?)", [str(out_parquet)]
    ).fetchone()  # type: ignore[misc]
    assert count == project.n_cases and names
    columns = [r[0] for r in con.execute("DESCRIBE SELECT * FROM read_parquet(?)",
                                          [str(out_parquet)]).fetchall()]  # fmt: skip
    assert columns == list(FIELDS)


def test_export_of_an_unknown_run_names_the_fix(
    project: Project, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["export", "nope-12345678", "--results", str(tmp_path / "r.duckdb")]) == 2
    assert "`t2s runs` lists them" in capsys.readouterr().err
