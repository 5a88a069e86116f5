"""The statement filter on DuckDB: DuckDB's own parser, through ``json_serialize_sql``.

``json_serialize_sql`` parses the text with the parser the database will use and returns its
tree as JSON; it serialises only SELECT statements, so anything else is an error and refused.
The tree is walked once, with the CTE names visible at each point:

- exactly one statement; table references only of the plain kinds (tables, joins, subqueries,
  table functions, VALUES, PIVOT), never SHOW/DESCRIBE;
- every function and operator on the DuckDB allowlist (in ``FROM``, the table-function list),
  or a macro of an allowlisted schema that reads only allowed schemas (the catalogue says);
- every table in an allowlisted schema of this database, never a file path, and never an
  unsafe view (one that reads outside the allowlist).

The parser runs on a private in-memory connection per thread; the statement is a parameter,
never spliced into SQL.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import duckdb

from t2s_pipeline.execution.allowlists import (
    MAX_SERIES_ROWS,
    SERIES_FUNCTIONS,
    TABLE_FUNCTIONS,
    allowed_functions,
)
from t2s_pipeline.execution.catalogue import Catalogue
from t2s_pipeline.execution.engine import DUCKDB, first_line
from t2s_pipeline.execution.reading import Refused, series_length, walk_tree

_TABLE_REFS = frozenset(
    {"BASE_TABLE", "JOIN", "SUBQUERY", "TABLE_FUNCTION", "EXPRESSION_LIST", "EMPTY", "PIVOT"}
)
# Query nodes a read-only query is made of; DuckDB also parses DML inside a CTE
# (``WITH t AS (DELETE FROM x) SELECT ...`` is a DELETE_QUERY_NODE and deletes when run).
_QUERY_NODES = frozenset({"SELECT_NODE", "SET_OPERATION_NODE", "RECURSIVE_CTE_NODE", "CTE_NODE"})
_DEFAULT_SCHEMA = "main"
MULTI_HINT = (
    "a statement DuckDB runs as several (a PIVOT without an IN list first queries the values);"
    " name the pivoted values: PIVOT ... ON column IN ('a', 'b') USING ..."
)
_local = threading.local()


def read_duckdb(sql: str, allowed: frozenset[str], catalogue: Catalogue | None) -> None:
    """Raise :class:`Refused` unless ``sql`` is one read-only query over allowed schemas.

    >>> read_duckdb("SELECT a.x FROM s.a JOIN s.b ON a.x = b.x AND b.y = 'B2B'", frozenset({"s"}), None)
    >>> read_duckdb("SELECT current_setting('temp_directory')", frozenset({"s"}), None)
    Traceback (most recent call last):
    ...
    t2s_pipeline.execution.reading.Refused: function current_setting is not on the DuckDB allowlist
    >>> read_duckdb("WITH t AS (DELETE FROM s.a) SELECT 1", frozenset({"s"}), None)
    Traceback (most recent call last):
    ...
    t2s_pipeline.execution.reading.Refused: DELETE is not allowed inside a query
    """
    tree = _parse(sql)
    statements = tree.get("statements", [])
    if len(statements) != 1:
        raise Refused(f"expected exactly one statement, found {len(statements)}")
    _Walk(allowed, catalogue).run(statements[0].get("node", {}))


def _parse(sql: str) -> dict[str, Any]:
    connection = getattr(_local, "connection", None)
    if connection is None:
        connection = _local.connection = duckdb.connect(":memory:")
    try:
        text = connection.execute("SELECT json_serialize_sql(?::VARCHAR)", [sql]).fetchone()
    except duckdb.Error as error:
        raise Refused(f"DuckDB cannot read the statement: {first_line(str(error))}") from error
    tree = json.loads(text[0]) if text and text[0] else {"error": True}
    if tree.get("error"):
        message = str(tree.get("error_message") or "unreadable")
        if "Only SELECT" in message:
            raise Refused(f"only read-only queries are allowed, not {_kind(connection, sql)}")
        raise Refused(f"DuckDB cannot read the statement: {first_line(message)}")
    return tree


def _kind(connection: duckdb.DuckDBPyConnection, sql: str) -> str:
    """What DuckDB reads the statement as (``DELETE``, ``COPY``), or its first word."""
    try:
        statements = connection.extract_statements(sql)
    except duckdb.Error:
        statements = []
    if len(statements) > 1:
        return f"{len(statements)} statements"
    kind = statements[0].type.name if statements else ""
    if kind == "MULTI":
        return f"{MULTI_HINT}"
    return first_keyword(sql) or kind or "this statement"


def first_keyword(sql: str) -> str:
    """The first word of ``sql`` by DuckDB's tokenizer (comments skipped), upper-cased."""
    try:
        tokens = duckdb.tokenize(sql)
    except (duckdb.Error, TypeError):  # TypeError: text pybind cannot pass (a lone surrogate)
        return ""
    words = [start for start, kind in tokens if kind != duckdb.token_type.comment]
    if not words:
        return ""
    text = sql.encode("utf-8")  # the tokenizer's positions are byte offsets
    start = end = words[0]
    while end < len(text) and (text[end : end + 1].isalnum() or text[end : end + 1] == b"_"):
        end += 1
    if end == start:  # a symbol or a non-ASCII letter: its first character
        return text[start:].decode("utf-8", errors="replace")[:1]
    return text[start:end].decode("utf-8").upper()


