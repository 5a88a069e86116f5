"""What the statement filter knows of the database: how names resolve, and what is unsafe.

The filter reads a statement with the engine's own parser, which says what the statement
names but not what the names mean. A :class:`Catalogue`, read once when a database is opened,
supplies the rest: the search path and the relations in it (so an unqualified name resolves as
the database resolves it), the views and macros in allowlisted schemas that read something
outside them (so they are refused by name, not served), and on SQLite the table allowlist.
Without one (a pure check) names resolve by the dialect's defaults.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Catalogue:
    """How names resolve in one database, and which objects of allowed schemas are unsafe.

    >>> catalogue = Catalogue(search_path=("sales",), relations=frozenset({("sales", "orders")}))
    >>> catalogue.resolve("orders"), catalogue.resolve("missing")
    ('sales', None)
    """

    search_path: tuple[str, ...] = ()
    """Schemas an unqualified relation name is looked up in, in order (PostgreSQL puts
    ``pg_catalog`` first when the path does not name it)."""
    relations: frozenset[tuple[str, str]] = frozenset()
    """Every ``(schema, name)`` relation (table, view) of the schemas on the search path."""
    unsafe: tuple[tuple[str, str, str], ...] = ()
    """``(schema, name, why)`` of views, macros and functions in allowlisted schemas that read
    or run something outside the allowlist."""
    macros: frozenset[tuple[str, str]] = frozenset()
    """DuckDB macros ``(schema, name)`` in allowlisted schemas that read only allowed ones."""
    allowed_tables: frozenset[str] | None = None
    """SQLite: the only tables (and views) of ``main`` a statement may read; None: all."""
    database: str = ""
    """The database's own catalog name (a three-part name must use it)."""

    def resolve(self, name: str) -> str | None:
        """The schema an unqualified relation ``name`` resolves to, or None if none holds it."""
        for schema in self.search_path:
            if (schema, name) in self.relations:
                return schema
        return None

    def why_unsafe(self, schema: str, name: str) -> str | None:
        """Why the object ``schema.name`` must not be served, or None if it is not unsafe."""
        for unsafe_schema, unsafe_name, why in self.unsafe:
            if (unsafe_schema, unsafe_name) == (schema, name):
                return why
        return None
