"""``t2s query``: the SPEC 15 JSON shape and the exit codes scripts rely on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from t2s_pipeline.cli import main


def _json(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    return json.loads(capsys.readouterr().out)


def test_query_json_shape(warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rows come back JSON-safe in the stable shape, truncated by the row limit."""
    code = main(
        ["query", "--db", str(warehouse), "--sql", "SELECT site_id FROM sales.sites ORDER BY 1",
         "--row-limit", "5", "--json"]
    )  # fmt: skip
    payload = _json(capsys)
    assert code == 0
    assert payload == {
        "refused": False, "layer": None, "reason": None, "columns": ["site_id"],
        "rows": [["S01"], ["S02"], ["S03"], ["S04"], ["S05"]], "truncated": True, "error": None,
    }  # fmt: skip


def test_refusal_exits_three(warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A refusal prints as a value and exits 3, so a script can tell refused from served
    (it used to exit 0)."""
    code = main(["query", "--db", str(warehouse), "--sql", "SELECT * FROM hr.salaries", "--json"])
    payload = _json(capsys)
    assert code == 3 and payload["refused"] is True and payload["layer"] == "filter"


@pytest.mark.parametrize("layers", ["database", "filter", "filter,database"])
def test_deep_nesting_is_a_refusal_not_a_traceback(
    warehouse: Path, capsys: pytest.CaptureFixture[str], layers: str
) -> None:
    """3,000 nested parentheses ended in a RecursionError traceback with the database layer
    alone; now every layer setting answers with a refusal or an ordinary failure."""
    sql = "SELECT " + "(" * 3000 + "1" + ")" * 3000
    code = main(["query", "--db", str(warehouse), "--sql", sql, "--layers", layers, "--json"])
    captured = capsys.readouterr()
    assert code in (1, 3) and "Traceback" not in captured.err
    payload = json.loads(captured.out)
    assert payload["refused"] or payload["error"]


def test_layers_and_allow_options(warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--layers database skips the filter; --allow narrows the allowlist."""
    main(["query", "--db", str(warehouse), "--sql", "DROP TABLE sales.orders", "--layers",
          "database", "--json"])  # fmt: skip
    assert _json(capsys)["layer"] == "database"
    main(["query", "--db", str(warehouse), "--allow", "sales", "--sql",
          "SELECT count(*) FROM finance.invoices", "--json"])  # fmt: skip
    assert _json(capsys)["refused"] is True


def test_unreachable_database_exits_two(capsys: pytest.CaptureFixture[str]) -> None:
    """A database that cannot be reached is the one failure that is not a value."""
    code = main(["query", "--db", "postgresql://nobody:x@127.0.0.1:1/none", "--sql", "SELECT 1"])
    assert code == 2
    assert "cannot connect" in capsys.readouterr().err


def test_readable_table(warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without --json the rows are printed as an aligned table with a row count."""
    main(["query", "--db", str(warehouse), "--sql", "SELECT region_cd, count(*) AS n "
          "FROM sales.sites GROUP BY 1 ORDER BY 1"])  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["region_cd", "n"]
    assert out[-1].startswith("4 row(s)")


def test_exit_codes_for_failures_and_bad_input(
    warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A statement that ran and failed exits 1; an empty --sql is bad input (2)."""
    failed = main(["query", "--db", str(warehouse), "--sql", "SELECT * FROM sales.nope"])
    assert failed == 1 and "error:" in capsys.readouterr().out
    assert main(["query", "--db", str(warehouse), "--sql", "   "]) == 2
    assert "--sql is empty" in capsys.readouterr().err
