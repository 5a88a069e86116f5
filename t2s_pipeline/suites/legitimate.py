"""The legitimate-SQL corpus: ordinary read-only statements the guard must never refuse.

Per engine, the corpus is the hand-written statements in ``suites/legitimate/*.yaml`` (one
file per theme, each a list of ``{id, sql}`` where ``sql`` is one string for every engine or
a mapping ``{duckdb, postgres, sqlite, mysql}`` with null for "not applicable") followed by the
generated ones of :mod:`t2s_pipeline.suites.compose`. Every statement reads only the
allowlisted schemas (``sales``, ``finance``, ``inventory``; SQLite's ``main``; MySQL's
databases of those names), CTEs, constant table functions (MariaDB's ``JSON_TABLE`` and its
``seq_1_to_n`` sequence tables), and the views and macros of :data:`LEGITIMATE_OBJECTS`.
MySQL statements run connected to the ``sales`` database, so the few that name a table
without its database (ids ``dialect-mysql-default-database*``, ``gen-default-database-*``)
read ``sales``.

A statement's ``origin`` is ``generated`` or the stem of its file. Statements of origin
``search-path`` (PostgreSQL only) name tables without a schema: they run as a role whose
``search_path`` is ``sales, finance, inventory``, set on the role, never in the statement.

Before running the corpus, the target database's owner runs ``LEGITIMATE_OBJECTS[engine]``
in order (on PostgreSQL, grant the reader SELECT on the new views afterwards, e.g. with
:func:`t2s_pipeline.demo.postgres.grant_reader`; MySQL's reader has SELECT on the databases).

>>> corpus = legitimate_corpus("sqlite")
>>> len(corpus) >= 1000, corpus == legitimate_corpus("sqlite")
(True, True)
>>> [s.sql for s in corpus if s.id == "over-block-sqlite-json-each"]
["SELECT value FROM json_each('[1,2,3]')"]
>>> mysql = legitimate_corpus("mysql")
>>> len(mysql) >= 1000, [s.sql for s in mysql if s.id == "dialect-mysql-limit-offset-comma"]
(True, ['SELECT order_id, order_date, status_cd FROM sales.orders ORDER BY order_id LIMIT 10, 5'])
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from t2s_pipeline.demo.schema import ALLOWED_SCHEMAS, TABLES
from t2s_pipeline.errors import CaseError
from t2s_pipeline.suites.compose import generated_statements
from t2s_pipeline.suites.spelling import DUCKDB, ENGINES, MYSQL, POSTGRES, SQLITE, Spelling

GENERATED = "generated"
SEARCH_PATH = "search-path"
"""The origin of statements that need the role's ``search_path`` (sales, finance, inventory)."""
SEARCH_PATH_SCHEMAS: tuple[str, ...] = ("sales", "finance", "inventory")

# Statement ids are YAML values, not SQL: a regular expression is the right tool here.
_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,79}$")
_FIELDS = {"id", "sql", "note"}


@dataclass(frozen=True)
class LegitStatement:
    """One read-only statement for one engine, and where it comes from."""

    id: str
    engine: str
    sql: str
    origin: str


@dataclass(frozen=True)
class LegitObject:
    """A view or macro the database owner creates in an allowed schema before the corpus runs."""

    name: str
    kind: str
    ddl: str


