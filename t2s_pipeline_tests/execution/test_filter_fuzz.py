"""Fuzzing the statement filter: it never raises and never passes a statement that writes.

Statements are random token strings and mutations of the hostile suite's own SQL (attacks and
controls). Whatever the filter lets through is checked by oracles that do not share its code:
the engine's own parser read directly (DuckDB: exactly one SELECT; PostgreSQL: one SelectStmt
and no other statement node anywhere), and, where sqlglot can read the text, a hand-written list
of statement node types in sqlglot's tree and the unqualified-name and dangerous-function rules
restated here. MySQL has no parser binding: its oracle is the sqlglot one (plus no variables or
hints), and the server's own readings are tested on a real MariaDB (test_mysql_engine.py).
"""

from __future__ import annotations

import json

import duckdb
import sqlglot
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pglast import parser as pg_parser
from sqlglot import exp

from t2s_pipeline.execution import Guard, check_statement
from t2s_pipeline.execution.hostile import load_suite
from t2s_pipeline.suites import HOSTILE_SUITE

SUITE = HOSTILE_SUITE
SEEDS = sorted({(engine, sql) for a in load_suite(SUITE) for engine, sql in a.sql.items() if sql})
CONTROLS = [(engine, sql) for a in load_suite(SUITE) if a.expect == "allowed"
            for engine, sql in sorted(a.sql.items()) if sql]  # fmt: skip
DIALECTS = ("duckdb", "postgres", "sqlite", "mysql")
ALLOWED = {"duckdb": ("sales", "finance", "inventory"), "postgres": ("sales", "finance"),
           "sqlite": ("main",), "mysql": ("sales", "finance", "inventory")}  # fmt: skip
TOKENS = [
    "SELECT", "*", "FROM", "sales.orders", "hr.salaries", "pii.customer_contacts", "orders", ";",
    "DELETE", "INSERT INTO", "UPDATE", "SET", "DROP TABLE", "CREATE", "TEMP", "TABLE", "WITH",
    "RECURSIVE", "AS", "(", ")", "'", '"', "--", "/*", "*/", "\\", "$$", "E'", "UNION ALL",
    "INTO", "COPY", "TO", "PROGRAM", "ATTACH", "PRAGMA", "INSTALL", "LOAD", "USE", "RESET",
    "BEGIN", "COMMIT", "EXPLAIN ANALYZE", "VALUES", "CALL", "RETURNING", "FOR UPDATE", "LIMIT 1",
    "WHERE", "1", "x", ",", "read_csv('/etc/passwd')", "pg_read_file('x')", "pg_sleep(9)",
    "query('SELECT 1')", "dblink('a', 'b')", "lo_import('x')", "load_extension('x')",
    "generate_series(1, 9)", "range(9)", "salaries", "s", "JOIN", "ON", "LATERAL", "EXISTS",
    "/*!", "/*M!", "/*+", "#", "@@datadir", "@x", "LOAD_FILE('/etc/passwd')", "SLEEP(9)",
    "GET_LOCK('a', 1)", "INTO OUTFILE '/tmp/x'", "`hr`.`salaries`", "LOCK IN SHARE MODE",
    "PROCEDURE ANALYSE()", "HANDLER", "DO", "SET STATEMENT max_statement_time=0 FOR",
]  # fmt: skip
WRITES = {
    "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "Command", "Copy", "Set",
    "Pragma", "TruncateTable", "Attach", "Detach", "Install", "Into", "Lock", "Use",
    "Transaction", "Commit", "Rollback", "Export", "Grant", "Revoke", "Describe", "Analyze",
}  # fmt: skip
DANGEROUS = {"read_csv", "read_text", "pg_read_file", "pg_sleep", "dblink", "lo_import",
             "load_extension", "readfile", "glob", "query", "getenv", "set_config", "sleep",
             "load_file", "benchmark", "get_lock", "release_lock"}  # fmt: skip
DUCKDB = duckdb.connect()
FUZZ = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _mutate(seed: tuple[str, str], edits: list[tuple[int, int, str]]) -> tuple[str, str]:
    engine, sql = seed
    words = sql.split()
    for kind, position, token in edits:
        at = position % (len(words) + 1)
        if kind == 0:
            words.insert(at, token)
        elif kind == 1 and words:
            words.pop(at % len(words))
        elif words:
            words[at % len(words)] = token
    return engine, " ".join(words)


