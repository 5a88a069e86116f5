"""The statement filter on PostgreSQL: the server's own parser (libpg_query, through pglast).

pglast runs the parser PostgreSQL itself runs, so ``U&"\\0070g_read_file"`` is the function
``pg_read_file`` here exactly as it is on the server: there is no second reading to diverge
from. The parse tree is walked once, with the CTE names visible at each point:

- exactly one statement, a ``SELECT`` (set operations and ``VALUES`` included); no other
  statement anywhere (a data-changing CTE), no ``SELECT INTO``, no locking clause, no
  parameters;
- every function on the PostgreSQL allowlist (in ``FROM``, the table-function list), called
  unqualified or in ``pg_catalog``; every cast to an allowlisted type; operators only from
  ``pg_catalog``;
- every relation resolved as the server resolves it (the search path from the catalogue, with
  ``pg_catalog`` first) to an allowlisted schema, and not an unsafe view of one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pglast import parser

from t2s_pipeline.execution.allowlists import (
    MAX_SERIES_ROWS,
    POSTGRES_TYPES,
    SERIES_FUNCTIONS,
    TABLE_FUNCTIONS,
    allowed_functions,
)
from t2s_pipeline.execution.catalogue import Catalogue
from t2s_pipeline.execution.engine import POSTGRES
from t2s_pipeline.execution.reading import Refused, series_length, walk_tree

_SYSTEM = "pg_catalog"
_ALLOWED_STATEMENT = "SelectStmt"


def read_postgres(sql: str, allowed: frozenset[str], catalogue: Catalogue | None) -> None:
    """Raise :class:`Refused` unless ``sql`` is one read-only query over allowed schemas.

    >>> read_postgres("SELECT sum(net_amount) FROM finance.invoices", frozenset({"finance"}), None)
    >>> read_postgres('SELECT U&"\\\\0070g_sleep"(1)', frozenset(), None)
    Traceback (most recent call last):
    ...
    t2s_pipeline.execution.reading.Refused: function pg_sleep is not on the PostgreSQL allowlist
    """
    try:
        tree = json.loads(parser.parse_sql_json(sql))
    except parser.ParseError as error:
        raise Refused(f"PostgreSQL cannot parse the statement: {error}") from error
    statements = tree.get("stmts", [])
    if len(statements) != 1:
        raise Refused(f"expected exactly one statement, found {len(statements)}")
    root = statements[0].get("stmt", {})
    kind = next(iter(root), "")
    if kind != _ALLOWED_STATEMENT:
        shown = _first_keyword(sql) or _statement_name(kind)
        raise Refused(f"only read-only queries are allowed, not {shown}")
    _Walk(allowed, catalogue).run(root)


def _statement_name(kind: str) -> str:
    """``InsertStmt`` -> ``INSERT``, ``CopyStmt`` -> ``COPY``."""
    return kind.removesuffix("Stmt").upper() or "an empty statement"


def _first_keyword(sql: str) -> str:
    """The statement's first word as the server's scanner reads it: ``BEGIN``, ``VACUUM``."""
    try:
        tokens = [t for t in parser.scan(sql) if not t.name.endswith("COMMENT")]
    except parser.ParseError:
        return ""
    return sql[tokens[0].start : tokens[0].end + 1].upper() if tokens else ""


class _Walk:
    """One pass over the parse tree, depth first with an explicit stack (no recursion limit)."""

    def __init__(self, allowed: frozenset[str], catalogue: Catalogue | None) -> None:
        self.allowed = allowed
        self.catalogue = catalogue
        self.functions = allowed_functions(POSTGRES)

    def run(self, root: dict[str, Any]) -> None:
        walk_tree(root, self._visit)

    def _visit(
        self, value: dict[str, Any], ctes: frozenset[str]
    ) -> Iterator[tuple[Any, frozenset[str]]]:
        if len(value) == 1:
            kind, fields = next(iter(value.items()))
            if kind[:1].isupper() and isinstance(fields, dict):
                yield from self._node(kind, fields, ctes)
                return
        if "names" in value and "typemod" in value:  # a TypeName, inlined in its parent
            self._check_type(value)
        yield from ((child, ctes) for child in value.values() if isinstance(child, dict | list))

    def _node(
        self, kind: str, fields: dict[str, Any], ctes: frozenset[str]
    ) -> Iterator[tuple[Any, frozenset[str]]]:
        if kind.endswith("Stmt") and kind != _ALLOWED_STATEMENT:
            raise Refused(f"{_statement_name(kind)} is not allowed inside a query")
        if kind == "SelectStmt":
            yield from self._select(fields, ctes)
            return
        if kind in ("IntoClause", "LockingClause", "ParamRef"):
            raise Refused(_FORBIDDEN[kind])
        if kind == "RangeVar":
            self._check_relation(fields, ctes)
        elif kind == "FuncCall":
            self._check_function(fields, self.functions, "PostgreSQL allowlist")
        elif kind == "RangeFunction":
            yield from self._table_functions(fields, ctes)
            return
        elif kind == "A_Expr":
            self._check_operator(fields)
        yield from self._visit(fields, ctes)

    def _select(
        self, fields: dict[str, Any], ctes: frozenset[str]
    ) -> Iterator[tuple[Any, frozenset[str]]]:
        if fields.get("intoClause"):
            raise Refused(_FORBIDDEN["IntoClause"])
        with_clause = fields.get("withClause") or {}
        entries = [e.get("CommonTableExpr", {}) for e in with_clause.get("ctes", [])]
        names = [str(e.get("ctename", "")) for e in entries]
        recursive = bool(with_clause.get("recursive"))
        for position, entry in enumerate(entries):
            visible = names if recursive else names[:position]
            yield entry.get("ctequery"), ctes | frozenset(visible)
        inner = ctes | frozenset(names)
        yield from (
            (v, inner)
            for k, v in fields.items()
            if k != "withClause" and isinstance(v, dict | list)
        )

    def _table_functions(
        self, fields: dict[str, Any], ctes: frozenset[str]
    ) -> Iterator[tuple[Any, frozenset[str]]]:
        for entry in fields.get("functions", []):
            items = entry.get("List", {}).get("items", []) if isinstance(entry, dict) else []
            # Each entry is [the call, its column definition list (or an empty node)].
            call = items[0].get("FuncCall") if items and isinstance(items[0], dict) else None
            if call is None:
                raise Refused("only a function call may stand in FROM here")
            self._check_function(call, TABLE_FUNCTIONS[POSTGRES], "table-function allowlist")
            yield from self._visit(call, ctes)
            yield items[1:], ctes
        yield from (
            (v, ctes) for k, v in fields.items() if k != "functions" and isinstance(v, dict | list)
        )

    def _check_function(self, call: dict[str, Any], allowed: frozenset[str], where: str) -> None:
        parts = [_string(p) for p in call.get("funcname", [])]
        name = parts[-1].lower() if parts else ""
        if len(parts) > 1 and (len(parts) > 2 or parts[0] != _SYSTEM):
            raise Refused(f"function {'.'.join(parts)} is not a pg_catalog function")
        if name not in allowed:
            raise Refused(f"function {name} is not on the {where}")
        if name in SERIES_FUNCTIONS:
            bound = series_length([_constant(a) for a in call.get("args", [])], inclusive=True)
            if bound is not None and bound > MAX_SERIES_ROWS:
                raise Refused(f"{name} asks for {bound:,} rows; the limit is {MAX_SERIES_ROWS:,}")

    def _check_operator(self, fields: dict[str, Any]) -> None:
        parts = [_string(p) for p in fields.get("name", []) if isinstance(p, dict)]
        if len(parts) > 1 and parts[0] != _SYSTEM:
            raise Refused(f"operator {'.'.join(parts)} is not a pg_catalog operator")

    def _check_type(self, type_name: dict[str, Any]) -> None:
        parts = [_string(p) for p in type_name.get("names", [])]
        if len(parts) > 1 and parts[0] != _SYSTEM:
            raise Refused(f"type {'.'.join(parts)} is not a pg_catalog type")
        name = parts[-1].lower() if parts else ""
        if name not in POSTGRES_TYPES:
            raise Refused(f"a cast to {name} is not allowed (it is not on the type allowlist)")

    def _check_relation(self, fields: dict[str, Any], ctes: frozenset[str]) -> None:
        name = str(fields.get("relname", ""))
        schema = str(fields.get("schemaname") or "")
        database = str(fields.get("catalogname") or "")
        if database and (self.catalogue is None or database != self.catalogue.database):
            raise Refused(f"relation {database}.{schema}.{name} names another database")
        if not schema and name in ctes:
            return
        schema = schema or self._resolve(name)
        if schema not in self.allowed:
            raise Refused(
                f"table {schema}.{name} is outside the allowlisted schemas {sorted(self.allowed)}"
            )
        why = self.catalogue.why_unsafe(schema, name) if self.catalogue else None
        if why is not None:
            raise Refused(f"{schema}.{name} {why}")

    def _resolve(self, name: str) -> str:
        if self.catalogue is not None and self.catalogue.search_path:
            found = self.catalogue.resolve(name)
            if found is not None:
                return found
            # Nowhere on the search path: fail closed rather than guess what it would become.
            raise Refused(f"relation {name} does not resolve to a relation on the search path")
        # No catalogue: pg_catalog is searched first, and every pg_* relation lives there.
        return _SYSTEM if name.startswith("pg_") else "public"


_FORBIDDEN = {
    "IntoClause": "SELECT INTO creates a table and is not allowed",
    "LockingClause": "LOCK clauses (FOR UPDATE/SHARE) are not allowed",
    "ParamRef": "parameters ($1) are not allowed",
}


def _string(node: Any) -> str:
    if isinstance(node, dict):
        inner = node.get("String", {})
        return str(inner.get("sval", "")) if isinstance(inner, dict) else ""
    return ""


def _constant(node: Any) -> float | None:
    """A numeric literal argument's value, or None for anything else."""
    const = node.get("A_Const") if isinstance(node, dict) else None
    if not isinstance(const, dict):
        return None
    if "ival" in const:
        return float(const["ival"].get("ival", 0))
    if "fval" in const:
        try:
            return float(const["fval"].get("fval", ""))
        except ValueError:
            return None
    return None
