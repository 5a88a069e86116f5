"""Layer 1, the statement filter: one read-only query over allowlisted schemas, or a refusal.

The filter reads the statement with sqlglot in the guard's dialect and refuses, with a reason:

- anything but exactly one statement, or text sqlglot cannot parse;
- a statement that is not a query (SELECT, WITH, set operation, VALUES), and any data change,
  DDL, SELECT INTO, locking clause or utility command anywhere in the tree, CTEs included;
- a denylisted function (:mod:`t2s_pipeline.execution.policy`) and any table function in
  ``FROM`` that is not on the small allowlist;
- a table outside the allowlisted schemas. CTE names visible where they are used are not
  tables; an unqualified name resolves to the dialect's default schema. Names are compared
  case-folded by the dialect's rules (quoted names too).

It is a pure function that never raises: anything unexpected is itself a refusal.
"""

from __future__ import annotations

import functools

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from t2s_pipeline.execution.engine import first_line
from t2s_pipeline.execution.guard import FILTER, Guard, Refusal
from t2s_pipeline.execution.policy import (
    TABLE_FUNCTIONS,
    default_schema,
    fold_schema_names,
    is_denied_function,
)

_QUERY_ROOTS: tuple[type[exp.Expr], ...] = (exp.Query, exp.Values)
_WRITE_NODES: tuple[type[exp.Expr], ...] = tuple(
    getattr(exp, name)
    for name in (
        "DML", "DDL", "Alter", "Drop", "Command", "Set", "Pragma", "TruncateTable", "Use",
        "Attach", "Detach", "Install", "Transaction", "Commit", "Rollback", "Grant", "Revoke",
        "Analyze", "Describe", "Summarize", "Cache", "Uncache", "Refresh", "LoadData", "Into",
        "Lock", "Kill", "Export", "Declare", "Execute", "Show", "Comment", "Put", "Get",
    )
    if hasattr(exp, name)
)  # fmt: skip
_TABLE_FUNCTION_PARENTS = (exp.Table, exp.From, exp.Join, exp.Lateral)


def check_statement(sql: str, guard: Guard) -> Refusal | None:
    """The filter's verdict on one statement: ``None`` to let it through, else a Refusal.

    >>> guard = Guard(allowed_schemas=("sales",))
    >>> check_statement("SELECT count(*) FROM sales.orders", guard) is None
    True
    >>> check_statement("SELECT * FROM hr.salaries", guard).reason
    "table hr.salaries is outside the allowlisted schemas ['sales']"
    """
    return _verdict(sql, str(guard.dialect), tuple(guard.allowed_schemas))


def clear_verdict_cache() -> None:
    """Forget memoised verdicts (for benchmarks of the uncached path)."""
    _verdict.cache_clear()


@functools.lru_cache(maxsize=4096)
def _verdict(sql: str, dialect: str, allowed_schemas: tuple[str, ...]) -> Refusal | None:
    """The verdict depends on these three values only, so repeated statements are memoised."""
    try:
        return _check(sql, dialect, allowed_schemas)
    except Exception as error:  # the filter never raises: anything unexpected refuses
        return _refuse(f"the filter could not analyse the statement: {error}")


def _check(sql: str, dialect: str, allowed_schemas: tuple[str, ...]) -> Refusal | None:
    statements, problem = _parse(sql, dialect)
    if problem is not None:
        return _refuse(problem)
    tree = normalize_identifiers(statements[0], dialect=dialect)
    for check in (_check_kind, _check_functions):
        refusal = check(tree)
        if refusal is not None:
            return refusal
    return _check_tables(tree, dialect, allowed_schemas)


def _parse(sql: str, dialect: str) -> tuple[list[exp.Expr], str | None]:
    try:
        parsed = sqlglot.parse(sql, read=dialect)
    except sqlglot.errors.SqlglotError as error:
        return [], f"cannot parse the statement: {first_line(str(error))}"
    statements = [s for s in parsed if s is not None and not _is_empty(s)]
    if len(statements) != 1:
        return statements, f"expected exactly one statement, found {len(statements)}"
    return statements, None


