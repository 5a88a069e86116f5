"""The value a guarded query returns, refused or not, and its JSON form (SPEC 15)."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import uuid
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class QueryOutcome:
    """What happened to one statement: refused (by which layer, why), failed, or its rows.

    ``error`` is set when the statement ran but failed for a reason that is not a guard
    (a syntax error, a missing column); that is not a refusal. A timeout is a refusal by the
    database layer with ``timed_out`` set.
    """

    refused: bool
    layer: str | None
    reason: str | None
    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    truncated: bool = False
    error: str | None = None
    timed_out: bool = False
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The SPEC 15 shape with JSON-safe values.

        >>> QueryOutcome(False, None, None, ("d",), [(dt.date(2025, 6, 30),)], False).to_json()
        ... # doctest: +NORMALIZE_WHITESPACE
        {'refused': False, 'layer': None, 'reason': None, 'columns': ['d'],
         'rows': [['2025-06-30']], 'truncated': False, 'error': None}
        """
        return {
            "refused": self.refused,
            "layer": self.layer,
            "reason": self.reason,
            "columns": list(self.columns),
            "rows": [[json_safe(value) for value in row] for row in self.rows],
            "truncated": self.truncated,
            "error": self.error,
        }


def json_safe(value: Any) -> Any:
    """A driver value as something ``json.dumps`` writes faithfully.

    Decimals become floats (or text when not finite), dates and times ISO text, bytes
    ``\\x``-prefixed hex, containers lists.

    >>> json_safe(decimal.Decimal("12.50")), json_safe(float("nan")), json_safe(b"\\x01")
    (12.5, 'nan', '\\\\x01')
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, decimal.Decimal):
        return float(value) if value.is_finite() else str(value)
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, bytes | bytearray | memoryview):
        return "\\x" + bytes(value).hex()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, list | tuple | set):
        return [json_safe(item) for item in value]
    if isinstance(value, dict):
        return {str(key): json_safe(item) for key, item in value.items()}
    if hasattr(value, "item"):  # numpy scalars
        return json_safe(value.item())
    return str(value)
