"""The MySQL statement filter: sqlglot's reading (read_mysql) and the server's (check_server_reading).

Each divergence trick is a statement the server reads differently from a naive parser; each must
be refused for the reason that names what the server would run. No server is needed.
"""

from __future__ import annotations

import pytest

from t2s_pipeline.execution.catalogue import Catalogue
from t2s_pipeline.execution.read_mysql import check_server_reading, read_mysql, view_body_problem
from t2s_pipeline.execution.reading import Refused

ALLOWED = frozenset({"sales", "finance", "inventory"})
DATABASES = frozenset({"sales", "finance", "inventory", "hr", "pii", "mysql", "information_schema"})
SALES = Catalogue(search_path=("sales",), database="sales")


def refusal(sql: str, catalogue: Catalogue | None = SALES) -> str:
    with pytest.raises(Refused) as raised:
        read_mysql(sql, ALLOWED, catalogue)
    return str(raised.value)


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("SELECT 1 /*!50000 , (SELECT 1 FROM hr.salaries) */ FROM DUAL", "executes or obeys"),
        ("SELECT 1 /*! , LOAD_FILE('/etc/passwd') */", "executes or obeys"),
        ("SELECT 1 /*M!100000 , (SELECT 1 FROM hr.salaries) */", "executes or obeys"),
        ("SELECT /*+ MAX_EXECUTION_TIME(600000) */ 1", "hint"),
        ("/*!50000 DELETE FROM sales.orders */", "found 0"),  # nothing but the comment
        # `--` with no space after it is two minus signs: the subquery is live code
        ("SELECT 1 --(SELECT max(annual_salary) FROM hr.salaries)\nFROM DUAL", "hr.salaries"),
        # ... so a version comment after `--1` is live too
        ("SELECT 1 --1 /*!50000 , LOAD_FILE('/etc/passwd') */", "executes or obeys"),
        # a hash comment ends at the line's end
        ("SELECT 1 # note\n, (SELECT max(annual_salary) FROM hr.salaries)", "hr.salaries"),
        # a backslash escapes the quote: the string ends at the second quote
        ("SELECT '\\'', (SELECT max(annual_salary) FROM hr.salaries) -- '", "hr.salaries"),
        # a double-quoted text is a string with escapes, not a name
        ('SELECT "\\"", LOAD_FILE(\'/etc/passwd\') -- "', "load_file"),
        # comments do not nest: the first */ ends the comment
        ("SELECT 1 /* /* */ , (SELECT max(annual_salary) FROM hr.salaries) AS x -- */", "hr."),
        ("SELECT \\N AS x, annual_salary FROM hr.salaries", "cannot be read"),
        ("SELECT * FROM `hr` /* x */ . `salaries`", "hr.salaries"),
        ("SELECT * FROM { OJ sales.orders AS o LEFT JOIN hr.salaries AS s ON 1 = 1 }", "cannot"),
    ],
)
def test_divergence_tricks_are_refused(sql: str, reason: str) -> None:
    assert reason in refusal(sql)


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("SELECT 1; DROP TABLE sales.orders", "exactly one statement"),
        ("SELECT '\\''; DELETE FROM sales.orders; -- '", "exactly one statement"),
        ("DELETE FROM sales.orders", "only read-only queries"),
        ("SET SESSION max_statement_time = 0", "only read-only queries"),
        ("SELECT max(annual_salary) INTO @pay FROM hr.salaries", "SELECT ... INTO"),
        ("SELECT count(*) FROM sales.orders INTO @n", "cannot be read"),
        ("SELECT * FROM sales.orders FOR UPDATE", "a locking read"),
        ("SELECT * FROM sales.orders LOCK IN SHARE MODE", "a locking read"),
        ("SELECT @pay := 1", "a user variable"),
        ("SELECT @@datadir", "a system variable"),
        ("SELECT LOAD_FILE('/etc/passwd')", "function load_file"),
        ("SELECT SLEEP(60)", "function sleep"),
        ("SELECT GET_LOCK('t2s', 0)", "function get_lock"),
        ("SELECT NEXTVAL(sales.seq)", "function nextval"),
        ("SELECT sales.evil()", "is qualified"),
        ("SELECT * FROM hr.salaries", "outside the allowlisted databases"),
        ("SELECT * FROM information_schema.TABLES", "outside the allowlisted databases"),
        ("SELECT * FROM mysql.user", "outside the allowlisted databases"),
        ("SELECT * FROM sales.hr.salaries", "catalog part"),
        ("WITH orders AS (SELECT * FROM hr.salaries) SELECT * FROM orders", "hr.salaries"),
        ("SHOW GRANTS", "only read-only queries"),
        ("HANDLER hr.salaries OPEN", "cannot be read"),
        ("/* nothing */ -- here", "found 0"),
    ],
)
def test_each_refusal_reason(sql: str, reason: str) -> None:
    assert reason in refusal(sql)


def test_unqualified_table_needs_an_allowed_connection_database() -> None:
    read_mysql("SELECT * FROM orders", ALLOWED, SALES)
    read_mysql("SELECT * FROM `hr.salaries`", ALLOWED, SALES)  # one name: sales.`hr.salaries`
    assert "resolves to database hr" in refusal(
        "SELECT * FROM salaries", Catalogue(search_path=("hr",), database="hr")
    )
    assert "resolves to no database" in refusal("SELECT * FROM orders", None)


