"""The agent's reading of a question before it is SQL: what to measure, over which rows, at
which grain. :mod:`question` builds a plan, :mod:`compose` writes it as SQL, and
:mod:`templates` compares two plans to reuse an example's SQL.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from t2s_pipeline.agent.knowledge import ColumnInfo


@dataclass(frozen=True)
class Condition:
    """One filter: ``column op values``, or ``column op other`` between two columns."""

    column: ColumnInfo
    op: str  # =, <>, IN, NOT IN, <, >, <=, >=
    values: tuple[object, ...] = ()
    other: ColumnInfo | None = None
    kind: str = "value"  # value (a code, flag or threshold), sign (refunds < 0), compare

    @property
    def shape(self) -> tuple[str, str, str | None, int]:
        """The condition without its literal values."""
        other = None if self.other is None else self.other.ref
        return (self.column.ref, self.op, other, len(self.values))


@dataclass(frozen=True)
class Measure:
    """An aggregate (or a bare value in a listing) over a column or a formula of columns.

    ``formula`` is ``column`` (one column), ``product`` (quantity x price), ``discounted``
    (quantity x price x (1 - discount / 100)), ``sum`` (a + b) or ``gap`` (a - b). ``func``
    is ``count``, ``sum``, ``avg``, ``min``, ``max``, ``value`` (no aggregate), ``ratio``
    (the figure per distinct ``per``) or ``share`` (the figure over ``part`` rows, or over
    ``whole``, or over the grand total across groups, times ``scale``).
    """

    func: str
    columns: tuple[ColumnInfo, ...] = ()  # () with count: COUNT(*)
    formula: str = "column"
    distinct: bool = False
    per: ColumnInfo | None = None
    part: tuple[Condition, ...] = ()
    whole: tuple[ColumnInfo, ...] = ()
    scale: int = 1
    negate: bool = False

    @property
    def shape(self) -> tuple[object, ...]:
        return (
            self.func,
            tuple(c.ref for c in self.columns),
            self.formula,
            self.distinct,
            None if self.per is None else self.per.ref,
            tuple(c.shape for c in self.part),
            tuple(c.ref for c in self.whole),
            self.scale,
            self.negate,
        )


@dataclass(frozen=True)
class Threshold:
    """``HAVING figure op value``: "more than 30 orders", "an average above 7.5 percent"."""

    measure: Measure
    op: str
    value: float


@dataclass(frozen=True)
class Group:
    """One output column the answer is grouped by; ``grain`` truncates a date."""

    column: ColumnInfo
    grain: str | None = None


@dataclass(frozen=True)
class Window:
    """Rows whose ``column`` falls in ``[start, end)``; an open end runs up to as_of."""

    column: ColumnInfo
    start: dt.date | None
    end: dt.date | None
    label: str


@dataclass(frozen=True)
class Plan:
    """One question's reading. ``tables`` lists what the query reads, the base table first."""

    tables: tuple[str, ...]
    measures: tuple[Measure, ...] = ()
    groups: tuple[Group, ...] = ()
    conditions: tuple[Condition, ...] = ()
    window: Window | None = None
    descending: bool | None = None  # None: no ORDER BY
    limit: int | None = None
    order_by: Measure | None = None  # ordering by something not in the output
    having: tuple[Threshold, ...] = ()
    notes: tuple[str, ...] = ()  # what the reading could not place, for the message

    @property
    def base(self) -> str:
        return self.tables[0]

    @property
    def aggregated(self) -> bool:
        return any(m.func != "value" for m in self.measures)

    @property
    def shape(self) -> tuple[object, ...]:
        """Everything but the literals a template may swap (filter values and the limit)."""
        window = None if self.window is None else (self.window.column.ref, self.window.label)
        return (
            tuple(self.tables),
            tuple(m.shape for m in self.measures),
            tuple((g.column.ref, g.grain) for g in self.groups),
            tuple(sorted(c.shape for c in self.conditions)),
            window,
            self.descending,
            self.limit is None,
            None if self.order_by is None else self.order_by.shape,
            tuple((h.measure.shape, h.op) for h in self.having),
        )
