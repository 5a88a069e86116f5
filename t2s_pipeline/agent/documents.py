"""What the agent can retrieve: table documents (DDL with comments) and the example bank."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from t2s_pipeline.cases import CaseSet
from t2s_pipeline.demo.schema import TABLES, ddl_document
from t2s_pipeline.sut.contract import OfferedTable


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
