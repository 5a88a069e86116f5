"""The result-set type shared by execution and scoring.

A result set is an ordered list of columns and a list of row tuples. Columns may be unnamed or
share names (three unaliased SUMs); the scorer never pairs by name or position. A column may
carry its base-table *origin* (``schema.table.column``) and its qualified *expression* (aliases
removed), both filled in by the SQL analysis when it can resolve them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Column:
    """One output column: display name plus optional lineage proof."""

    name: str | None = None
    origin: str | None = None
    expression: str | None = None


@dataclass(frozen=True)
class ResultSet:
    """Columns and rows of one executed query (values as the driver returned them)."""

    columns: tuple[Column, ...]
    rows: Sequence[tuple[Any, ...]] = field(default_factory=list)

    @classmethod
    def from_names(
        cls, names: Sequence[str | None], rows: Sequence[Sequence[Any]]
    ) -> ResultSet:
        """Build a result set from plain column names and row sequences.

        >>> ResultSet.from_names(["a"], [[1], [2]]).n_rows
        2
        """
        return cls(tuple(Column(name=n) for n in names), [tuple(r) for r in rows])

    @property
    def n_rows(self) -> int:
        return len(self.rows)

    @property
    def n_columns(self) -> int:
        return len(self.columns)
