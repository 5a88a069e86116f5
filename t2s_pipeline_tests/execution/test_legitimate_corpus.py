"""The legitimate-SQL corpus: large, distinct, reading only allowed schemas, and runnable.

Over-blocking is measured on this corpus (SPEC section 9): a refusal of any statement in it
is a guard bug. That only holds if the corpus itself is sound, so these tests check it
without the guard: every statement reads nothing outside sales, finance and inventory (read
with sqlglot, independently of the engines' own parsers the filter uses), and every one runs,
quickly, on the bare database of its engine. On MySQL (MariaDB, when one can start here) the
corpus is also run through the guard under every layer setting: no statement may be refused.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import psycopg2
import pytest
import sqlglot
from sqlglot import exp

from t2s_pipeline.demo.postgres import drop_database, load_postgres, with_database
from t2s_pipeline.demo.schema import ALLOWED_SCHEMAS, TABLES
from t2s_pipeline.execution.hostile import OK, run_corpus
from t2s_pipeline.execution.hostile_targets import EngineTarget, mysql_target
from t2s_pipeline.execution.mysql_engine import MySQLTarget
from t2s_pipeline.execution.sqlite_copy import build_sqlite_copy
from t2s_pipeline.suites.compose import DEFAULT_DATABASE, generated_statements
from t2s_pipeline.suites.legitimate import (
    GENERATED,
    LEGITIMATE_OBJECTS,
    SEARCH_PATH,
    SEARCH_PATH_SCHEMAS,
    LegitStatement,
    legitimate_corpus,
    legitimate_object_names,
)
from t2s_pipeline_tests.mariadb import mariadb_unavailable_reason

ENGINES = ("duckdb", "postgres", "sqlite", "mysql")
MINIMUM = 1000
MINIMUM_HANDWRITTEN = 150
SLOW_S = 1.0
"""Each statement must finish well inside this on the test warehouse (scale 0.05)."""
TIMEOUT_S = 10.0

QUALIFIED_TABLES = frozenset(t.qualified for t in TABLES if t.schema in ALLOWED_SCHEMAS)
PLAIN_TABLES = frozenset(t.name for t in TABLES if t.schema in ALLOWED_SCHEMAS)
TABLE_FUNCTIONS = frozenset(
    {
        "range",
        "generate_series",
        "exploding_generate_series",  # sqlglot's name for PostgreSQL's generate_series
        "unnest",
        "json_each",
        "json_each_text",
        "json_tree",
        "jsonb_each",
        "jsonb_array_elements",
        "jsonb_array_elements_text",
        "regexp_split_to_table",
        "json_table",
    }
)
"""Set-returning functions over their arguments only; they read no relation."""
MARIADB_SEQUENCE = re.compile(r"seq_\d+_to_\d+(_step_\d+)?")
"""MariaDB's SEQUENCE engine tables (``seq_1_to_12``): generated numbers, in any database."""
SQLGLOT_UNREADABLE = frozenset(
    {"dialect-mysql-group-concat-limit", "over-block-values-list", "tf-values-standalone"}
)
"""MySQL statements sqlglot cannot parse (GROUP_CONCAT ... LIMIT, VALUES); checked by tokens."""
OTHER_DATABASES = frozenset(
    {t.schema for t in TABLES} - set(ALLOWED_SCHEMAS)
    | {"mysql", "information_schema", "performance_schema", "sys"}
)


@pytest.mark.parametrize("engine", ENGINES)
def test_corpus_is_large_and_distinct(engine: str) -> None:
    """The corpus must be as large as the hostile suite's reach: 1,000+ distinct texts."""
    corpus = legitimate_corpus(engine)
    assert len({s.sql for s in corpus}) == len(corpus) >= MINIMUM
    handwritten = [s for s in corpus if s.origin != GENERATED]
    assert len(handwritten) >= MINIMUM_HANDWRITTEN
    assert all(s.engine == engine for s in corpus)


@pytest.mark.parametrize("engine", ENGINES)
def test_ids_are_unique_and_plain(engine: str) -> None:
    """A refusal report names statements by id: ids must be unique and safe in a file name."""
    ids = [s.id for s in legitimate_corpus(engine)]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[a-z0-9-]+", i) for i in ids)