edit = st.tuples(st.integers(0, 2), st.integers(0, 200), st.sampled_from(TOKENS))
mutated = st.builds(_mutate, st.sampled_from(SEEDS), st.lists(edit, max_size=4))
random_tokens = st.tuples(
    st.sampled_from(DIALECTS),
    st.lists(st.sampled_from(TOKENS), min_size=1, max_size=14).map(" ".join),
)
GLUES = ["{a}; {b}", "SELECT * FROM ({a}) AS t", "WITH t AS ({a}) {b}", "{a} UNION {b}"]
combined = st.builds(
    lambda a, b, glue: (a[0], glue.format(a=a[1], b=b[1])),
    st.sampled_from(SEEDS),
    st.sampled_from(SEEDS),
    st.sampled_from(GLUES),
)
any_text = st.tuples(st.sampled_from(DIALECTS), st.text(max_size=80))
CONTROL_PAIRS = [(e, a, b) for e, a in CONTROLS for f, b in CONTROLS if e == f]
combined_controls = st.builds(
    lambda pair, glue: (pair[0], glue.format(a=pair[1], b=pair[2])),
    st.sampled_from(CONTROL_PAIRS),
    st.sampled_from(GLUES),
)
# Light edits of controls stay mostly valid, so the oracles below see many passed statements.
lightly_mutated = st.builds(
    _mutate, st.sampled_from(CONTROLS), st.lists(edit, min_size=1, max_size=2)
)
statements = st.one_of(
    mutated,
    lightly_mutated,
    st.builds(_mutate, combined_controls, st.lists(edit, max_size=1)),
    combined_controls,
    random_tokens,
    combined,
    any_text,
)


@FUZZ
@given(statement=statements)
def test_filter_never_raises_and_never_passes_a_write(statement: tuple[str, str]) -> None:
    """The filter is total, and everything it passes is one read-only query by every oracle."""
    dialect, sql = statement
    guard = Guard(allowed_schemas=ALLOWED[dialect], dialect=dialect)
    refusal = check_statement(sql, guard)
    event("refused" if refusal else "passed")
    if refusal is not None:
        assert refusal.layer == "filter" and refusal.reason
        return
    _assert_read_only(sql, dialect)


def _assert_read_only(sql: str, dialect: str) -> None:
    if dialect == "duckdb":
        _assert_duckdb_reads_one_select(sql)
    elif dialect == "postgres":
        _assert_postgres_reads_one_select(sql)
    try:
        trees = [t for t in sqlglot.parse(sql, read=dialect) if t is not None]
    except sqlglot.errors.SqlglotError:
        return  # the engine's own parser is the authority; sqlglot's reading is a second oracle
    _assert_sqlglot_sees_no_write(sql, dialect, trees)


def _assert_postgres_reads_one_select(sql: str) -> None:
    tree = json.loads(pg_parser.parse_sql_json(sql))
    assert len(tree["stmts"]) == 1 and "SelectStmt" in tree["stmts"][0]["stmt"], sql
    stack: list[object] = [tree]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            kinds = {k for k in value if k.endswith("Stmt") and k != "SelectStmt"}
            assert not kinds and "intoClause" not in value, (sql, kinds)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


def _assert_sqlglot_sees_no_write(sql: str, dialect: str, trees: list[exp.Expr]) -> None:
    trees = [t for t in trees if not (isinstance(t, exp.Semicolon) and not t.args)]
    assert len(trees) == 1, sql
    tree = trees[0]
    kinds = {type(node).__name__ for node in tree.walk()}
    if dialect == "mysql":  # variables are session state there (SPEC 9: no session changes)
        assert not kinds & {"Parameter", "SessionParameter", "Hint"}, (sql, kinds)
    kinds |= {base.__name__ for node in tree.walk() for base in type(node).__mro__}
    assert not kinds & WRITES, (sql, kinds & WRITES)
    names = {f.name.lower() for f in tree.find_all(exp.Anonymous)}
    assert not names & DANGEROUS, sql
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        if isinstance(table.this, exp.Identifier) and not table.db:
            assert dialect == "sqlite" or table.name.lower() in ctes, sql


def _assert_duckdb_reads_one_select(sql: str) -> None:
    try:
        parsed = DUCKDB.extract_statements(sql)
    except duckdb.Error:
        return  # DuckDB cannot even parse it, so it cannot run
    assert len(parsed) == 1 and parsed[0].type == duckdb.StatementType.SELECT, sql


def test_seeds_include_attacks_and_controls() -> None:
    """The mutations start from real hostile and legitimate SQL, not only random text."""
    assert len(SEEDS) > 100
