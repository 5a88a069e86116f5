"""Neighbour databases: copies of the pinned snapshot, each changed a little (issue 22).

A neighbour holds the allowlisted schemas of the snapshot with the same tables and column
types. Two kinds are made, every choice a deterministic hash of (row, seed, column), so the same
seed gives the same files:

* **random** neighbours sample rows of tables nothing refers to, duplicate rows under fresh
  keys, perturb numbers, shift dates, swap codes within a column's own values and put NULLs
  in nullable columns;
* **boundary** neighbours add rows whose column sits exactly at, one unit below or one unit
  above a literal a gold query compares it with (``created_on BETWEEN DATE '2025-04-02' ...``
  gets customers created on 2025-04-01, 2025-04-02 and 2025-04-03).

Keys stay valid: key columns (primary keys, columns named like a primary key or ``*_id``) are
never perturbed, a row is only deleted from a table whose key no other table carries, and new
rows take a fresh value in an integer or sole key column (a table with neither gets none), all
other values copied from an existing row, so every reference they hold resolves.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from t2s_pipeline.errors import ExecutionError

_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
            "UINTEGER", "UBIGINT")  # fmt: skip
_CODE_DOMAIN_MAX = 25
"""A text column with at most this many distinct values is a code column: values swap within it."""


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    type: str
    nullable: bool

    @property
    def is_integer(self) -> bool:
        return self.type.upper() in _NUMERIC

    @property
    def is_number(self) -> bool:
        upper = self.type.upper()
        return self.is_integer or upper.startswith(("DECIMAL", "DOUBLE", "FLOAT", "REAL"))

    @property
    def is_temporal(self) -> bool:
        return self.type.upper().startswith(("DATE", "TIMESTAMP"))


@dataclass(frozen=True)
class TableInfo:
    schema: str
    name: str
    columns: tuple[ColumnInfo, ...]
    primary_key: tuple[str, ...]
    key_columns: frozenset[str] = field(default_factory=frozenset)
    referenced: bool = False
    """Another table carries this table's key: deleting its rows would leave orphans."""

    @property
    def qualified(self) -> str:
        return f"{_quote(self.schema)}.{_quote(self.name)}"

    def column(self, name: str) -> ColumnInfo | None:
        return next((c for c in self.columns if c.name.lower() == name.lower()), None)

    @property
    def fresh_key(self) -> ColumnInfo | None:
        """The key column new rows get a fresh value in, or None when no new row can be made."""
        if not self.primary_key:
            return None
        columns = [self.column(name) for name in self.primary_key]
        own = [c for c in columns if c is not None and c.is_integer and not _names_a_key(c.name)]
        if own:
            return own[-1]
        if len(columns) == 1 and columns[0] is not None:
            return columns[0]
        return None


@dataclass(frozen=True)
class Boundary:
    """A value a gold query compares a column with: ``schema.table.column`` against ``value``."""

    schema: str
    table: str
    column: str
    value: object


def _names_a_key(name: str) -> bool:
    return name.lower().endswith("_id") or name.lower() == "id"


def read_tables(source: Path, schemas: Sequence[str]) -> list[TableInfo]:
    """The base tables of ``schemas`` in the DuckDB file ``source``, with keys and nullability."""
    con = duckdb.connect(str(source), read_only=True)
    try:
        wanted = [s.lower() for s in schemas]
        rows = con.execute(
            "SELECT table_schema, table_name, column_name, data_type, is_nullable "
            "FROM information_schema.columns c WHERE lower(table_schema) IN (SELECT unnest(?)) "
            "AND (table_schema, table_name) IN (SELECT (table_schema, table_name) FROM "
            "information_schema.tables WHERE table_type = 'BASE TABLE') "
            "ORDER BY table_schema, table_name, ordinal_position",
            [wanted],
        ).fetchall()
        keys = con.execute(
            "SELECT schema_name, table_name, constraint_column_names FROM duckdb_constraints() "
            "WHERE constraint_type = 'PRIMARY KEY'"
        ).fetchall()
    finally:
        con.close()
    primary = {(s, t): tuple(cols) for s, t, cols in keys}
    by_table: dict[tuple[str, str], list[ColumnInfo]] = {}
    for schema, table, column, kind, nullable in rows:
        by_table.setdefault((schema, table), []).append(ColumnInfo(column, kind, nullable == "YES"))
    key_names = {c.lower() for cols in primary.values() for c in cols}
    tables = []
    for (schema, table), columns in by_table.items():
        pk = primary.get((schema, table), ())
        keyish = frozenset(
            c.name for c in columns if c.name in pk or c.name.lower() in key_names
            or _names_a_key(c.name)
        )  # fmt: skip
        tables.append(TableInfo(schema, table, tuple(columns), pk, keyish))
    return [_with_referenced(t, tables) for t in tables]


