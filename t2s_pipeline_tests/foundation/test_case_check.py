"""`t2s cases check` runs every gold query read-only and reports what fails, with the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from t2s_pipeline.casecheck import check_case_set, freeze_case_set
from t2s_pipeline.cases import load_cases
from t2s_pipeline.cli import main

CASE = """\
id: {id}
question: A question?
phrasings: []
gold_sql: |
  {sql}
difficulty: simple_aggregate
"""


def _domain(tmp_path: Path, warehouse: Path, cases: dict[str, str]) -> Path:
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "domain.yaml").write_text(
        f"engine: duckdb\ndialect: duckdb\ndatabase: {warehouse}\nallowed_schemas: [sales]\n"
    )
    for case_id, sql in cases.items():
        (folder / f"{case_id}.yaml").write_text(CASE.format(id=case_id, sql=sql))
    return folder


def test_gold_problems_are_reported_per_case(tmp_path: Path, warehouse: Path) -> None:
    """A gold query that is refused or does not run is named with its case and a fix."""
    folder = _domain(
        tmp_path,
        warehouse,
        {
            "fine": "SELECT count(*) FROM sales.orders",
            "secret": "SELECT count(*) FROM hr.salaries",
            "typo": "SELECT count(nope) FROM sales.orders",
            "garbled": "SELECT count(* FROM sales.orders",
        },
    )
    report = check_case_set(load_cases(folder))
    assert not report.ok
    by_case = {p.case_id: p for p in report.problems}
    assert set(by_case) == {"secret", "typo", "garbled"}
    assert "refused" in by_case["secret"].problem and by_case["secret"].field == "gold_sql"
    assert "allowed_schemas in domain.yaml" in by_case["secret"].fix
    assert "does not run" in by_case["typo"].problem
    assert by_case["garbled"].fix == "correct the SQL syntax in gold_sql"


def test_twins_are_reported(tmp_path: Path, warehouse: Path) -> None:
    """Differently written equal gold queries are twins; a different query is not."""
    folder = _domain(
        tmp_path,
        warehouse,
        {
            "a": "SELECT count(*) FROM sales.orders AS o WHERE o.status_cd = 'delivered'",
            "b": "SELECT COUNT(*) FROM sales.orders WHERE 'delivered' = status_cd",
            "c": "SELECT count(*) FROM sales.orders WHERE status_cd = 'placed'",
        },
    )
    assert check_case_set(load_cases(folder)).twins == [("a", "b")]


def test_freeze_then_check_is_clean(tmp_path: Path, warehouse: Path) -> None:
    """Freezing writes expected results that load back; the CLI exits 0 on a clean set."""
    folder = _domain(tmp_path, warehouse, {"n": "SELECT count(*) AS n FROM sales.orders"})
    assert freeze_case_set(load_cases(folder)) == []
    case = load_cases(folder).cases[0]
    assert case.expected_result is not None and case.expected_result.columns == ("n",)
    assert main(["cases", "check", str(folder)]) == 0
    # A frozen result that no longer matches the live one is drift, named with the fix.
    path = folder / "n.yaml"
    frozen = case.expected_result.rows[0][0]
    path.write_text(path.read_text().replace(f"- [{frozen}]", f"- [{frozen + 1}]"))
    report = check_case_set(load_cases(folder))
    assert [(p.case_id, p.field) for p in report.problems] == [("n", "expected_result")]
    assert "cases freeze" in report.problems[0].fix


def test_cli_exits_non_zero_on_a_bad_file(
    tmp_path: Path, warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Scripts rely on the exit code; the message names file, field and fix."""
    folder = _domain(tmp_path, warehouse, {"ok": "SELECT 1 AS one FROM sales.sites LIMIT 1"})
    (folder / "broken.yaml").write_text("id: broken\nquestion: q\n")
    assert main(["cases", "check", str(folder)]) == 1
    err = capsys.readouterr().err
    assert "broken.yaml" in err and "gold_sql" in err and "Fix:" in err
