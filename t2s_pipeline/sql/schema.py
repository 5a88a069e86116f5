"""The live schema of a database: ``{schema: {table: {column: type}}}`` plus its dialect.

Qualification needs it to expand ``*`` and to attach every column to its table, so it is read
from the database the queries run against rather than written by hand.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from sqlglot.schema import MappingSchema

from t2s_pipeline.cases import Case, Domain
from t2s_pipeline.errors import ExecutionError, SqlAnalysisError
from t2s_pipeline.execution.registry import default_search_path, engine_named
from t2s_pipeline.sql.names import fold_catalog_name

Columns = Mapping[str, str]
Tables = Mapping[str, Mapping[str, Columns]]


@dataclass(frozen=True)
class Schema:
    """Tables and columns of one database, names exactly as its catalog spells them.

    >>> schema = Schema({"sales": {"Orders": {"id": "INTEGER"}}}, "duckdb")
    >>> schema.resolve_schema_name("orders")
    'sales'
    """

    tables: Tables = field(hash=False)
    dialect: str
    search_path: tuple[str, ...] = ()

    @cached_property
    def folded(self) -> dict[str, dict[str, dict[str, str]]]:
        """The same mapping with every name folded by the dialect's rules."""
        fold = self._fold
        return {
            fold(db): {
                fold(table): {fold(column): kind for column, kind in columns.items()}
                for table, columns in tables.items()
            }
            for db, tables in self.tables.items()
        }

    def mapping_schema(self) -> MappingSchema:
        """A fresh sqlglot schema for one qualification (names already folded).

        Fresh because sqlglot caches lookups keyed by table nodes, and a cache shared across
        thousands of queries makes every lookup slower.
        """
        mapping: dict[str, object] = dict(self.folded)
        return MappingSchema(mapping, dialect=self.dialect, normalize=False)

    def resolve_schema_name(self, table: str) -> str | None:
        """The schema an unqualified, folded table name belongs to, or None if unknown.

        The search path wins; otherwise a name found in exactly one schema is taken, because a
        harness that does not know the session's search path should still attribute it.
        """
        owners = [db for db, tables in self.folded.items() if table in tables]
        path = self.search_path or default_search_path(self.dialect)
        for db in (self._fold(name) for name in path):
            if db in owners:
                return db
        return owners[0] if len(owners) == 1 else None

    def has_table(self, db: str, table: str) -> bool:
        """Whether the folded ``db.table`` exists in this schema."""
        return table in self.folded.get(db, {})

    def column_type(self, db: str, table: str, column: str) -> str | None:
        """The declared type of the folded ``db.table.column``, or None if unknown.

        >>> schema = Schema({"sales": {"Orders": {"Day": "DATE"}}}, "duckdb")
        >>> schema.column_type("sales", "orders", "day")
        'DATE'
        """
        return self.folded.get(db, {}).get(table, {}).get(column)

    def _fold(self, name: str) -> str:
        return fold_catalog_name(name, self.dialect)


def read_schema(conn: Any, engine: str, schemas: Sequence[str] | None = None) -> Schema:
    """Read the live schema through a DB-API connection, keeping column order.

    ``engine`` names an installed engine; ``schemas`` keeps only those schemas.

    >>> import sqlite3
    >>> conn = sqlite3.connect(":memory:")
    >>> _ = conn.execute("CREATE TABLE t (b TEXT, a INTEGER)")
    >>> dict(read_schema(conn, "sqlite").tables["main"]["t"])
    {'b': 'TEXT', 'a': 'INTEGER'}
    """
    try:
        spec = engine_named(engine)
    except ExecutionError as error:
        raise SqlAnalysisError(f"cannot read a schema: {error}") from error
    rows = spec.schema_rows(conn)
    wanted = set(schemas) if schemas is not None else None
    tables: dict[str, dict[str, dict[str, str]]] = {}
    for db, table, column, kind in rows:
        if wanted is None or db in wanted:
            tables.setdefault(db, {}).setdefault(table, {})[column] = kind
    return Schema(tables, engine)


@contextmanager
def catalog_connection(target: str, engine: str) -> Iterator[Any]:
    """A read-only connection used only to read the catalogue (never to run case SQL).

    Raises ExecutionError, naming the database (password masked) and the fix, when it cannot
    be opened.
    """
    spec = engine_named(engine)
    if not spec.served_over_network and not Path(target).exists():
        raise ExecutionError(f"database {target} does not exist; build it with `t2s demo build`")
    try:
        conn = spec.open_catalog(target)
    except Exception as error:  # each driver has its own errors; all mean "cannot open it"
        if spec.served_over_network:
            fix = "check the URL (user, password, host, port, database) and that the server runs"
        else:
            fix = f"give a {engine} database file (`t2s demo build` makes one)"
        raise ExecutionError(
            f"cannot open {spec.shown(target)}: {_reason(target, error, spec.title or engine)}. "
            f"Fix: {fix}"
        ) from error
    with closing(conn):
        yield conn


def _reason(target: str, error: BaseException, title: str) -> str:
    """The driver's first line, with the target's password masked; only "not a valid URL" for
    a URL that cannot be parsed (a driver then echoes all of it, password included)."""
    try:
        password = urllib.parse.urlsplit(target).password if "://" in target else None
    except ValueError:
        return f"not a valid {title} URL"
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text.replace(password, "***") if password else text


def live_schema(target: str, engine: str, schemas: Sequence[str] | None = None) -> Schema:
    """The live schema of a database (only ``schemas`` when given)."""
    with catalog_connection(target, engine) as conn:
        return read_schema(conn, engine, None if schemas is None else list(schemas))


def domain_schema(domain: Domain, case: Case | None = None) -> Schema:
    """The live schema of the domain's allowlisted schemas."""
    return live_schema(domain.database_for(case), domain.engine, domain.allowed_schemas)


def domain_schemas(cases: Sequence[Case], domain: Domain) -> dict[str | None, Schema]:
    """The live schema of each database the cases use, read once per database."""
    first_case: dict[str | None, Case] = {}
    for case in cases:
        first_case.setdefault(case.db_id, case)
    return {db_id: domain_schema(domain, case) for db_id, case in first_case.items()}