@pytest.mark.parametrize("engine", ENGINES)
def test_generation_is_deterministic(engine: str) -> None:
    """Over-block counts are compared across runs; the corpus must not change between them."""
    assert generated_statements(engine) == generated_statements(engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_every_statement_reads_only_allowed_relations(engine: str) -> None:
    """A statement that touched hr, pii or meta would make a correct refusal look like a bug."""
    problems = [f"{s.id}: {problem}" for s in legitimate_corpus(engine) for problem in _outside(s)]
    assert not problems, "\n".join(problems[:50])


@pytest.mark.parametrize(
    ("engine", "sql", "origin"),
    [
        ("duckdb", "SELECT * FROM hr.salaries", "joins"),
        (
            "duckdb",
            "SELECT o.order_id FROM sales.orders AS o JOIN pii.customer_contacts USING (customer_id)",
            "joins",
        ),
        ("duckdb", "SELECT * FROM read_csv('/etc/passwd')", "joins"),
        ("duckdb", "SELECT * FROM source.sales.orders", "joins"),
        ("duckdb", "SELECT meta.snapshot_of(1)", "joins"),
        ("postgres", "SELECT * FROM orders", "joins"),
        ("postgres", "SELECT count(*) FROM salaries", SEARCH_PATH),
        ("postgres", "SELECT (SELECT max(annual_salary) FROM hr.salaries) AS top", "joins"),
        ("sqlite", "SELECT * FROM hr_salaries", "joins"),
        ("sqlite", "SELECT * FROM sensitive.pii_customer_contacts", "joins"),
        ("mysql", "SELECT * FROM hr.salaries", "joins"),
        ("mysql", "SELECT count(*) FROM invoices", "joins"),
        ("mysql", "SELECT * FROM mysql.user", "joins"),
    ],
)
def test_the_allowlist_check_flags_outside_reads(engine: str, sql: str, origin: str) -> None:
    """The check above must be able to fail: each of these reads outside the allowlist."""
    assert _outside(LegitStatement("probe", engine, sql, origin))


def test_search_path_statements_are_postgres_only() -> None:
    """Unqualified names are resolved by the PostgreSQL role's search_path, nowhere else."""
    for engine in ("duckdb", "sqlite", "mysql"):
        assert not [s for s in legitimate_corpus(engine) if s.origin == SEARCH_PATH]
    assert [s for s in legitimate_corpus("postgres") if s.origin == SEARCH_PATH]


def test_duckdb_statements_run_on_the_bare_database(duckdb_corpus_database: Path) -> None:
    """Every DuckDB statement runs on the warehouse (objects applied), read-only, unguarded."""
    con = duckdb.connect(str(duckdb_corpus_database), read_only=True)
    try:
        failures = _failures(legitimate_corpus("duckdb"), lambda s: con.execute(s.sql).fetchall())
    finally:
        con.close()
    assert not failures, "\n".join(failures)


def test_sqlite_statements_run_on_the_bare_database(sqlite_corpus_database: Path) -> None:
    """Every SQLite statement runs on the read-only SQLite copy (views applied), unguarded."""
    con = sqlite3.connect(f"file:{sqlite_corpus_database}?mode=ro", uri=True)
    deadline = [0.0]
    con.set_progress_handler(lambda: int(time.perf_counter() > deadline[0]), 10_000)

    def run(statement: LegitStatement) -> Any:
        deadline[0] = time.perf_counter() + TIMEOUT_S
        return con.execute(statement.sql).fetchall()

    try:
        failures = _failures(legitimate_corpus("sqlite"), run)
    finally:
        con.close()
    assert not failures, "\n".join(failures)


@pytest.mark.postgres
def test_postgres_statements_run_on_the_bare_database(postgres_corpus_database: str) -> None:
    """Every PostgreSQL statement runs read-only on the loaded warehouse, unguarded; those of
    origin search-path with the search_path the reader role is given."""
    search_path = ",".join(SEARCH_PATH_SCHEMAS)
    plain = _pg_connect(postgres_corpus_database, "")
    resolved = _pg_connect(postgres_corpus_database, f"-c search_path={search_path}")
    cursors = {False: plain.cursor(), True: resolved.cursor()}

    def run(statement: LegitStatement) -> Any:
        cursor = cursors[statement.origin == SEARCH_PATH]
        cursor.execute(statement.sql)
        return cursor.fetchall()

    try:
        failures = _failures(legitimate_corpus("postgres"), run)
    finally:
        plain.close()
        resolved.close()
    assert not failures, "\n".join(failures)


def test_mysql_statements_run_on_the_bare_database(mysql_corpus_target: EngineTarget) -> None:
    """Every MySQL statement runs on the loaded warehouse (views applied) as its administrator,
    unguarded, connected to the ``sales`` database like the reader."""
    conn = MySQLTarget.parse(mysql_corpus_target.unguarded).connect()
    cursor = conn.cursor()
    cursor.execute(f"SET SESSION max_statement_time = {TIMEOUT_S}")

    def run(statement: LegitStatement) -> Any:
        cursor.execute(statement.sql)
        return cursor.fetchall()

    try:
        failures = _failures(legitimate_corpus("mysql"), run)
    finally:
        conn.close()
    assert not failures, "\n".join(failures)


def test_mysql_corpus_is_never_refused(mysql_corpus_target: EngineTarget) -> None:
    """The corpus through the guard with the filter alone, the database layer alone and both:
    every statement is served and returns what the bare database returns (no over-block),
    MariaDB's own forms sqlglot's MySQL refuses (VALUES as a query, GROUP_CONCAT ... LIMIT)
    included."""
    corpus = legitimate_corpus("mysql")
    report = run_corpus({"mysql": corpus}, [mysql_corpus_target])
    assert len(report.cells) >= 3 * len(corpus)
    failures = [
        f"{c.layer} {c.attack}: {c.how} {c.detail}" for c in report.cells if c.verdict != OK
    ]
    assert not failures, f"{len(failures)} over-blocks:\n" + "\n".join(failures)


# --- fixtures ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def duckdb_corpus_database(warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the test warehouse with the corpus's views and macros created by its owner."""
    path = tmp_path_factory.mktemp("legitimate-duckdb") / "warehouse.duckdb"
    shutil.copyfile(warehouse, path)
    con = duckdb.connect(str(path))
    try:
        for ddl in LEGITIMATE_OBJECTS["duckdb"]:
            con.execute(ddl)
    finally:
        con.close()
    return path


@pytest.fixture(scope="module")
def sqlite_corpus_database(warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The SQLite copy of the test warehouse, with the corpus's views in ``main``."""
    copy = build_sqlite_copy(warehouse, tmp_path_factory.mktemp("legitimate-sqlite") / "w.sqlite")
    con = sqlite3.connect(copy.main)
    try:
        for ddl in LEGITIMATE_OBJECTS["sqlite"]:
            con.execute(ddl)
        con.commit()
    finally:
        con.close()
    return copy.main


@pytest.fixture(scope="module")
def postgres_corpus_database(warehouse: Path, pg_url: str) -> Iterator[str]:
    """The test warehouse loaded into a throw-away database with the views; the owner's URL."""
    database = f"t2s_corpus_check_{uuid.uuid4().hex[:8]}"
    load_postgres(warehouse, pg_url, database, "t2s_corpus_reader", "t2s_corpus_reader")
    owner = with_database(pg_url, database)
    try:
        conn = psycopg2.connect(owner)
        try:
            with conn.cursor() as cursor:
                for ddl in LEGITIMATE_OBJECTS["postgres"]:
                    cursor.execute(ddl)
            conn.commit()
        finally:
            conn.close()
        yield owner
    finally:
        drop_database(pg_url, database)


@pytest.fixture(scope="module")
def mysql_corpus_target(warehouse: Path, request: pytest.FixtureRequest) -> Iterator[EngineTarget]:
    """The test warehouse loaded into the session's private MariaDB server, the corpus's views
    created by the administrator; skipped with the reason when no MariaDB can start here."""
    reason = mariadb_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    target = mysql_target(warehouse, request.getfixturevalue("mysql_admin_url"))
    try:
        yield target
    finally:
        target.cleanup()


# --- helpers -----------------------------------------------------------------------------


def _failures(
    statements: tuple[LegitStatement, ...], run: Callable[[LegitStatement], Any]
) -> list[str]:
    """``id [origin]: why`` for each statement that fails or takes ``SLOW_S`` or longer."""
    failures = []
    for statement in statements:
        started = time.perf_counter()
        try:
            run(statement)
        except Exception as error:  # any engine error is a broken corpus entry
            first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
            failures.append(f"{statement.id} [{statement.origin}]: {first_line}")
            continue
        seconds = time.perf_counter() - started
        if seconds >= SLOW_S:
            failures.append(f"{statement.id} [{statement.origin}]: took {seconds:.2f}s")
    return failures


def _pg_connect(url: str, options: str) -> Any:
    conn = psycopg2.connect(url, options=f"{options} -c statement_timeout={int(TIMEOUT_S * 1000)}")
    conn.set_session(readonly=True, autocommit=True)
    return conn


def _outside(statement: LegitStatement) -> list[str]:
    """What ``statement`` reads that is not an allowed table, a CTE, a constant table function
    or one of the corpus's own views and macros."""
    if statement.id in SQLGLOT_UNREADABLE:
        return _outside_by_tokens(statement)
    trees = [t for t in sqlglot.parse(statement.sql, read=statement.engine) if t is not None]
    if len(trees) != 1:
        return [f"is {len(trees)} statements"]
    tree = trees[0]
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    objects = legitimate_object_names(statement.engine)
    plain = _plain_names(statement)
    problems = []
    for table in tree.find_all(exp.Table):
        schema, name = table.db.lower(), table.name.lower()
        if table.catalog:
            problems.append(f"names a catalog: {table.sql(statement.engine)}")
        elif isinstance(table.this, exp.Func):
            function = _function_name(table.this)
            allowed = f"{schema}.{function}" in objects if schema else function in TABLE_FUNCTIONS
            if not allowed:
                problems.append(f"table function {schema + '.' if schema else ''}{function}")
        elif schema:
            if f"{schema}.{name}" not in QUALIFIED_TABLES | objects:
                problems.append(f"reads {schema}.{name}")
        elif statement.engine == "mysql" and MARIADB_SEQUENCE.fullmatch(name):
            continue
        elif name not in ctes | plain:
            problems.append(f"reads unqualified {name}")
    for call in tree.find_all(exp.Dot):
        if isinstance(call.expression, exp.Func):
            qualified = f"{call.this.name.lower()}.{_function_name(call.expression)}"
            if qualified not in objects:
                problems.append(f"calls {qualified}")
    return problems


def _plain_names(statement: LegitStatement) -> frozenset[str]:
    """Unqualified names that resolve to allowed relations: SQLite's ``main``, and PostgreSQL
    through the search_path of statements that need it."""
    if statement.engine == "sqlite":
        return PLAIN_TABLES | legitimate_object_names("sqlite")
    if statement.origin == SEARCH_PATH:
        views = {name.split(".", 1)[1] for name in legitimate_object_names("postgres")}
        return PLAIN_TABLES | views
    if statement.engine == "mysql":  # the reader's database
        names = {t.qualified for t in TABLES} | legitimate_object_names("mysql")
        return frozenset(
            name.split(".", 1)[1] for name in names if name.startswith(f"{DEFAULT_DATABASE}.")
        )
    return frozenset()


def _outside_by_tokens(statement: LegitStatement) -> list[str]:
    """What a statement sqlglot tokenizes but cannot parse reads outside the allowlist: a
    dotted name in another database, or a name after FROM or JOIN that is neither qualified
    with an allowed one, nor a plain name of the reader's database, nor a CTE of its own."""
    tokens = [t.text for t in sqlglot.tokenize(statement.sql, read=statement.engine)]
    problems = []
    for before, dot, after in zip(tokens, tokens[1:], tokens[2:], strict=False):
        if dot == "." and before.lower() in OTHER_DATABASES:
            problems.append(f"reads {before}.{after}")
    ctes = {
        name for keyword, name in zip(tokens, tokens[1:], strict=False) if keyword.upper() == "WITH"
    }
    for keyword, name, follower in zip(tokens, tokens[1:], tokens[2:] + [""], strict=False):
        if keyword.upper() not in ("FROM", "JOIN") or name == "(":
            continue
        if follower == "." and name.lower() in ALLOWED_SCHEMAS:
            continue
        if name not in ctes and name not in _plain_names(statement):
            problems.append(f"reads unqualified {name}")
    return problems


def _function_name(function: exp.Func) -> str:
    if isinstance(function, exp.Anonymous):
        return str(function.this).lower()
    if isinstance(function, exp.JSONTable):  # its sql_name() is j_s_o_n_table
        return "json_table"
    return function.sql_name().lower()
