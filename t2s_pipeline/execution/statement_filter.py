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
from sqlglot.dialects.dialect import Dialect

from t2s_pipeline.execution.engine import first_line
from t2s_pipeline.execution.guard import FILTER, Guard, Refusal
from t2s_pipeline.execution.policy import (
    TABLE_FUNCTIONS,
    default_schema,
    fold_identifier,
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
_CHECKED_NODES: tuple[type[exp.Expr], ...] = (*_WRITE_NODES, exp.Func, exp.Table)


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
    names = _names(dialect, allowed_schemas)
    statements, problem = _parse(sql, names.engine)
    if problem is not None:
        return _refuse(problem)
    tree = statements[0]
    if not isinstance(tree, _QUERY_ROOTS):
        return _refuse(f"only read-only queries are allowed, not {_kind(tree, sql, names)}")
    # One walk checks every node of interest; the first refusal in breadth-first order wins.
    for node in tree.find_all(*_CHECKED_NODES):
        refusal: Refusal | None
        if isinstance(node, _WRITE_NODES):
            refusal = _refuse(f"{node.key.upper()} is not allowed inside a query")
        elif isinstance(node, exp.Func):
            refusal = _check_function(node)
        elif isinstance(node, exp.Table):
            refusal = _check_table(node, names)
        else:
            refusal = None
        if refusal is not None:
            return refusal
    return None


def _parse(sql: str, engine: Dialect) -> tuple[list[exp.Expr], str | None]:
    try:
        parsed = engine.parse(sql)
    except sqlglot.errors.SqlglotError as error:
        return [], f"cannot parse the statement: {first_line(str(error))}"
    statements = [s for s in parsed if s is not None and not _is_empty(s)]
    if len(statements) != 1:
        return statements, f"expected exactly one statement, found {len(statements)}"
    return statements, None


def _kind(tree: exp.Expr, sql: str, names: _Names) -> str:
    """What the statement is, as the user wrote it: ``DROP``, ``VACUUM``, ``CHECKPOINT``.

    sqlglot reads an unknown utility command as a raw Command, or a bare word such as
    CHECKPOINT as a column; the first keyword names either better than the node type.
    """
    if isinstance(tree, exp.DDL | exp.DML | exp.Set | exp.Pragma):
        return tree.key.upper()
    tokens = names.engine.tokenize(sql)
    return tokens[0].text.upper() if tokens else tree.key.upper()


def _is_empty(statement: exp.Expr) -> bool:
    return isinstance(statement, exp.Semicolon) and not statement.args


def _check_function(node: exp.Func) -> Refusal | None:
    names = function_names(node)
    denied = sorted(name for name in names if is_denied_function(name))
    if denied:
        return _refuse(f"function {denied[0]} is denylisted")
    if isinstance(node.parent, _TABLE_FUNCTION_PARENTS) and not names & TABLE_FUNCTIONS:
        shown = min(names)
        return _refuse(f"table function {shown} is not on the allowlist {sorted(TABLE_FUNCTIONS)}")
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


class _Names:
    """The dialect, its parser and the allowlist folded by the dialect's rules."""

    def __init__(self, dialect: str, allowed: frozenset[str]) -> None:
        self.dialect = dialect
        self.engine = Dialect.get_or_raise(dialect)
        self.allowed = allowed

    def fold(self, identifier: exp.Expr | None) -> str:
        """The name as the database resolves it, quoted names too (``""`` when absent)."""
        if not isinstance(identifier, exp.Identifier):
            return identifier.name if identifier is not None else ""
        return fold_identifier(identifier.name, bool(identifier.quoted), self.dialect)


@functools.lru_cache(maxsize=64)
def _names(dialect: str, allowed_schemas: tuple[str, ...]) -> _Names:
    return _Names(dialect, fold_schema_names(allowed_schemas, dialect))


def _check_table(table: exp.Table, names: _Names) -> Refusal | None:
    if not isinstance(table.this, exp.Identifier):
        if isinstance(table.this, exp.Func):
            return None  # a table function: judged as a function
        return _refuse(f"unsupported table reference {table.sql(dialect=names.dialect)}")
    name = names.fold(table.this)
    schema = names.fold(table.args.get("db"))
    if not schema and not table.args.get("catalog") and name in visible_cte_names(table, names):
        return None
    schema = schema or _unqualified_schema(name, names.dialect)
    if names.dialect == "duckdb" and any(mark in name for mark in "/\\:."):
        return _refuse(f"table name {name!r} reads a file")
    if schema not in names.allowed:
        return _refuse(
            f"table {schema}.{name} is outside the allowlisted schemas {sorted(names.allowed)}"
        )
    return None


def _unqualified_schema(name: str, dialect: str) -> str:
    # PostgreSQL looks in pg_catalog before the search path, so pg_* names are catalog tables.
    if dialect == "postgres" and name.startswith("pg_"):
        return "pg_catalog"
    return default_schema(dialect)


def visible_cte_names(table: exp.Table, names: _Names | None = None) -> set[str]:
    """CTE names visible where ``table`` is used (lexical scope, earlier siblings only).

    With ``names``, the CTE names are folded by the dialect's rules.

    >>> tree = sqlglot.parse_one("WITH a AS (SELECT 1) SELECT * FROM a")
    >>> sorted(visible_cte_names(tree.find(exp.Table)))
    ['a']
    """
    visible: list[exp.CTE] = []
    child: exp.Expr = table
    node = table.parent
    while node is not None:
        if isinstance(node, exp.With):
            visible += _ctes_seen_from(node, child)
        else:
            with_ = node.args.get("with_")
            if isinstance(with_, exp.With) and with_ is not child:
                visible += with_.expressions
        child, node = node, node.parent
    if names is None:
        return {cte.alias_or_name for cte in visible}
    return {names.fold(_alias_identifier(cte)) for cte in visible}


def _alias_identifier(cte: exp.CTE) -> exp.Expr | None:
    alias = cte.args.get("alias")
    return alias.this if isinstance(alias, exp.TableAlias) else alias


def _ctes_seen_from(with_: exp.With, cte: exp.Expr) -> list[exp.CTE]:
    ctes = list(with_.expressions)
    if with_.args.get("recursive"):
        return ctes
    position = next((i for i, c in enumerate(ctes) if c is cte), len(ctes))
    return ctes[:position]


def _refuse(reason: str) -> Refusal:
    return Refusal(layer=FILTER, reason=reason)