_ORDER_TOTALS = """
SELECT o.order_id, o.customer_id, o.site_id, o.order_date, o.status_cd, count(*) AS line_count,
       sum(l.quantity * l.unit_price * (1 - l.discount_pct / 100)) AS net_value
FROM {orders} AS o JOIN {order_lines} AS l ON l.order_id = o.order_id
GROUP BY o.order_id, o.customer_id, o.site_id, o.order_date, o.status_cd"""
_INVOICE_BALANCES = """
SELECT v.invoice_id, v.order_id, v.invoice_date, v.gross_amount,
       coalesce(sum(p.amount), 0) AS paid, v.gross_amount - coalesce(sum(p.amount), 0) AS open_amount
FROM {invoices} AS v LEFT JOIN {payments} AS p ON p.invoice_id = v.invoice_id
GROUP BY v.invoice_id, v.order_id, v.invoice_date, v.gross_amount"""
_REORDER_ALERTS = """
SELECT k.site_id, s.site_name, k.item_id, i.item_name, k.on_hand_qty, k.reorder_pt
FROM {stock} AS k JOIN {sites} AS s ON s.site_id = k.site_id
JOIN {items} AS i ON i.item_id = k.item_id
WHERE k.on_hand_qty < k.reorder_pt"""
_CUSTOMER_REVENUE = """
SELECT c.customer_id, c.segment_cd, c.country_cd, count(DISTINCT o.order_id) AS orders,
       sum(v.net_amount) AS net_revenue
FROM {customers} AS c JOIN {orders} AS o ON o.customer_id = c.customer_id
JOIN {invoices} AS v ON v.order_id = o.order_id
GROUP BY c.customer_id, c.segment_cd, c.country_cd"""
_B2B_REVENUE = "SELECT * FROM {customer_revenue} WHERE segment_cd = 'B2B'"
_VIEWS: tuple[tuple[str, str], ...] = (
    ("sales.order_totals", _ORDER_TOTALS),
    ("finance.invoice_balances", _INVOICE_BALANCES),
    ("inventory.reorder_alerts", _REORDER_ALERTS),
    ("sales.customer_revenue", _CUSTOMER_REVENUE),
    ("sales.b2b_customer_revenue", _B2B_REVENUE),
)
_RELATIONS: dict[str, str] = {
    **{t.name: t.qualified for t in TABLES if t.schema in ALLOWED_SCHEMAS},
    "customer_revenue": "sales.customer_revenue",
}
"""What the view bodies' ``{placeholders}`` name, spelled per engine."""
_DUCKDB_MACROS: tuple[LegitObject, ...] = (
    LegitObject("sales.net_of", "macro", "CREATE MACRO sales.net_of(x, d) AS x * (1 - d / 100)"),
    LegitObject("finance.with_vat", "macro", "CREATE MACRO finance.with_vat(net) AS round(net * 1.2, 2)"),
    LegitObject(
        "sales.orders_in",
        "table macro",
        "CREATE MACRO sales.orders_in(y) AS TABLE "
        "SELECT * FROM sales.orders WHERE year(order_date) = y",
    ),
    LegitObject(
        "inventory.below_reorder",
        "table macro",
        "CREATE MACRO inventory.below_reorder(site) AS TABLE "
        "SELECT item_id, on_hand_qty, reorder_pt FROM inventory.stock "
        "WHERE site_id = site AND on_hand_qty < reorder_pt",
    ),
)  # fmt: skip


def _views(engine: str) -> tuple[LegitObject, ...]:
    spelling = Spelling(engine)
    names = {short: spelling.table(qualified) for short, qualified in _RELATIONS.items()}
    return tuple(
        LegitObject(
            spelling.table(qualified),
            "view",
            f"CREATE VIEW {spelling.table(qualified)} AS {body.format(**names).strip()}",
        )
        for qualified, body in _VIEWS
    )


OBJECTS: dict[str, tuple[LegitObject, ...]] = {
    DUCKDB: _views(DUCKDB) + _DUCKDB_MACROS,
    POSTGRES: _views(POSTGRES),
    SQLITE: _views(SQLITE),
    MYSQL: _views(MYSQL),
}
LEGITIMATE_OBJECTS: dict[str, tuple[str, ...]] = {
    engine: tuple(o.ddl for o in objects) for engine, objects in OBJECTS.items()
}
"""Per engine, the DDL the owner runs first: views (and DuckDB macros) in allowed schemas."""


