"""The statement filter's catalogue of a DuckDB database: relations, and unsafe views/macros.

A view or macro in an allowlisted schema is safe when its own definition, read by DuckDB's
parser exactly as a statement would be (:func:`~t2s_pipeline.execution.read_duckdb.read_duckdb`),
reads only allowed schemas and calls only allowlisted functions. One that reads another unsafe
object is unsafe too, so the check repeats until nothing changes. The serving snapshot keeps the
safe ones and drops the rest; on the unprotected source the filter refuses the unsafe ones by
name.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from t2s_pipeline.execution.catalogue import Catalogue
from t2s_pipeline.execution.read_duckdb import read_duckdb
from t2s_pipeline.execution.reading import Refused


@dataclass(frozen=True)
class Definition:
    """A view or macro of an allowlisted schema, with the query that defines it."""

    kind: str  # "view" or "macro"
    schema: str
    name: str
    query: str
    create: str


def read_catalogue(
    con: duckdb.DuckDBPyConnection, allowed: frozenset[str], database: str = ""
) -> Catalogue:
    """The catalogue of the database ``con`` is attached to (its default catalog)."""
    if not database:
        row = con.execute("SELECT current_database()").fetchone()
        database = str(row[0]) if row else ""
    relations = frozenset(
        (str(s).lower(), str(n).lower())
        for s, n in con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = ? "
            "UNION ALL SELECT schema_name, view_name FROM duckdb_views() "
            "WHERE database_name = ? AND NOT internal",
            [database, database],
        ).fetchall()
    )
    definitions = read_definitions(con, allowed, database)
    unsafe = classify(definitions, allowed, relations, database)
    macros = frozenset((d.schema, d.name) for d in definitions if d.kind == "macro")
    return Catalogue(
        search_path=("main",),
        relations=relations,
        unsafe=tuple(sorted(unsafe)),
        macros=macros - {(s, n) for s, n, _ in unsafe},
        database=database.lower(),
    )


def read_definitions(
    con: duckdb.DuckDBPyConnection, allowed: frozenset[str], database: str
) -> list[Definition]:
    """Every view and macro of the allowlisted schemas, with its defining query."""
    definitions = []
    views = con.execute(
        "SELECT schema_name, view_name, sql FROM duckdb_views() "
        "WHERE database_name = ? AND NOT internal ORDER BY 1, 2",
        [database],
    ).fetchall()
    for schema, name, create in views:
        if str(schema).lower() in allowed:
            definitions.append(
                Definition(
                    "view",
                    str(schema).lower(),
                    str(name).lower(),
                    _view_query(str(create)),
                    str(create),
                )
            )
    macros = con.execute(
        "SELECT DISTINCT schema_name, function_name, function_type, macro_definition, "
        "parameters FROM duckdb_functions() WHERE database_name = ? AND NOT internal "
        "AND function_type IN ('macro', 'table_macro') ORDER BY 1, 2",
        [database],
    ).fetchall()
    for schema, name, kind, body, parameters in macros:
        if str(schema).lower() not in allowed:
            continue
        query = str(body) if kind == "table_macro" else f"SELECT {body}"
        create = (
            f"CREATE OR REPLACE MACRO {_quote(str(schema))}.{_quote(str(name))}"
            f"({', '.join(str(p) for p in parameters or [])}) AS "
            + (f"TABLE {body}" if kind == "table_macro" else str(body))
        )
        definitions.append(
            Definition("macro", str(schema).lower(), str(name).lower(), query, create)
        )
    return definitions


def classify(
    definitions: list[Definition],
    allowed: frozenset[str],
    relations: frozenset[tuple[str, str]],
    database: str,
) -> set[tuple[str, str, str]]:
    """``(schema, name, why)`` of every definition that reads or runs outside the allowlist."""
    unsafe: dict[tuple[str, str], str] = {}
    changed = True
    while changed:
        changed = False
        catalogue = Catalogue(
            search_path=("main",),
            relations=relations,
            unsafe=tuple((s, n, w) for (s, n), w in unsafe.items()),
            database=database.lower(),
        )
        for definition in definitions:
            key = (definition.schema, definition.name)
            if key in unsafe:
                continue
            try:
                read_duckdb(definition.query, allowed, catalogue)
            except Refused as refusal:
                unsafe[key] = f"is a {definition.kind} that would be refused: {refusal}"
                changed = True
    return {(s, n, why) for (s, n), why in unsafe.items()}


def _view_query(create: str) -> str:
    """The query of ``CREATE VIEW name [(columns)] AS query;``, found with DuckDB's tokenizer
    (whose positions are byte offsets, so the text is sliced as UTF-8 bytes).

    >>> _view_query('CREATE VIEW s."é" ("prix é") AS SELECT 1 AS x;')
    'SELECT 1 AS x'
    """
    text = create.encode("utf-8")
    depth = 0
    for start, kind in duckdb.tokenize(create):
        mark = text[start : start + 1]
        word = text[start : start + 3].upper()
        if kind == duckdb.token_type.operator and mark in (b"(", b")"):
            depth += 1 if mark == b"(" else -1
        elif (
            kind == duckdb.token_type.keyword
            and depth == 0
            and word[:2] == b"AS"
            and not word[2:].isalnum()
        ):
            return text[start + 2 :].decode("utf-8").strip().rstrip(";")
    return create


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'