def _with_referenced(table: TableInfo, tables: list[TableInfo]) -> TableInfo:
    if len(table.primary_key) != 1:
        return table
    key = table.primary_key[0].lower()
    # A key may be carried under its own name or a longer one (customers.customer_id as
    # orders.customer_id, sites.site_id as customers.home_site_id): either keeps the table whole.
    carried = any(
        other is not table and any(c.name.lower().endswith(key) for c in other.columns)
        for other in tables
    )
    return TableInfo(
        table.schema, table.name, table.columns, table.primary_key, table.key_columns,
        carried,
    )  # fmt: skip


# --- building one neighbour ------------------------------------------------------------------


def build_neighbour(
    source: Path, dest: Path, tables: Sequence[TableInfo], statements: Sequence[str]
) -> None:
    """Copy ``tables`` of ``source`` into a new DuckDB file ``dest``, then run ``statements``
    (the neighbour's changes). Written to a temporary name and renamed into place."""
    tmp = dest.with_name(f"{dest.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        con = duckdb.connect(str(tmp))
        try:
            con.execute("SET threads = 1")  # a deterministic order of inserted rows
            con.execute(f"ATTACH {_string(str(source))} AS src (READ_ONLY)")
            for schema in sorted({t.schema for t in tables}):
                con.execute(f"CREATE SCHEMA {_quote(schema)}")
            for table in tables:
                con.execute(
                    f"CREATE TABLE {table.qualified} AS SELECT * FROM src.{table.qualified}"
                )
            con.execute("DETACH src")
            for statement in statements:
                con.execute(statement)
            con.execute("CHECKPOINT")
        finally:
            con.close()
        os.replace(tmp, dest)
    except (duckdb.Error, OSError) as error:
        raise ExecutionError(f"cannot build the neighbour database {dest}: {error}") from error
    finally:
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.wal").unlink(missing_ok=True)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _pick(seed: int, salt: str, percent: int) -> str:
    """A deterministic row choice: about ``percent`` % of the rows."""
    return f"hash(rowid, {seed}, {_string(salt)}) % 100 < {percent}"


def _offset(seed: int, salt: str, spread: int) -> str:
    """A deterministic integer in [-spread, spread] without 0."""
    h = f"hash(rowid, {seed}, {_string(salt + '#')})"
    return f"(CASE WHEN {h} % 2 = 0 THEN 1 ELSE -1 END * (1 + CAST({h} % {spread} AS INTEGER)))"


def random_changes(tables: Sequence[TableInfo], seed: int) -> list[str]:
    """The statements that make one random neighbour of the snapshot, all from ``seed``."""
    statements: list[str] = []
    for table in tables:
        salt = f"{table.schema}.{table.name}"
        if not table.referenced:
            statements.append(f"DELETE FROM {table.qualified} WHERE {_pick(seed, salt, 25)}")
        fresh = table.fresh_key
        if fresh is not None:
            statements.append(_copy_rows(table, fresh, _pick(seed, salt + ":dup", 5), {}))
        for column in table.columns:
            if column.name in table.key_columns:
                continue
            statements.extend(_column_changes(table, column, seed))
    return statements


def _column_changes(table: TableInfo, column: ColumnInfo, seed: int) -> list[str]:
    name = _quote(column.name)
    salt = f"{table.schema}.{table.name}.{column.name}"
    where = _pick(seed, salt, 12)
    out: list[str] = []
    if column.is_integer:
        out.append(
            f"UPDATE {table.qualified} SET {name} = {name} + {_offset(seed, salt, 3)} WHERE {where}"
        )
    elif column.is_number:
        factor = f"(1 + {_offset(seed, salt, 20)} / 100.0)"
        out.append(
            f"UPDATE {table.qualified} SET {name} = CAST({name} * {factor} AS {column.type}) WHERE {where}"
        )
    elif column.type.upper() == "DATE":
        out.append(
            f"UPDATE {table.qualified} SET {name} = {name} + {_offset(seed, salt, 3)} WHERE {where}"
        )
    elif column.is_temporal:
        out.append(
            f"UPDATE {table.qualified} SET {name} = {name} + to_days({_offset(seed, salt, 3)}) WHERE {where}"
        )
    elif column.type.upper() == "BOOLEAN":
        out.append(f"UPDATE {table.qualified} SET {name} = NOT {name} WHERE {where}")
    elif column.type.upper() == "VARCHAR":
        out.append(_swap_codes(table, name, salt, seed, where))
    if column.nullable:
        out.append(
            f"UPDATE {table.qualified} SET {name} = NULL WHERE {_pick(seed, salt + ':null', 3)}"
        )
    return out


def _swap_codes(table: TableInfo, name: str, salt: str, seed: int, where: str) -> str:
    """Text values swapped within the column's own values, when it is a code column."""
    domain = f"(SELECT list(DISTINCT {name} ORDER BY {name}) FROM {table.qualified} WHERE {name} IS NOT NULL)"
    h = f"hash(rowid, {seed}, {_string(salt + ':code')})"
    return (
        f"UPDATE {table.qualified} SET {name} = list_element({domain}, "
        f"1 + CAST({h} % len({domain}) AS INTEGER)) WHERE {where} AND "
        f"(SELECT count(DISTINCT {name}) FROM {table.qualified}) BETWEEN 2 AND {_CODE_DOMAIN_MAX}"
    )


def _copy_rows(
    table: TableInfo, fresh: ColumnInfo, where: str, values: dict[str, str], limit: int = 0
) -> str:
    """INSERT copies of the rows ``where`` picks, under fresh keys, with ``values`` replaced."""
    key = _quote(fresh.name)
    if fresh.is_integer:
        new_key = f"(SELECT coalesce(max({key}), 0) FROM {table.qualified}) + row_number() OVER ()"
    else:
        new_key = f"{key} || '~n' || CAST(row_number() OVER () AS VARCHAR)"
    replaced = {fresh.name: new_key, **values}
    replace = ", ".join(f"{expr} AS {_quote(col)}" for col, expr in replaced.items())
    tail = f" ORDER BY {where} LIMIT {limit}" if limit else f" WHERE {where}"
    return (
        f"INSERT INTO {table.qualified} SELECT * REPLACE ({replace}) FROM {table.qualified}{tail}"
    )


def boundary_changes(
    tables: Sequence[TableInfo], boundaries: Sequence[Boundary], step: int, seed: int
) -> list[str]:
    """Rows at each boundary value moved by ``step`` units (-1, 0 or +1): two copies of
    existing rows of the column's table, every other value kept."""
    by_name = {(t.schema.lower(), t.name.lower()): t for t in tables}
    statements = []
    for index, boundary in enumerate(boundaries):
        table = by_name.get((boundary.schema.lower(), boundary.table.lower()))
        column = table.column(boundary.column) if table else None
        if table is None or column is None or column.name in table.key_columns:
            continue
        fresh = table.fresh_key
        literal = _moved_literal(boundary.value, column, step)
        if fresh is None or literal is None:
            continue
        order = f"hash(rowid, {seed}, {index})"
        statements.append(_copy_rows(table, fresh, order, {column.name: literal}, limit=2))
    return statements


def _unit(number: decimal.Decimal, column: ColumnInfo) -> decimal.Decimal:
    """One step of a column's values: 1 for integers, the scale of a DECIMAL(p, s) column, else
    the literal's own last digit."""
    if column.is_integer:
        return decimal.Decimal(1)
    scale = column.type.upper().removeprefix("DECIMAL(").rstrip(")").split(",")
    if column.type.upper().startswith("DECIMAL(") and len(scale) == 2:
        return decimal.Decimal(1).scaleb(-int(scale[1]))
    exponent = number.as_tuple().exponent
    return decimal.Decimal(1).scaleb(exponent if isinstance(exponent, int) else 0)


def _moved_literal(value: object, column: ColumnInfo, step: int) -> str | None:
    """``value`` moved by ``step`` units of its type, as a SQL literal of the column's type."""
    kind = column.type
    if isinstance(value, dt.datetime):
        moved = value + dt.timedelta(days=step)
        return f"CAST({_string(moved.isoformat(sep=' '))} AS {kind})"
    if isinstance(value, dt.date):
        return f"CAST({_string((value + dt.timedelta(days=step)).isoformat())} AS {kind})"
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float | decimal.Decimal) and column.is_number:
        number = decimal.Decimal(str(value))
        return f"CAST({number + step * _unit(number, column)} AS {kind})"
    if isinstance(value, str) and step == 0 and not column.is_number and not column.is_temporal:
        return f"CAST({_string(value)} AS {kind})"
    return None


def tie_changes(tables: Sequence[TableInfo], cuts: Sequence[tuple[str, str, str]]) -> list[str]:
    """For each top-k cut ``(schema, table, query of the row at rank k)``, a copy of that row
    under a fresh key: a tie exactly at the cut."""
    by_name = {(t.schema.lower(), t.name.lower()): t for t in tables}
    statements = []
    for schema, name, kth_row in cuts:
        table = by_name.get((schema.lower(), name.lower()))
        fresh = table.fresh_key if table else None
        if table is None or fresh is None:
            continue
        key = _quote(fresh.name)
        if fresh.is_integer:
            new_key = f"(SELECT coalesce(max({key}), 0) FROM {table.qualified}) + 1"
        else:
            new_key = f"{key} || '~t'"
        statements.append(
            f"INSERT INTO {table.qualified} SELECT * REPLACE ({new_key} AS {key}) "
            f"FROM ({kth_row}) AS kth"
        )
    return statements
