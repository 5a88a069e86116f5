"""The result-set type shared by execution and scoring, and value normalisation (one place).

A result set is an ordered list of columns and a list of row tuples. Columns may be unnamed or
share names (three unaliased SUMs); the scorer never pairs by name or position. A column may
carry its base-table *origin* (``schema.table.column``) and its qualified *expression* (aliases
removed), both filled in by the SQL analysis when it can resolve them.

Normalisation (SPEC 6.5) maps every driver value to a hashable value whose Python equality is
the comparison the scorer wants. Everything that compares values (pairing, keys, cells, exact
match) goes through :func:`normalize_column` or :func:`normalize_value`:

========================== ====================================================================
driver value               normalised value
========================== ====================================================================
None, NaN, NaT, pd.NA      ``None`` (one NULL, equal to itself)
bool, numpy.bool\\_         :class:`Truth` member (a boolean never equals ``1``)
int, numpy integer         ``int`` unchanged
float, numpy float         ``float`` rounded half-to-even at ``float_decimals`` places (the
                           numpy algorithm: scale, rint, unscale); ``-0.0 == 0.0``; ``1.0 == 1``
Decimal                    ``int`` when integral, else a float rounded as above; NaN -> NULL
date, datetime, time       ISO-8601 text; aware datetimes are converted to UTC first
numpy.datetime64           as the equivalent date/datetime (microsecond precision)
timedelta, numpy interval  ISO-8601 duration text ``P<days>DT<seconds>S`` with days and seconds
                           normalised as :class:`datetime.timedelta` does (``P1DT3600.5S``)
UUID                       canonical lower-case text ``xxxxxxxx-xxxx-...``
bytes, bytearray, memory   PostgreSQL ``bytea`` hex text, ``\\x0aff``
str                        unchanged (strings compare exactly)
list, tuple, array         ``tuple`` of normalised items
dict (struct, map)         :class:`Struct` of ``(str(key), normalised value)`` sorted by key
anything else              kept if hashable, else its ``repr`` text
========================== ====================================================================

Columns are normalised by dispatching once on the set of Python types present, so the common
cases (all ints, all strings, all floats, one temporal type) cost one C-level pass instead of a
Python call per cell.
"""

from __future__ import annotations

import datetime as dt
import decimal
import enum
import math
import pickle
import uuid
import zlib
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import numpy as np
import pandas as pd

# Values with a rounded magnitude at or above 2**52 are already integral; scaling them would
# only risk overflow (numpy's round turns 1e308 into inf).
_INTEGRAL_FLOAT = float(2**52)


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
    def from_names(cls, names: Sequence[str | None], rows: Sequence[Sequence[Any]]) -> ResultSet:
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

    def column_values(self, index: int) -> list[Any]:
        """The raw values of one column, top to bottom.

        >>> ResultSet.from_names(["a", "b"], [[1, "x"], [2, "y"]]).column_values(1)
        ['x', 'y']
        """
        return list(map(itemgetter(index), self.rows))

    def check_width(self) -> None:
        """Raise ``ValueError`` unless every row has one value per column."""
        widths = set(map(len, self.rows))
        if widths - {self.n_columns}:
            raise ValueError(
                f"result set has {self.n_columns} columns but rows of widths {sorted(widths)}; "
                "every row must have one value per column"
            )

    def normalized_columns(self, float_decimals: int = 6) -> list[list[Hashable]]:
        """Every column normalised (SPEC 6.5), column-major.

        Raises ``ValueError`` when a row's width differs from the number of columns, because a
        ragged result would silently shift values between columns.

        >>> ResultSet.from_names(["a"], [[True], [1.0000001]]).normalized_columns()
        [[<Truth.TRUE: True>, 1.0]]
        """
        self.check_width()
        return [
            normalize_column(self.column_values(i), float_decimals) for i in range(self.n_columns)
        ]


PACK_LEVEL = 1
"""zlib's fastest level: on the benchmark's 2,000 results (4.8 MB pickled) 1.14 MB against
level 6's 1.12 MB, in 0.03 s against 0.23 s."""


def pack_rows(rows: Sequence[tuple[Any, ...]]) -> bytes:
    """Rows as the results store keeps them: pickled and compressed.

    >>> unpack_rows(pack_rows([(1, "a")]))
    [(1, 'a')]
    """
    return zlib.compress(pickle.dumps(list(rows)), PACK_LEVEL)


