"""The MySQL/MariaDB backend on a real MariaDB server: the account check, the server's two
readings, the bounds and the session reset."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from t2s_pipeline.demo.mysql import reader_url
from t2s_pipeline.errors import ExecutionError
from t2s_pipeline.execution import Guard, open_executor
from t2s_pipeline.execution.guard import DATABASE, FILTER
from t2s_pipeline.execution.mysql_engine import MySQLTarget

ALLOWED = ("sales", "finance", "inventory")
FILTER_ONLY = frozenset({FILTER})
DATABASE_ONLY = frozenset({DATABASE})


def guard(layers: frozenset[str] = frozenset({FILTER, DATABASE}), **bounds: object) -> Guard:
    return Guard(allowed_schemas=ALLOWED, dialect="mysql", layers=layers, **bounds)  # type: ignore[arg-type]


def admin_run(admin_url: str, *statements: str) -> None:
    MySQLTarget.parse(admin_url).run(statements)


@pytest.fixture
def account(mysql_admin_url: str, mysql_reader_url: str) -> Iterator[str]:
    """A second account, dropped afterwards, for grants a test adds."""
    admin_run(mysql_admin_url, "CREATE USER 't2s_probe'@'%' IDENTIFIED BY 'probe'")
    yield reader_url(mysql_admin_url, "t2s_probe", "probe", "sales")
    admin_run(mysql_admin_url, "DROP USER IF EXISTS 't2s_probe'@'%'")


def test_reader_reads_what_the_owner_reads(mysql_admin_url: str, mysql_reader_url: str) -> None:
    sql = "SELECT status_cd, count(*) FROM sales.orders GROUP BY status_cd ORDER BY status_cd"
    with open_executor(mysql_reader_url, guard()) as executor:
        served = executor.run(sql)
    owner = reader_url(mysql_admin_url, "t2s", "t2s", "sales")
    with open_executor(owner, guard(FILTER_ONLY)) as executor:
        bare = executor.run(sql)
    assert served.error is None and not served.refused
    assert served.rows == bare.rows and len(served.rows) >= 3


def test_an_administrator_cannot_open_with_the_database_layer(mysql_admin_url: str) -> None:
    owner = reader_url(mysql_admin_url, "t2s", "t2s", "sales")
    with pytest.raises(ExecutionError, match="global privileges"):
        open_executor(owner, guard(contained=False))


@pytest.mark.parametrize(
    ("grant", "named"),
    [
        ("GRANT SELECT ON `hr`.* TO 't2s_probe'@'%'", "hr.*"),
        ("GRANT SELECT ON `sales%`.* TO 't2s_probe'@'%'", "wildcard"),
        ("GRANT INSERT ON `sales`.* TO 't2s_probe'@'%'", "INSERT"),
        ("GRANT SELECT ON `hr`.`salaries` TO 't2s_probe'@'%'", "hr.salaries"),
        ("GRANT PROCESS ON *.* TO 't2s_probe'@'%'", "PROCESS"),
    ],
)
def test_the_account_check_names_each_excess_grant(
    mysql_admin_url: str, account: str, grant: str, named: str
) -> None:
    admin_run(mysql_admin_url, "GRANT SELECT ON `sales`.* TO 't2s_probe'@'%'", grant)
    with pytest.raises(ExecutionError, match="SELECT-only account") as raised:
        open_executor(account, guard(contained=False))
    assert named in str(raised.value)


def test_a_definer_view_reading_outside_is_named(mysql_admin_url: str, account: str) -> None:
    admin_run(
        mysql_admin_url,
        "CREATE SQL SECURITY DEFINER VIEW sales.t2s_probe_pay AS SELECT * FROM hr.salaries",
        "GRANT SELECT, SHOW VIEW ON `sales`.* TO 't2s_probe'@'%'",
    )
    try:
        with pytest.raises(
            ExecutionError, match=r"sales\.t2s_probe_pay, which is unsafe: table hr\.salaries"
        ):
            open_executor(account, guard(contained=False))
        owner = reader_url(mysql_admin_url, "t2s", "t2s", "sales")
        for url in (owner, account):  # the filter alone, as the owner and as the account
            with open_executor(url, guard(FILTER_ONLY, contained=False)) as executor:
                outcome = executor.run("SELECT * FROM sales.t2s_probe_pay")
            # sqlglot sees a table of sales; the server's reading expands the view
            assert outcome.refused and outcome.layer == FILTER, outcome
            assert "hr.salaries" in str(outcome.reason) or "cannot see" in str(outcome.reason)
    finally:
        admin_run(mysql_admin_url, "DROP VIEW IF EXISTS sales.t2s_probe_pay")


@pytest.mark.parametrize(
    "sql",
    [
        "SET @x = 1",
        "DO 1",
        "SET SESSION TRANSACTION READ WRITE",
        "/* only a comment */",
        "SELECT 1 INTO @x",
        "SELECT count(*) FROM hr.salaries",
        "CREATE TABLE sales.t2s_probe (a INT)",
    ],
)
def test_the_database_layer_alone_serves_only_queries(mysql_reader_url: str, sql: str) -> None:
    with open_executor(mysql_reader_url, guard(DATABASE_ONLY)) as executor:
        outcome = executor.run(sql)
    assert outcome.refused and outcome.layer == DATABASE, outcome


def test_a_second_statement_never_runs(mysql_admin_url: str, mysql_reader_url: str) -> None:
    with open_executor(mysql_reader_url, guard(DATABASE_ONLY)) as executor:
        outcome = executor.run("SELECT 1; DROP TABLE sales.sites")
    assert outcome.refused or outcome.error is not None
    owner = reader_url(mysql_admin_url, "t2s", "t2s", "sales")
    with open_executor(owner, guard(FILTER_ONLY)) as executor:
        assert executor.run("SELECT count(*) FROM sales.sites").rows[0][0] > 0


def test_a_statement_cannot_lift_the_time_limit(mysql_reader_url: str) -> None:
    sql = "SET STATEMENT max_statement_time = 0 FOR SELECT count(*) FROM sales.orders"
    with open_executor(mysql_reader_url, guard(DATABASE_ONLY, timeout_s=1.0)) as executor:
        outcome = executor.run(sql)
    assert outcome.refused and outcome.layer == DATABASE
    assert "does not read the statement as a query" in str(outcome.reason)


def test_time_is_bounded(mysql_reader_url: str) -> None:
    sql = "SELECT count(*) FROM sales.orders a, sales.orders b, sales.order_lines c"
    with open_executor(mysql_reader_url, guard(DATABASE_ONLY, timeout_s=1.0)) as executor:
        outcome = executor.run(sql)
        after = executor.run("SELECT 1")
    assert outcome.refused and outcome.timed_out and outcome.seconds < 5, outcome
    assert after.rows == [(1,)]


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        ("SELECT @@datadir", "system variable"),
        ("SELECT get_lock('t2s', 0)", "get_lock"),
        ("SELECT load_file('/etc/passwd')", "load_file"),
        ("SELECT count(*) FROM information_schema.TABLES", "system database"),
        ("SHOW GRANTS", "does not read the statement as a query"),
        ("SELECT * FROM sales.sites PROCEDURE ANALYSE()", "returns 10 column(s)"),
    ],
)
def test_the_database_layer_reads_what_privileges_cannot_forbid(
    mysql_reader_url: str, sql: str, why: str
) -> None:
    with open_executor(mysql_reader_url, guard(DATABASE_ONLY)) as executor:
        outcome = executor.run(sql)
    assert outcome.refused and outcome.layer == DATABASE and why in str(outcome.reason), outcome


def test_a_result_the_server_cut_short_is_refused(mysql_reader_url: str) -> None:
    sql = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
    with open_executor(mysql_reader_url, guard(timeout_s=5.0)) as executor:
        outcome = executor.run(sql)
    assert outcome.refused and "cut the result short" in str(outcome.reason)


def test_rows_are_capped_and_the_connection_recovers(mysql_reader_url: str) -> None:
    with open_executor(mysql_reader_url, guard(row_limit=None, eval_row_cap=10)) as executor:
        capped = executor.run("SELECT order_id FROM sales.orders")
        after = executor.run("SELECT count(*) FROM sales.sites")
    assert capped.truncated and len(capped.rows) == 10
    assert after.rows and after.rows[0][0] > 0


def test_nothing_of_a_session_outlives_its_statement(mysql_reader_url: str) -> None:
    with open_executor(mysql_reader_url, guard(DATABASE_ONLY, contained=False)) as executor:
        executor.run("SELECT @leftover := 42")
        assert executor.run("SELECT @leftover").rows == [(None,)]


@pytest.mark.parametrize("layers", [frozenset({FILTER, DATABASE}), FILTER_ONLY, DATABASE_ONLY])
def test_run_all_gives_the_outcomes_of_run_in_order(
    mysql_admin_url: str, mysql_reader_url: str, layers: frozenset[str]
) -> None:
    """Statements readied ahead (the server's readings on the second connection while the
    first runs) give exactly what one-by-one runs give."""
    url = reader_url(mysql_admin_url, "t2s", "t2s", "sales") if layers == FILTER_ONLY else None
    target = url or mysql_reader_url
    statements = [
        "SELECT count(*) FROM sales.orders",
        "SELECT * FROM hr.salaries",
        "SELECT site_id FROM sales.sites ORDER BY site_id LIMIT 3",
        "SELECT nonsense FROM sales.sites",
        "SELECT @@datadir",
        "SELECT max(amount) FROM finance.payments",
    ]
    with open_executor(target, guard(layers)) as executor:
        one_by_one = [executor.run(sql) for sql in statements]
        batch = list(executor.run_all(statements))
    shape = [(o.refused, o.layer, o.rows, o.error is None) for o in one_by_one]
    assert [(o.refused, o.layer, o.rows, o.error is None) for o in batch] == shape
    assert shape[0][2] and shape[2][2] and shape[1][0]
