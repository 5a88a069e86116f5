"""Sampled values: the distinct values of short text columns, read once at start-up.

A question says "cancelled", "Tools" or "Aberdeen"; the warehouse stores exactly those strings
in a column the DDL does not describe. The agent reads them from the domain's allowed schemas
over a read-only catalogue connection (never case SQL, never another schema), so it can link a
word to a filter value. A column with many distinct values (names, ids) is profiled but not
sampled: its values are not vocabulary.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlglot import exp

from t2s_pipeline.cases import Domain
from t2s_pipeline.sql.schema import catalog_connection, read_schema

log = logging.getLogger(__name__)

MAX_DISTINCT = 50
MAX_LENGTH = 40


@dataclass(frozen=True)
class ColumnProfile:
    """What start-up learnt about one text column."""

    distinct: int
    rows: int
    values: tuple[str, ...] = ()

    @property
    def unique(self) -> bool:
        """Every row has its own value (a name that identifies its row)."""
        return self.rows > 0 and self.distinct == self.rows


@dataclass(frozen=True)
class ValueSample:
    """Profiles of the text columns of the allowed schemas, by ``schema.table.column``."""

    columns: Mapping[str, ColumnProfile] = field(default_factory=dict)

    def values(self) -> dict[str, tuple[str, ...]]:
        """The sampled values per column (short text columns only)."""
        return {name: p.values for name, p in self.columns.items() if p.values}

    def unique(self, qualified_column: str) -> bool | None:
        """Whether the column identifies its rows; None when it was not profiled."""
        profile = self.columns.get(qualified_column)
        return None if profile is None else profile.unique


def sample_values(domain: Domain, attempts: int = 5, wait_s: float = 1.0) -> ValueSample:
    """Profile the text columns of the domain's allowed schemas; an empty sample (logged)
    when the database cannot be read, so the agent still serves without values.

    A database another process holds locked is retried a few times before giving up.
    """

    for attempt in range(attempts):
        try:
            target = domain.database_for()
            with catalog_connection(target, domain.engine) as conn:
                schema = read_schema(conn, domain.engine, list(domain.allowed_schemas))
                return ValueSample(_profiles(conn, schema.tables, domain.dialect))
        except Exception as error:  # any driver's error means "cannot read it now"
            if "lock" in str(error).lower() and attempt + 1 < attempts:
                time.sleep(wait_s)
                continue
            log.warning("no sampled values for domain %s: %s", domain.name, error)
            return ValueSample()
    return ValueSample()


def _profiles(
    conn: object, tables: Mapping[str, Mapping[str, Mapping[str, str]]], dialect: str
) -> dict[str, ColumnProfile]:
    profiles = {}
    for schema, by_table in tables.items():
        for table, columns in by_table.items():
            for column, kind in columns.items():
                if not _is_text(kind):
                    continue
                profile = _profile(conn, schema, table, column, dialect)
                profiles[f"{schema}.{table}.{column}"] = profile
    return profiles


def _profile(conn: object, schema: str, table: str, column: str, dialect: str) -> ColumnProfile:
    source = exp.table_(table, db=schema, quoted=True)
    col = exp.column(column, quoted=True)
    stats = exp.select(
        exp.Count(this=exp.Distinct(expressions=[col.copy()])),
        exp.Count(this=exp.Star()),
        exp.Max(this=exp.Length(this=col.copy())),
    ).from_(source)
    distinct, rows, longest = (int(str(v or 0)) for v in _fetch(conn, stats.sql(dialect))[0])
    values: tuple[str, ...] = ()
    if 0 < distinct <= MAX_DISTINCT and longest <= MAX_LENGTH:
        listing = (
            exp.select(col.copy())
            .distinct()
            .from_(source.copy())
            .where(exp.Not(this=exp.Is(this=col.copy(), expression=exp.Null())))
            .order_by(col.copy())
        )
        values = tuple(str(row[0]) for row in _fetch(conn, listing.sql(dialect)))
    return ColumnProfile(distinct, rows, values)


def _fetch(conn: object, sql: str) -> list[tuple[object, ...]]:
    cursor = conn.cursor()  # type: ignore[attr-defined]
    try:
        cursor.execute(sql)
        return list(cursor.fetchall())
    finally:
        cursor.close()


def _is_text(kind: str) -> bool:
    upper = kind.upper()
    return any(word in upper for word in ("CHAR", "TEXT", "STRING", "VARCHAR"))