def unpack_rows(payload: bytes) -> list[tuple[Any, ...]]:
    """Rows packed by :func:`pack_rows` (the store's own payloads only: this unpickles)."""
    rows: list[tuple[Any, ...]] = pickle.loads(zlib.decompress(payload))  # noqa: S301
    return rows


@dataclass(frozen=True)
class PackedResultSet:
    """A result set whose rows stay packed until read: to another process it travels as its
    compressed bytes (sending unpacked rows, dates and decimals one by one, cost more than
    scoring them)."""

    columns: tuple[Column, ...]
    payload: bytes

    def unpack(self) -> ResultSet:
        return ResultSet(self.columns, unpack_rows(self.payload))


class Truth(enum.Enum):
    """A normalised boolean: hashable, and unequal to the integers 0 and 1."""

    FALSE = False
    TRUE = True

    # Identity hashing in C: Enum's own __hash__ is Python code, slow over millions of cells.
    __hash__ = object.__hash__


@dataclass(frozen=True)
class Struct:
    """A normalised dict/struct/map: ``(key, value)`` items sorted by key text."""

    items: tuple[tuple[str, Hashable], ...]


def round_float(value: float, float_decimals: int = 6) -> float:
    """Round one float exactly as :func:`normalize_column` rounds a float column.

    >>> round_float(0.1 + 0.2)
    0.3
    """
    if not abs(value) < _INTEGRAL_FLOAT:
        return value
    scale = 10.0**float_decimals
    return float(round(value * scale)) / scale


def normalize_value(value: Any, float_decimals: int = 6) -> Hashable:
    """Normalise one driver value (SPEC 6.5); see the module docstring for the table.

    >>> normalize_value(decimal.Decimal("1.00")) == normalize_value(1.0) == 1
    True
    >>> normalize_value(True) == 1
    False
    """
    handler = _EXACT_HANDLERS.get(type(value))
    if handler is not None:
        return handler(value, float_decimals)
    return _normalize_other(value, float_decimals)


def normalize_column(values: Sequence[Any], float_decimals: int = 6) -> list[Hashable]:
    """Normalise one column, choosing the cheapest correct path from the types present.

    >>> normalize_column([1.0000004, None, float("nan")])
    [1.0, None, None]
    """
    return normalize_column_typed(values, float_decimals)[0]


def normalize_column_typed(
    values: Sequence[Any], float_decimals: int = 6
) -> tuple[list[Hashable], set[type]]:
    """:func:`normalize_column` and the set of Python types of the normalised values.

    >>> values, types = normalize_column_typed([True, None])
    >>> values, sorted(t.__name__ for t in types)
    ([<Truth.TRUE: True>, None], ['NoneType', 'Truth'])
    """
    types = set(map(type, values))
    if types <= _UNCHANGED_TYPES:
        return list(values), types
    if types <= _FLOAT_TYPES:
        floats, has_null = _normalize_floats(values, float_decimals)
        return floats, {float, type(None)} if has_null else {float}
    if len(types - {type(None)}) == 1 and types - {type(None)} <= set(_EXACT_HANDLERS):
        return _normalize_by_distinct(values, float_decimals)
    normalized = [normalize_value(v, float_decimals) for v in values]
    return normalized, set(map(type, normalized))


def _normalize_floats(values: Sequence[Any], float_decimals: int) -> tuple[list[Hashable], bool]:
    """Vectorised rounding of a float column; None and NaN become None (and whether any did)."""
    array = np.asarray(values, dtype=np.float64)
    small = np.abs(array) < _INTEGRAL_FLOAT
    rounded = array.copy()
    rounded[small] = np.round(array[small], float_decimals)
    out: list[Hashable] = rounded.tolist()
    missing = np.flatnonzero(np.isnan(array)).tolist()
    for position in missing:
        out[position] = None
    return out, bool(missing)


def _normalize_by_distinct(
    values: Sequence[Any], float_decimals: int
) -> tuple[list[Hashable], set[type]]:
    """Normalise each distinct value once; safe because the column holds one type plus None."""
    try:
        distinct = {v: normalize_value(v, float_decimals) for v in set(values)}
    except TypeError:  # e.g. signalling Decimal NaN is unhashable
        normalized = [normalize_value(v, float_decimals) for v in values]
        return normalized, set(map(type, normalized))
    return list(map(distinct.__getitem__, values)), set(map(type, distinct.values()))