def legitimate_object_names(engine: str) -> frozenset[str]:
    """The names the corpus may read besides tables: ``schema.view`` (SQLite: ``view``).

    >>> sorted(legitimate_object_names("sqlite"))[:2]
    ['b2b_customer_revenue', 'customer_revenue']
    """
    return frozenset(o.name for o in OBJECTS[engine])


@functools.cache
def legitimate_corpus(engine: str) -> tuple[LegitStatement, ...]:
    """Every legitimate statement for ``engine``: hand-written first, then generated.

    Deterministic (the generator is seeded), SQL texts distinct, ids unique and ``[a-z0-9-]``.
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; use one of {list(ENGINES)}")
    statements = list(_handwritten(engine))
    seen = {s.sql for s in statements}
    for statement_id, sql in generated_statements(engine):
        if sql not in seen:
            seen.add(sql)
            statements.append(LegitStatement(statement_id, engine, sql, GENERATED))
    return tuple(statements)


def _handwritten(engine: str) -> list[LegitStatement]:
    statements: dict[str, LegitStatement] = {}
    texts: dict[str, str] = {}
    for name, text in _files():
        for entry_id, sql in _entries(name, text, engine):
            where = f"suites/legitimate/{name}"
            if entry_id in statements:
                raise CaseError(where, "id", f"{entry_id!r} is used twice", "give a unique id")
            if sql in texts:
                problem = f"{engine} SQL of {entry_id!r} repeats {texts[sql]!r}"
                raise CaseError(where, "sql", problem, "drop one or change it")
            texts[sql] = entry_id
            statements[entry_id] = LegitStatement(entry_id, engine, sql, name.removesuffix(".yaml"))
    return list(statements.values())


def _files() -> list[tuple[str, str]]:
    """``(file name, text)`` of every hand-written file, sorted; works in an installed package."""
    folder = resources.files("t2s_pipeline.suites").joinpath("legitimate")
    found = [
        (f.name, f.read_text(encoding="utf-8"))
        for f in folder.iterdir()
        if f.name.endswith(".yaml")
    ]
    if not found:
        raise CaseError("suites/legitimate", "-", "no *.yaml files found", "reinstall the package")
    return sorted(found)


def _entries(name: str, text: str, engine: str) -> list[tuple[str, str]]:
    where = f"suites/legitimate/{name}"
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise CaseError(where, "-", f"is not valid YAML ({error})", "fix the syntax") from error
    if not isinstance(document, list):
        raise CaseError(where, "-", "must be a list of {id, sql}", "write '- id: ...' entries")
    entries = []
    for entry in document:
        entry_id, statements = _entry(where, entry)
        sql = statements[engine]
        if sql is not None:
            entries.append((entry_id, sql))
    return entries


def _entry(where: str, entry: Any) -> tuple[str, dict[str, str | None]]:
    if not isinstance(entry, dict) or set(entry) - _FIELDS:
        raise CaseError(where, "-", f"{entry!r} is not {{id, sql}}", f"use only {sorted(_FIELDS)}")
    entry_id = entry.get("id")
    if not isinstance(entry_id, str) or not _ID.match(entry_id) or entry_id.startswith("gen-"):
        raise CaseError(where, "id", f"{entry_id!r} is not [a-z0-9-]", "use e.g. join-and-segment")
    value = entry.get("sql")
    if isinstance(value, str) and value.strip():
        return entry_id, {engine: value.strip() for engine in ENGINES}
    if not isinstance(value, dict) or set(value) != set(ENGINES):
        problem = f"sql of {entry_id!r} is neither one string nor {{{', '.join(ENGINES)}}}"
        raise CaseError(where, "sql", problem, "give every engine, null where n/a")
    statements: dict[str, str | None] = {}
    for engine in ENGINES:
        text = value[engine]
        if text is not None and (not isinstance(text, str) or not text.strip()):
            raise CaseError(where, f"sql.{engine}", f"of {entry_id!r} is empty", "give SQL or null")
        statements[engine] = text.strip() if isinstance(text, str) else None
    return entry_id, statements
