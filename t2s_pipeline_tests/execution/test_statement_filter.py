"""The statement filter on its own: what it lets through and why it refuses."""

from __future__ import annotations

import pytest

from t2s_pipeline.execution import Guard, check_statement
from t2s_pipeline.execution.catalogue import Catalogue

DEMO = ("sales", "finance", "inventory")


def _reason(sql: str, dialect: str = "duckdb", allowed: tuple[str, ...] = DEMO) -> str | None:
    allowed = ("main",) if dialect == "sqlite" else allowed
    refusal = check_statement(sql, Guard(allowed_schemas=allowed, dialect=dialect))
    return None if refusal is None else refusal.reason


@pytest.mark.parametrize(
    ("sql", "dialect"),
    [
        ("SELECT count(*) FROM sales.orders", "duckdb"),
        ("FROM sales.orders SELECT order_id", "duckdb"),
        ("WITH salaries AS (SELECT 1 AS x) SELECT * FROM salaries", "duckdb"),
        ("WITH a AS (SELECT 1 AS x), b AS (SELECT * FROM a) SELECT * FROM b", "postgres"),
        ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) "
         "SELECT * FROM r", "postgres"),
        ("SELECT * FROM (SELECT 1 AS x) AS salaries", "duckdb"),
        ("SELECT 'DELETE FROM hr.salaries' AS s", "postgres"),
        ("SELECT * FROM Sales.Orders", "postgres"),
        ('SELECT * FROM "SALES"."ORDERS"', "duckdb"),
        ("SELECT * FROM range(10) AS t(i)", "duckdb"),
        ("SELECT * FROM generate_series(1, 3) AS g(i)", "postgres"),
        ("SELECT * FROM unnest([1, 2]) AS t(x)", "duckdb"),
        ("VALUES (1, 2)", "postgres"),
        ("SELECT 1 UNION SELECT 2", "sqlite"),
        ("SELECT o.order_id FROM sales.orders AS o JOIN sales.customers AS c "
         "ON o.customer_id = c.customer_id AND c.segment_cd = 'B2B'", "duckdb"),
        ("SELECT o.order_id FROM sales.orders AS o JOIN sales.customers AS c "
         "ON o.customer_id = c.customer_id OR c.segment_cd = 'B2B'", "postgres"),
        ("SELECT value FROM json_each('[1, 2, 3]')", "sqlite"),
        ("SELECT count(*) FROM sales.orders; ", "duckdb"),
    ],
)  # fmt: skip
def test_allows_read_only_queries_over_the_allowlist(sql: str, dialect: str) -> None:
    """Ordinary analytic SQL must pass: over-blocking breaks the harness as surely as a leak."""
    assert _reason(sql, dialect) is None