def _normalize_float(value: float, float_decimals: int) -> Hashable:
    return None if math.isnan(value) else round_float(value, float_decimals)


def _normalize_decimal(value: decimal.Decimal, float_decimals: int) -> Hashable:
    if value.is_nan():
        return None
    if value.is_infinite():
        return float(value)
    if value == value.to_integral_value():
        return int(value)
    return round_float(float(value), float_decimals)


def _normalize_datetime(value: dt.datetime, float_decimals: int) -> Hashable:
    if pd.isna(value):  # pd.NaT is a datetime subclass
        return None
    if value.tzinfo is not None and value.utcoffset() is not None:
        value = value.astimezone(dt.UTC)
    return value.isoformat()


def _normalize_timedelta(value: dt.timedelta, float_decimals: int) -> Hashable:
    if pd.isna(value):
        return None
    seconds = value.seconds + value.microseconds / 1_000_000
    text = f"{seconds:.6f}".rstrip("0").rstrip(".")
    return f"P{value.days}DT{text}S"


def _normalize_sequence(value: Iterable[Any], float_decimals: int) -> Hashable:
    return tuple(normalize_value(v, float_decimals) for v in value)


def _normalize_mapping(value: dict[Any, Any], float_decimals: int) -> Hashable:
    items = ((str(k), normalize_value(v, float_decimals)) for k, v in value.items())
    return Struct(tuple(sorted(items, key=itemgetter(0))))


def _normalize_bytes(value: bytes | bytearray | memoryview, float_decimals: int) -> Hashable:
    return "\\x" + bytes(value).hex()


def _keep(value: Any, float_decimals: int) -> Hashable:
    return value


def _null(value: Any, float_decimals: int) -> Hashable:
    return None


def _truth(value: Any, float_decimals: int) -> Hashable:
    return Truth.TRUE if value else Truth.FALSE


_Handler = Callable[[Any, int], Hashable]

_EXACT_HANDLERS: dict[type, _Handler] = {
    type(None): _null,
    int: _keep,
    str: _keep,
    float: _normalize_float,
    bool: _truth,
    np.bool_: _truth,
    decimal.Decimal: _normalize_decimal,
    dt.date: lambda v, k: v.isoformat(),
    dt.time: lambda v, k: v.isoformat(),
    dt.datetime: _normalize_datetime,
    pd.Timestamp: _normalize_datetime,
    dt.timedelta: _normalize_timedelta,
    pd.Timedelta: _normalize_timedelta,
    uuid.UUID: lambda v, k: str(v),
    bytes: _normalize_bytes,
    bytearray: _normalize_bytes,
    memoryview: _normalize_bytes,
    list: _normalize_sequence,
    tuple: _normalize_sequence,
    dict: _normalize_mapping,
}

_UNCHANGED_TYPES: frozenset[type] = frozenset({int, str, type(None)})
_FLOAT_TYPES: frozenset[type] = frozenset({float, np.float64, np.float32, type(None)})


def _normalize_other(value: Any, float_decimals: int) -> Hashable:
    """Subclasses and foreign scalar types (numpy, pandas), matched by isinstance."""
    if value is pd.NaT or value is pd.NA:
        return None
    if isinstance(value, np.generic):
        return _normalize_numpy(value, float_decimals)
    if isinstance(value, np.ndarray):
        return _normalize_sequence(value.tolist(), float_decimals)
    for kind, handler in _EXACT_HANDLERS.items():
        if kind is not type(None) and isinstance(value, kind):
            return handler(value, float_decimals)
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def _normalize_numpy(value: np.generic, float_decimals: int) -> Hashable:
    """numpy scalars: datetime64 keeps microseconds, the rest go through ``.item()``."""
    if isinstance(value, np.datetime64):
        if np.isnat(value):
            return None
        unit = np.datetime_data(value.dtype)[0]
        as_python = value.item() if unit in ("Y", "M", "W", "D") else value.astype("M8[us]").item()
        return normalize_value(as_python, float_decimals)
    if isinstance(value, np.timedelta64):
        if np.isnat(value):
            return None
        return normalize_value(value.astype("m8[us]").item(), float_decimals)
    return normalize_value(value.item(), float_decimals)