def test_a_view_the_catalogue_found_unsafe_is_refused() -> None:
    """A materialised view over hr is not expanded in the server's reading: the catalogue's
    finding is what stops it, qualified or not."""
    catalogue = Catalogue(
        search_path=("sales",), database="sales", unsafe=(("sales", "pay", "reads hr.salaries"),)
    )
    assert "reads hr.salaries" in refusal("SELECT * FROM sales.pay", catalogue)
    assert "reads hr.salaries" in refusal("SELECT * FROM pay", catalogue)
    read_mysql("WITH pay AS (SELECT 1 AS a) SELECT a FROM pay", ALLOWED, catalogue)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT a FROM sales.t WHERE a AND b OR NOT c XOR d",
        "SELECT site_id FROM sales.sites WHERE site_name REGEXP '^[A-M]' ORDER BY site_name COLLATE utf8mb4_bin",
        "SELECT doc->>'$.x', LOCALTIMESTAMP, LOCALTIME FROM sales.t",
        "SELECT count(*) FROM sales.customers WHERE customer_name <> 'O\\'Brien' AND customer_name <> \"it''s\"",
        "SELECT count(*) /* plain */ FROM sales.orders -- trailing\n# hash\nWHERE order_id > 0",
        "SELECT 1 --1",
        "SELECT seq FROM seq_1_to_10",
        "SELECT `o`.`order_id` FROM `sales`.`orders` AS `o` LIMIT 10, 5",
        "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v",
        "WITH RECURSIVE d(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM d WHERE n < 29) SELECT n FROM d",
        "SELECT GROUP_CONCAT(site_id ORDER BY site_id SEPARATOR ',') FROM sales.sites",
    ],
)
def test_ordinary_mysql_is_served(sql: str) -> None:
    read_mysql(sql, ALLOWED, SALES)


def server(text: str, aliases: frozenset[str] = frozenset()) -> None:
    check_server_reading(text, ALLOWED, DATABASES, aliases)


def test_server_reading_sees_an_expanded_view_and_a_hidden_table() -> None:
    server("select `sales`.`o`.`a` AS `a` from `sales`.`orders` `o`")
    with pytest.raises(Refused, match="hr.salaries"):
        server("/* select#1 */ select `hr`.`salaries`.`annual_salary` AS `p` from `hr`.`salaries`")
    with pytest.raises(Refused, match="hr.salaries"):
        server(
            "select 1 - -(/* select#2 */ select max(`hr`.`salaries`.`annual_salary`) from `hr`.`salaries`) AS `x`"
        )


def test_server_reading_names_that_are_not_databases() -> None:
    """A derived table or CTE named like a database is not one; neither is an unknown name."""
    server("select `hr`.`n` AS `n` from (select 1 AS `n`) `hr`", aliases=frozenset({"hr"}))
    server("select `nowhere`.`t`.`a` AS `a` from `nowhere`.`t`")
    with pytest.raises(Refused):
        server("select `hr`.`n` AS `n` from `hr`.`n`")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        # a stored function named like a MySQL built-in MariaDB lacks (ANY_VALUE)
        ("select `any_value`(1) AS `top_pay`", "stored routine any_value"),
        ("select `sales`.`t2s_f`() AS `x`", "stored routine"),
        # a built-in with effects, from an expanded view body
        ("select load_file('/etc/passwd') AS `f` from dual", "load_file"),
        ("select sleep(5) AS `s`", "sleep"),
        ("select nextval(`sales`.`s`) AS `n`", "nextval"),
        ("select get_lock('x',0) AS `l`", "get_lock"),
    ],
)
def test_server_reading_refuses_calls(text: str, reason: str) -> None:
    with pytest.raises(Refused, match=reason):
        server(text)


def test_server_reading_serves_ordinary_plans() -> None:
    server(
        "with recursive r(`n`) as (/* select#2 */ select 1 AS `n` union all /* select#3 */ "
        "select `r`.`n` + 1 AS `n + 1` from `r`)/* select#1 */ select count(0) AS `count(*)` from `r`",
        aliases=frozenset({"r"}),
    )
    server(
        "/* select#1 */ select 1 AS `1` from DUAL  where <in_optimizer>(1,exists(/* select#2 */ "
        "select 1 from `sales`.`orders` limit 1))"
    )
    server("select date_format(`sales`.`o`.`d`,'%Y') AS `y`,count(0) AS `n` from `sales`.`o`")


def test_view_body_problem() -> None:
    """What the catalogue reader needs to call a view over a function or a file unsafe."""
    assert view_body_problem("select `sales`.`o`.`a` AS `a` from `sales`.`o`", ALLOWED) is None
    assert "load_file" in (
        view_body_problem("select load_file('/etc/passwd') AS `f`", ALLOWED) or ""
    )
    assert "qualified" in (
        view_body_problem("select `sales`.`f`(1) AS `p` from `sales`.`sites`", ALLOWED) or ""
    )
    assert "hr.salaries" in (
        view_body_problem("select `hr`.`salaries`.`a` AS `a` from `hr`.`salaries`", ALLOWED) or ""
    )
