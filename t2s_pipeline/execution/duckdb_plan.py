"""DuckDB's database layer reads the bound plan: what the binder will run, not what was written.

DuckDB has no roles or privileges, so the serving connection cannot be told "this reader may not
see the catalogue". Instead, before a statement runs, the connection binds it against the
serving snapshot with ``json_serialize_plan`` (views and macros already expanded, every name
resolved to the function or table it will call) and this module walks that plan:

- every scan is of a base table of the snapshot (``seq_scan``) or a series/JSON table function
  (``range``, ``generate_series``, ``unnest``, ``json_each``, ``json_tree``); catalogue and
  settings functions (``duckdb_tables()``, ``information_schema`` and ``pg_catalog`` views, which
  expand to them, ``pragma_*``) are refused;
- no function that reads the database's own state: settings, the current query, plans and
  parse trees of other statements, variables, sequences, secrets.

This does not share code or lists with the statement filter (which reads the parse tree against
the allowlists of :mod:`~t2s_pipeline.execution.allowlists`), so one layer's blind spot is not
the other's. A statement the binder rejects (no such table or column) fails as it would have.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import duckdb

from t2s_pipeline.execution.engine import DatabaseRefusal, QueryFailed, first_line
from t2s_pipeline.execution.reading import walk_tree

SCANS = frozenset({"seq_scan", "range", "generate_series", "unnest", "json_each", "json_tree"})
"""What a plan may read from: the snapshot's base tables and row generators."""

STATE_FUNCTIONS = frozenset(
    {
        "current_setting",
        "current_database",
        "current_catalog",
        "current_schema",
        "current_schemas",
        "current_query",
        "current_query_id",
        "current_connection_id",
        "current_transaction_id",
        "txid_current",
        "in_search_path",
        "getvariable",
        "getenv",
        "currval",
        "nextval",
        "setval",
        "stats",
        "write_log",
        "sleep_ms",
        "which_secret",
        "json_serialize_plan",
        "json_serialize_sql",
        "json_deserialize_sql",
        "version",
        "platform",
    }
)
"""Scalar functions that answer with the database's own state rather than the data."""

Refusing = Callable[[dict[str, Any]], str | None]
"""Why a node of a tree is refused, or None."""

_PLAN = "SELECT json_serialize_plan(?::VARCHAR)"
_PARSE = "SELECT json_serialize_sql(?::VARCHAR)"
_BOTH = "SELECT json_serialize_sql(?::VARCHAR), json_serialize_plan(?::VARCHAR)"


def check_plan(cursor: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Raise :class:`DatabaseRefusal` unless the bound plan of ``sql`` reads only data.

    >>> con = duckdb.connect()
    >>> check_plan(con, "SELECT x FROM range(3) AS t(x) JOIN range(2) AS u(y) ON x = y AND y > 0")
    >>> check_plan(con, "SELECT table_name FROM information_schema.tables")
    Traceback (most recent call last):
    ...
    t2s_pipeline.execution.engine.DatabaseRefusal: the plan reads duckdb_views, which is not data
    >>> check_plan(con, "SELECT json_serialize_plan('SELECT 1') LIKE '%DUMMY%'")
    Traceback (most recent call last):
    ...
    t2s_pipeline.execution.engine.DatabaseRefusal: the statement calls json_serialize_plan, which reads the database's own state
    """
    both = _both_texts(cursor, sql)
    for index, (query, refusal_of) in enumerate(((_PARSE, _call_refusal), (_PLAN, _plan_refusal))):
        text = both[index] if both is not None else _text(cursor, query, sql)
        refusal = _first_refusal(text, refusal_of)
        if refusal is not None:
            raise DatabaseRefusal(refusal)


def _both_texts(cursor: duckdb.DuckDBPyConnection, sql: str) -> tuple[str | None, ...] | None:
    """The parse tree and the bound plan as JSON text, asked for in one statement; None when
    DuckDB raises for it (each is then asked for on its own, and fails as it would alone)."""
    try:
        row = cursor.execute(_BOTH, [sql, sql]).fetchone()
    except duckdb.Error:
        return None
    return (row[0], row[1]) if row else (None, None)


def _text(cursor: duckdb.DuckDBPyConnection, query: str, sql: str) -> str | None:
    """DuckDB's parse tree (``_PARSE``) or bound plan (``_PLAN``) of ``sql`` as JSON text."""
    try:
        row = cursor.execute(query, [sql]).fetchone()
    except duckdb.Error as error:
        raise QueryFailed(first_line(str(error))) from error
    return row[0] if row else None


def _call_refusal(node: dict[str, Any]) -> str | None:
    """Why a node of DuckDB's parse tree is refused: a call to a state function as written
    (the binder folds some into constants, ``json_serialize_plan('...')``, so the calls as
    written are read too)."""
    if node.get("class") != "FUNCTION":
        return None
    name = str(node.get("function_name") or "").lower()
    if name in STATE_FUNCTIONS:
        return f"the statement calls {name}, which reads the database's own state"
    return None


def _plan_refusal(node: dict[str, Any]) -> str | None:
    """Why a node of the bound plan is refused: a scan of something other than data, or a call
    to a state function."""
    name = _called(node)
    if name is None:
        return None
    if node.get("type") == "LOGICAL_GET" and name not in SCANS:
        return f"the plan reads {name}, which is not data"
    if name in STATE_FUNCTIONS:
        return f"the plan calls {name}, which reads the database's own state"
    return None


def _first_refusal(text: str | None, refusal_of: Refusing) -> str | None:
    """The first refused node of a tree given as JSON ``text``, in reading order.

    Each node is looked at once as the JSON is decoded; only a tree with a refused node is
    walked again, depth first, to name the first one."""
    flagged: list[str] = []

    def look(node: dict[str, Any]) -> dict[str, Any]:
        refusal = refusal_of(node)
        if refusal is not None:
            flagged.append(refusal)
        return node

    tree = _decode(text, look)
    if not flagged:
        return None
    found: list[str] = []

    def visit(node: dict[str, Any], ctes: frozenset[str]) -> list[tuple[Any, frozenset[str]]]:
        refusal = refusal_of(node)
        if refusal is not None:
            found.append(refusal)
            return []
        return [(child, ctes) for child in node.values()]

    walk_tree(tree, visit)
    return found[0] if found else flagged[0]


def _decode(text: str | None, look: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """A tree from DuckDB's JSON text, ``look`` called on every mapping as it is decoded; an
    error DuckDB reported in it is raised."""
    try:
        tree = json.loads(text, object_hook=look) if text else {"error": True}
    except RecursionError as error:
        raise DatabaseRefusal("the statement is nested too deeply to check") from error
    if tree.get("error"):
        message = first_line(str(tree.get("error_message") or "DuckDB cannot read it"))
        if tree.get("error_type") == "not implemented":
            raise DatabaseRefusal(
                f"DuckDB cannot show what it would run, so it is not served: {message}"
            )
        raise QueryFailed(message)
    return tree


def _called(node: dict[str, Any]) -> str | None:
    """The function or table function a plan node calls (its last name part), if any."""
    qname = node.get("qname")
    if not isinstance(qname, dict):
        return None
    path = qname.get("path") or []
    return str(path[-1]).lower() if path else None