class _Walk:
    """One pass over DuckDB's parse tree, depth first with an explicit stack."""

    def __init__(self, allowed: frozenset[str], catalogue: Catalogue | None) -> None:
        self.allowed = allowed
        self.catalogue = catalogue
        self.functions = allowed_functions(DUCKDB)

    def run(self, root: dict[str, Any]) -> None:
        walk_tree(root, self._visit)

    def _visit(
        self, node: dict[str, Any], ctes: frozenset[str]
    ) -> Iterator[tuple[Any, frozenset[str]]]:
        kind = str(node.get("type", ""))
        if kind.endswith("_NODE") and kind not in _QUERY_NODES:
            verb = kind.removesuffix("_NODE").removesuffix("_QUERY").replace("_", " ")
            raise Refused(f"{verb} is not allowed inside a query")
        if "cte_map" in node:
            yield from self._with_ctes(node, ctes)
            return
        if "sample" in node and "class" not in node and kind:  # a table reference
            if kind not in _TABLE_REFS:
                raise Refused(f"a {kind} table reference is not allowed")
            if kind == "BASE_TABLE":
                self._check_table(node, ctes)
            elif kind == "TABLE_FUNCTION":
                self._check_function(node.get("function") or {}, table=True)
                function = node.get("function") or {}
                yield from ((a, ctes) for a in function.get("arguments", []))
                yield from (
                    (v, ctes)
                    for k, v in node.items()
                    if k != "function" and isinstance(v, dict | list)
                )
                return
        elif node.get("class") == "FUNCTION":
            self._check_function(node, table=False)
        yield from ((v, ctes) for v in node.values() if isinstance(v, dict | list))

    def _with_ctes(
        self, node: dict[str, Any], ctes: frozenset[str]
    ) -> Iterator[tuple[Any, frozenset[str]]]:
        entries = node.get("cte_map", {}).get("map", []) or []
        names = [str(entry.get("key", "")).lower() for entry in entries]
        for position, entry in enumerate(entries):
            value = entry.get("value") or {}
            query = value.get("query_node") or value.get("query") or {}
            own = [names[position]] if query.get("type") == "RECURSIVE_CTE_NODE" else []
            yield query, ctes | frozenset(names[:position] + own)
        inner = ctes | frozenset(names)
        yield from (
            (v, inner) for k, v in node.items() if k != "cte_map" and isinstance(v, dict | list)
        )

    def _check_function(self, node: dict[str, Any], table: bool) -> None:
        name = str(node.get("function_name", "")).lower()
        schema = str(node.get("schema") or "").lower()
        database = str(node.get("catalog") or "").lower()
        if schema and schema not in ("main", "system") or database:
            self._check_macro(database, schema, name)
            return
        allowed = TABLE_FUNCTIONS[DUCKDB] if table else self.functions
        if name not in allowed:
            where = "table-function allowlist" if table else "DuckDB allowlist"
            raise Refused(f"function {name} is not on the {where}")
        if name in SERIES_FUNCTIONS:
            bounds = [_constant(a.get("expression")) for a in node.get("arguments", [])]
            inclusive = name == "generate_series"
            rows = series_length(bounds, inclusive=inclusive)
            if rows is not None and rows > MAX_SERIES_ROWS:
                raise Refused(f"{name} asks for {rows:,} rows; the limit is {MAX_SERIES_ROWS:,}")

    def _check_macro(self, database: str, schema: str, name: str) -> None:
        """A schema-qualified call is a macro: allowed only in an allowed schema, and safe."""
        if database and (self.catalogue is None or database != self.catalogue.database):
            raise Refused(f"function {database}.{schema}.{name} names another database")
        if schema not in self.allowed:
            raise Refused(f"macro {schema}.{name} is outside the allowlisted schemas")
        if self.catalogue is not None:
            why = self.catalogue.why_unsafe(schema, name)
            if why is not None:
                raise Refused(f"macro {schema}.{name} {why}")

    def _check_table(self, node: dict[str, Any], ctes: frozenset[str]) -> None:
        name = str(node.get("table_name", "")).lower()
        schema = str(node.get("schema_name") or "").lower()
        database = str(node.get("catalog_name") or "").lower()
        if any(mark in name for mark in "/\\:."):
            raise Refused(f"table name {name!r} reads a file")
        if database and (self.catalogue is None or database != self.catalogue.database):
            raise Refused(f"table {database}.{schema}.{name} names another database")
        if not schema and not database and name in ctes:
            return
        if not schema:
            schema = self._resolve(name)
        if schema not in self.allowed:
            raise Refused(
                f"table {schema}.{name} is outside the allowlisted schemas {sorted(self.allowed)}"
            )
        why = self.catalogue.why_unsafe(schema, name) if self.catalogue else None
        if why is not None:
            raise Refused(f"{schema}.{name} {why}")

    def _resolve(self, name: str) -> str:
        """DuckDB looks an unqualified name up in ``main``, then in the system catalogue."""
        if self.catalogue is not None and self.catalogue.relations:
            found = self.catalogue.resolve(name)
            return found if found is not None else "system"
        return _DEFAULT_SCHEMA


def _constant(node: Any) -> float | None:
    if not isinstance(node, dict) or node.get("class") != "CONSTANT":
        return None
    literal = node.get("literal") or {}
    try:
        return float(str(literal.get("text", literal.get("value"))))
    except (TypeError, ValueError):
        return None
