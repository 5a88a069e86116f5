"""What the agent can retrieve: table documents (DDL with comments) and the example bank."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from t2s_pipeline.cases import CaseSet, Domain
from t2s_pipeline.demo.schema import TABLES, ddl_document
from t2s_pipeline.execution.registry import engine_named
from t2s_pipeline.sql.schema import live_schema
from t2s_pipeline.sut.contract import OfferedTable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BankEntry:
    """One wording of one gold case, pointing at that case's main question and gold SQL."""

    case_id: str
    wording: str
    question: str
    sql: str


def demo_tables(allowed_schemas: Iterable[str]) -> tuple[OfferedTable, ...]:
    """The demo warehouse's DDL documents, restricted to the allowed schemas."""
    allowed = set(allowed_schemas)
    return tuple(
        OfferedTable(name=table.qualified, ddl=ddl_document(table))
        for table in TABLES
        if table.schema in allowed
    )


def domain_tables(domain: Domain) -> tuple[OfferedTable, ...]:
    """The table documents of a domain's allowed schemas, as its database holds them.

    A table of the demo warehouse keeps its commented DDL document; any other table gets a
    plain ``CREATE TABLE`` with its columns and types as the catalogue reports them. A domain
    whose database cannot be read now (or has one database per case) offers the demo
    documents of its schemas, as before: the agent still serves, it just knows less.
    """

    if "{db_id}" in domain.database:
        return demo_tables(domain.allowed_schemas)
    try:
        schema = live_schema(domain.database_for(), domain.engine, domain.allowed_schemas)
    except Exception as error:  # any driver's error: unreadable now
        log.warning("domain %s: cannot read its tables (%s); offering none", domain.name, error)
        return demo_tables(domain.allowed_schemas)
    demo = {table.qualified: table for table in TABLES}
    documents = []
    for db, tables in schema.tables.items():
        for table, columns in tables.items():
            qualified = f"{db}.{table}"
            if qualified in demo:
                documents.append(OfferedTable(name=qualified, ddl=ddl_document(demo[qualified])))
                continue
            name = table if engine_named(domain.engine).only_schema else qualified
            ddl = exp.Create(
                this=exp.Schema(
                    this=sqlglot.to_table(name, dialect=domain.dialect),
                    expressions=[
                        exp.ColumnDef(
                            this=exp.to_identifier(column),
                            kind=_type(kind, domain.dialect),
                        )
                        for column, kind in columns.items()
                    ],
                ),
                kind="TABLE",
            )
            documents.append(OfferedTable(name=name, ddl=ddl.sql(dialect=domain.dialect)))
    order = {name: index for index, name in enumerate(demo)}  # the demo's own order first
    return tuple(sorted(documents, key=lambda d: order.get(d.name, len(order))))


def _type(kind: str, dialect: str) -> exp.DataType | None:
    try:
        return exp.DataType.build(kind, dialect=dialect) if kind else None
    except Exception:  # an engine-specific type sqlglot does not know: keep it as written
        return exp.DataType.build(kind, dialect=dialect, udt=True) if kind else None


def table_documents(tables: Sequence[OfferedTable | tuple[str, str]]) -> tuple[OfferedTable, ...]:
    """Accept ``(name, ddl)`` pairs as well as :class:`OfferedTable` values."""
    return tuple(
        t if isinstance(t, OfferedTable) else OfferedTable(name=t[0], ddl=t[1]) for t in tables
    )


def example_bank(case_set: CaseSet) -> tuple[BankEntry, ...]:
    """Every question and phrasing of every case, each pointing at the case's gold SQL."""
    return tuple(
        BankEntry(case.id, wording, case.question, case.gold_sql)
        for case in case_set.cases
        for wording in case.questions
    )


def table_text(table: OfferedTable) -> str:
    """What BM25 reads for a table: its name and its DDL with comments."""
    return f"{table.name}\n{table.ddl}"
