"""What the three native readers share: the refusal they raise, and the series bound.

Each reader (:mod:`~t2s_pipeline.execution.read_postgres`, ``read_duckdb``, ``read_sqlite``)
reads a statement with its engine's own parser and raises :class:`Refused` with a reason at
the first thing it must not let through; the statement filter turns that into a refusal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

Scoped = tuple[Any, frozenset[str]]
"""A part of a parse tree and the CTE names visible in it."""


class Refused(Exception):
    """The filter refuses the statement; the message says why."""


def walk_tree(
    root: dict[str, Any], visit: Callable[[dict[str, Any], frozenset[str]], Iterable[Scoped]]
) -> None:
    """Visit every mapping of a JSON parse tree, depth first with an explicit stack (so a deeply
    nested statement cannot exhaust Python's recursion limit); ``visit`` checks one mapping and
    returns the parts to walk next, each with the CTE names visible there.

    >>> seen = []
    >>> def visit(node, ctes):
    ...     seen.append(node)
    ...     return [(child, ctes) for child in node.values()]
    >>> walk_tree({"a": [{"b": 1}]}, visit)
    >>> len(seen)
    2
    """
    stack: list[Scoped] = [(root, frozenset())]
    while stack:
        value, ctes = stack.pop()
        if isinstance(value, list):
            stack.extend((item, ctes) for item in value)
        elif isinstance(value, dict):
            stack.extend(visit(value, ctes))


def series_length(bounds: Sequence[float | None], inclusive: bool) -> int | None:
    """Rows a ``range``/``generate_series`` call with constant bounds asks for, else None.

    One argument is the stop (``range(n)``); two are start and stop; a third is the step.

    >>> series_length([1e12], inclusive=False), series_length([1, 10, 2], inclusive=True)
    (1000000000000, 5)
    >>> series_length([None, 10], inclusive=True) is None
    True
    """
    if not bounds or any(b is None for b in bounds) or len(bounds) > 3:
        return None
    values = [float(b) for b in bounds if b is not None]
    start, stop = (0.0, values[0]) if len(values) == 1 else (values[0], values[1])
    step = values[2] if len(values) == 3 else 1.0
    if step == 0 or not all(math.isfinite(v) for v in (start, stop, step)):
        return None
    span = (stop - start) / step
    if span < 0:
        return 0
    return (
        int(math.floor(span)) + (1 if inclusive else 0)
        if span == int(span)
        else int(math.ceil(span))
    )