@pytest.mark.parametrize(
    ("sql", "dialect", "because"),
    [
        ("DELETE FROM sales.orders", "duckdb", "not DELETE"),
        ("SELECT 1; SELECT 2", "duckdb", "exactly one statement, found 2"),
        ("", "duckdb", "found 0"),
        ("SELEKT 1 FROM", "duckdb", "cannot read"),
        ("SELECT current_setting('work_mem')", "postgres", "current_setting is not on"),
        ("SELECT current_setting('temp_directory')", "duckdb", "current_setting is not on"),
        ("SELECT json_serialize_plan('SELECT max(annual_salary) FROM hr.salaries')", "duckdb",
         "json_serialize_plan is not on"),
        ('SELECT U&"\\0070g_terminate_backend"(1)', "postgres", "pg_terminate_backend is not on"),
        ("SELECT * FROM pragma_database_list", "sqlite", "schema table"),
        ("SELECT range(300000000)", "duckdb", "the limit is"),
        ("WITH d AS (DELETE FROM sales.orders RETURNING *) SELECT * FROM d", "postgres", "DELETE"),
        ("SELECT * INTO sales.x FROM sales.orders", "postgres", "INTO"),
        ("CREATE TABLE sales.x AS SELECT 1", "duckdb", "CREATE"),
        ("SELECT * FROM sales.orders FOR UPDATE", "postgres", "LOCK"),
        ("COPY sales.orders TO '/tmp/x'", "duckdb", "COPY"),
        ("ATTACH 'x.db' AS x", "duckdb", "ATTACH"),
        ("INSTALL httpfs", "duckdb", "INSTALL"),
        ("SET search_path = 'hr'", "duckdb", "SET"),
        ("PRAGMA query_only = 0", "sqlite", "PRAGMA"),
        ("CHECKPOINT", "duckdb", "not CHECKPOINT"),
        ("/* tidy */ VACUUM", "sqlite", "not VACUUM"),
        ("BEGIN", "postgres", "not BEGIN"),
        ("SELECT * FROM read_csv('/etc/passwd')", "duckdb", "read_csv is not on the table-function"),
        ("SELECT PG_CATALOG.PG_READ_FILE('/etc/passwd')", "postgres", "pg_read_file"),
        ("SELECT * FROM dblink_fetch('c')", "postgres", "dblink_fetch"),
        ("SELECT load_extension('x')", "sqlite", "load_extension"),
        ("SELECT * FROM duckdb_settings()", "duckdb", "not on the table-function allowlist"),
        ("SELECT * FROM hr.salaries", "duckdb", "hr.salaries is outside"),
        ('SELECT * FROM "HR"."SALARIES"', "duckdb", "hr.salaries is outside"),
        ('SELECT * FROM "Sales".orders', "postgres", "Sales.orders is outside"),
        ("SELECT * FROM salaries", "duckdb", "main.salaries is outside"),
        ("SELECT * FROM salaries", "postgres", "public.salaries is outside"),
        ("SELECT * FROM pg_authid", "postgres", "pg_catalog.pg_authid"),
        ("SELECT * FROM '/etc/passwd'", "duckdb", "reads a file"),
        ("WITH x AS (SELECT 1) SELECT * FROM (SELECT * FROM hr.salaries) AS y", "duckdb", "hr."),
        ("WITH a AS (SELECT * FROM salaries), salaries AS (SELECT 1) SELECT * FROM a", "postgres",
         "public.salaries"),
        ("SELECT * FROM sales.orders o, (WITH s AS (SELECT 1) SELECT * FROM s) t, s", "duckdb",
         "main.s is outside"),
    ],
)  # fmt: skip
def test_refuses_with_a_reason(sql: str, dialect: str, because: str) -> None:
    """Each class of statement the issue lists is refused, and the reason names the problem."""
    reason = _reason(sql, dialect)
    assert reason is not None
    assert because in reason


def test_sqlite_reads_main_and_its_table_allowlist() -> None:
    """SQLite compiles against the file's schema: main only, and only the allowlisted tables
    (a view's own reads included) when the domain names them."""
    schema = ("CREATE TABLE orders (order_id INTEGER)", "CREATE TABLE hr_salaries (pay INTEGER)",
              "CREATE VIEW pay AS SELECT pay FROM hr_salaries")  # fmt: skip
    guard = Guard(allowed_schemas=("main",), dialect="sqlite")
    tables = Catalogue(allowed_tables=frozenset({"orders", "pay"}))
    assert check_statement("SELECT * FROM orders", guard, None, schema) is None
    assert check_statement("SELECT * FROM hr_salaries", guard, None, schema) is None
    refused = check_statement("SELECT * FROM hr_salaries", guard, tables, schema)
    assert refused is not None and "hr_salaries is outside" in refused.reason
    through_view = check_statement("SELECT * FROM pay", guard, tables, schema)
    assert through_view is not None and "hr_salaries is outside" in through_view.reason
    assert "hr.salaries" in (_reason("SELECT * FROM hr.salaries", "sqlite") or "")


def test_default_schema_can_be_allowlisted() -> None:
    """Unqualified names pass when the dialect's default schema is on the allowlist."""
    assert _reason("SELECT * FROM orders", "postgres", ("public",)) is None


@pytest.mark.parametrize("sql", ["\x00", "((((((", "SELECT " + "(" * 5000 + "1", "'", "/*"])
def test_never_raises_on_garbage(sql: str) -> None:
    """The filter is total: anything it cannot read is refused, never an exception."""
    refusal = check_statement(sql, Guard(allowed_schemas=DEMO))
    assert refusal is not None and refusal.layer == "filter"