def _is_empty(statement: exp.Expr) -> bool:
    return isinstance(statement, exp.Semicolon) and not statement.args


def _check_kind(tree: exp.Expr) -> Refusal | None:
    if not isinstance(tree, _QUERY_ROOTS):
        return _refuse(f"only read-only queries are allowed, not {tree.key.upper()}")
    for node in tree.walk():
        if isinstance(node, _WRITE_NODES):
            return _refuse(f"{node.key.upper()} is not allowed inside a query")
    return None


def _check_functions(tree: exp.Expr) -> Refusal | None:
    for node in tree.find_all(exp.Func):
        names = function_names(node)
        denied = sorted(name for name in names if is_denied_function(name))
        if denied:
            return _refuse(f"function {denied[0]} is denylisted")
        if isinstance(node.parent, _TABLE_FUNCTION_PARENTS) and not names & TABLE_FUNCTIONS:
            shown = min(names)
            return _refuse(
                f"table function {shown} is not on the allowlist {sorted(TABLE_FUNCTIONS)}"
            )
    return None


def function_names(node: exp.Func) -> set[str]:
    """Every lower-case name a function node may go by (as written, and sqlglot's names).

    >>> node = sqlglot.parse_one("SELECT read_csv('x')", read="duckdb").find(exp.Func)
    >>> sorted(function_names(node))
    ['read_csv', 'readcsv']
    """
    if isinstance(node, exp.Anonymous):
        return {node.name.lower()}
    return {name.lower() for name in node.sql_names()} | {node.key.lower()}


def _check_tables(tree: exp.Expr, dialect: str, allowed_schemas: tuple[str, ...]) -> Refusal | None:
    allowed = fold_schema_names(allowed_schemas, dialect)
    for table in tree.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            if isinstance(table.this, exp.Func):
                continue  # a table function: judged by _check_functions
            return _refuse(f"unsupported table reference {table.sql(dialect=dialect)}")
        if not table.db and not table.catalog and table.name in visible_cte_names(table):
            continue
        refusal = _check_table(table, dialect, allowed)
        if refusal is not None:
            return refusal
    return None


def _check_table(table: exp.Table, dialect: str, allowed: frozenset[str]) -> Refusal | None:
    schema = table.db or _unqualified_schema(table.name, dialect)
    name = f"{schema}.{table.name}"
    if dialect == "duckdb" and any(mark in table.name for mark in "/\\:."):
        return _refuse(f"table name {table.name!r} reads a file")
    if schema not in allowed:
        return _refuse(f"table {name} is outside the allowlisted schemas {sorted(allowed)}")
    return None


def _unqualified_schema(name: str, dialect: str) -> str:
    # PostgreSQL looks in pg_catalog before the search path, so pg_* names are catalog tables.
    if dialect == "postgres" and name.startswith("pg_"):
        return "pg_catalog"
    return default_schema(dialect)


def visible_cte_names(table: exp.Table) -> set[str]:
    """CTE names visible where ``table`` is used (lexical scope, earlier siblings only).

    >>> tree = sqlglot.parse_one("WITH a AS (SELECT 1) SELECT * FROM a")
    >>> sorted(visible_cte_names(tree.find(exp.Table)))
    ['a']
    """
    visible: set[str] = set()
    child: exp.Expr = table
    node = table.parent
    while node is not None:
        if isinstance(node, exp.With):
            visible |= _names_seen_from(node, child)
        else:
            with_ = node.args.get("with_")
            if isinstance(with_, exp.With) and with_ is not child:
                visible |= {cte.alias_or_name for cte in with_.expressions}
        child, node = node, node.parent
    return visible


def _names_seen_from(with_: exp.With, cte: exp.Expr) -> set[str]:
    names = [c.alias_or_name for c in with_.expressions]
    if with_.args.get("recursive"):
        return set(names)
    position = next((i for i, c in enumerate(with_.expressions) if c is cte), len(names))
    return set(names[:position])


def _refuse(reason: str) -> Refusal:
    return Refusal(layer=FILTER, reason=reason)
