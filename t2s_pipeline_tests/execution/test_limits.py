"""Row bounds: the serving LIMIT and the evaluation cap, and how truncation is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from t2s_pipeline.execution import Guard, open_executor
from t2s_pipeline.execution.limits import with_row_limit
from t2s_pipeline.execution.sqlite_copy import build_sqlite_copy

DEMO = ("sales", "finance", "inventory")


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT a FROM t", "SELECT a FROM t LIMIT 11"),
        ("SELECT a FROM t LIMIT 3", "SELECT a FROM t LIMIT 3"),
        ("SELECT a FROM t UNION SELECT b FROM u", "SELECT a FROM t UNION SELECT b FROM u LIMIT 11"),
        ("SELECT 1; SELECT 2", "SELECT 1; SELECT 2"),
        ("not sql at all (", "not sql at all ("),
    ],
)
def test_with_row_limit(sql: str, expected: str) -> None:
    """LIMIT n+1 is appended only to a lone top-level query without one; the rest is untouched."""
    assert with_row_limit(sql, "duckdb", 10) == expected


def test_the_limit_is_appended_to_the_text_as_written() -> None:
    """The statement runs as written plus the clause: sqlglot would drop the qualifiers inside
    a DuckDB PIVOT (making the join ambiguous) and a SQLite derived table's column aliases."""
    pivot = (
        "SELECT * FROM (PIVOT (SELECT s.region_cd, k.on_hand_qty, s.site_type_cd "
        "FROM inventory.stock AS k JOIN sales.sites AS s ON s.site_id = k.site_id) "
        "ON site_type_cd IN ('ST', 'WH') USING sum(on_hand_qty) GROUP BY region_cd) AS p"
    )
    assert with_row_limit(pivot, "duckdb", 10) == pivot + " LIMIT 11"
    values = "SELECT * FROM (VALUES (1, 'a')) AS v(id, label) /* end */ ;"
    assert (
        with_row_limit(values, "sqlite", 10)
        == "SELECT * FROM (VALUES (1, 'a')) AS v(id, label) LIMIT 11"
    )
    assert with_row_limit("SELECT a FROM t OFFSET 2", "duckdb", 10) == "SELECT a FROM t OFFSET 2"


def test_eval_row_cap_reports_truncation(warehouse: Path) -> None:
    """The evaluation path fetches at most the cap and says the result was cut (a ceiling)."""
    guard = Guard(allowed_schemas=DEMO, eval_row_cap=20)
    with open_executor(str(warehouse), guard) as executor:
        capped = executor.run("SELECT order_id FROM sales.orders ORDER BY order_id")
        whole = executor.run("SELECT site_id FROM sales.sites")
    assert len(capped.rows) == 20 and capped.truncated
    assert len(whole.rows) == 12 and not whole.truncated


def test_serving_row_limit_and_exact_fit(warehouse: Path) -> None:
    """A result of exactly n rows is not truncated; one more row is."""
    with open_executor(str(warehouse), Guard(allowed_schemas=DEMO, row_limit=12)) as executor:
        exact = executor.run("SELECT site_id FROM sales.sites")
    with open_executor(str(warehouse), Guard(allowed_schemas=DEMO, row_limit=11)) as executor:
        cut = executor.run("SELECT site_id FROM sales.sites ORDER BY site_id")
    assert (len(exact.rows), exact.truncated) == (12, False)
    assert (len(cut.rows), cut.truncated) == (11, True)
    assert cut.rows[-1] == ("S11",)


def test_eval_cap_on_sqlite(warehouse: Path, tmp_path: Path) -> None:
    """The cap is the same on every engine."""
    copy = build_sqlite_copy(warehouse, tmp_path / "w.sqlite")
    guard = Guard(allowed_schemas=("main",), dialect="sqlite", eval_row_cap=5)
    with open_executor(str(copy.main), guard) as executor:
        outcome = executor.run("SELECT order_id FROM orders")
    assert len(outcome.rows) == 5 and outcome.truncated


def test_a_statement_too_deep_for_sqlglot_is_left_to_the_engine() -> None:
    """sqlglot's parser recurses; a deeply nested statement is kept as written, no traceback."""
    deep = "SELECT " + "(" * 3000 + "1" + ")" * 3000
    assert with_row_limit(deep, "duckdb", 10) == deep


@pytest.mark.parametrize("layers", [frozenset({"filter"}), frozenset({"database"})])
def test_deep_nesting_is_refused_by_the_limits_layer(
    warehouse: Path, layers: frozenset[str]
) -> None:
    """Past MAX_NESTING the limits layer refuses in every layer setting; just below, it runs."""
    from t2s_pipeline.execution.limits import MAX_NESTING

    def nested(depth: int) -> str:
        return "SELECT " + "(" * depth + "1" + ")" * depth

    with open_executor(str(warehouse), Guard(DEMO, layers=layers)) as executor:
        deep, shallow = executor.run(nested(MAX_NESTING + 1)), executor.run(nested(50))
    assert deep.refused and deep.layer == "limits" and str(MAX_NESTING) in (deep.reason or "")
    assert not shallow.refused and shallow.rows == [(1,)]


def test_a_worker_left_near_its_memory_limit_is_replaced(warehouse: Path) -> None:
    """After a memory attack the allocator keeps what it mapped; the next statement gets a new worker.

    A worker left at 4.18 GB of its 4 GB failed ordinary corpus statements that needed a block.
    """
    guard = Guard(("sales",), layers=frozenset({"database"}), timeout_s=10)
    with open_executor(str(warehouse), guard) as executor:
        first = executor.worker_pid
        executor.run("SELECT count(*) FROM sales.sites")
        assert executor.worker_pid == first  # ordinary statements keep their worker
        attack = executor.run(
            "SELECT length(string_agg(repeat('x', 1000), '')) FROM range(2000000)"
        )
        assert attack.refused and attack.layer == "limits"
        assert executor.worker_pid is None
        after = executor.run("SELECT count(*) FROM sales.sites")
        assert after.rows == [(12,)]
        assert executor.worker_pid not in (None, first)


@pytest.mark.parametrize("layers", [{"filter"}, {"database"}, {"filter", "database"}])
def test_an_oversized_statement_is_refused_before_anything_reads_it(
    warehouse: Path, layers: set[str]
) -> None:
    """A 7 MB IN-list is refused by its length in every layer setting, before the nesting
    bound's tokenizer (2.9 s on it) or a parser sees it: the attack took 4 s of worker wall
    clock before, and the database layer alone had no length bound."""
    import time

    sql = "SELECT 1 WHERE 1 IN (" + ",".join(["1"] * 3_500_000) + ")"
    guard = Guard(allowed_schemas=DEMO, layers=frozenset(layers), timeout_s=5)
    with open_executor(str(warehouse), guard) as executor:
        started = time.perf_counter()
        outcome = executor.run(sql)
        elapsed = time.perf_counter() - started
    assert outcome.refused and outcome.layer == "limits"
    assert "characters; the limit is 1,000,000" in str(outcome.reason)
    assert elapsed < 1.0
