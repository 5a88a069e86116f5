"""The guard configuration and the refusal value every layer returns.

A :class:`Guard` says what a query may touch (allowlisted schemas), in which SQL dialect the
statement filter reads it, which access layers are on, and the bounds every query runs under.
The bounds (``timeout_s``, ``row_limit``, ``eval_row_cap``) are not an access layer: they apply
whatever ``layers`` says, because an unbounded query is never acceptable.
"""

from __future__ import annotations

from dataclasses import dataclass

from t2s_pipeline.errors import ConfigError

FILTER = "filter"
DATABASE = "database"
LIMITS = "limits"
"""Not an access layer: the name a refusal carries when a hard limit (memory, CPU, wall clock,
result size) ended the statement."""
LAYERS: frozenset[str] = frozenset({FILTER, DATABASE})


@dataclass(frozen=True)
class Guard:
    """What a guarded executor allows and the bounds it enforces.

    >>> Guard(allowed_schemas=("sales",)).layers == LAYERS
    True
    """

    allowed_schemas: tuple[str, ...]
    dialect: str = "duckdb"
    layers: frozenset[str] = LAYERS
    timeout_s: float = 30.0
    row_limit: int | None = None
    eval_row_cap: int | None = 100_000
    allowed_tables: tuple[str, ...] | None = None
    """SQLite: the only tables (and views) of ``main`` a statement may read (None: all)."""
    memory_mb: int = 4096
    """Address space of the worker process a contained statement runs in (RLIMIT_AS)."""
    max_result_bytes: int = 64_000_000
    """Largest result a statement may return, counted over its cells' sizes."""
    contained: bool = True
    """Run each statement in a worker process under the hard limits (SPEC section 9.4)."""

    @classmethod
    def for_evaluation(
        cls, allowed_schemas: tuple[str, ...], dialect: str, eval_row_cap: int | None = 100_000
    ) -> Guard:
        """The one guard every harness query (gold, candidate, `t2s score`) runs under: the
        serving bounds without the serving LIMIT, capped at ``eval_row_cap`` rows instead.

        >>> Guard.for_evaluation(("sales",), "duckdb").row_limit is None
        True
        """
        return cls(
            allowed_schemas=tuple(allowed_schemas),
            dialect=dialect,
            row_limit=None,
            eval_row_cap=eval_row_cap,
        )

    def __post_init__(self) -> None:
        unknown = set(self.layers) - LAYERS
        if unknown:
            raise ConfigError(
                f"unknown guard layer(s) {sorted(unknown)}: use 'filter' and/or 'database'"
            )
        if not self.timeout_s > 0:
            raise ConfigError(f"timeout_s must be positive, got {self.timeout_s}")
        for name in ("row_limit", "eval_row_cap", "memory_mb", "max_result_bytes"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be at least 1 (or None for no bound), got {value}")

    @property
    def fetch_cap(self) -> int | None:
        """The most rows ever fetched: the smaller of the serving limit and the evaluation cap."""
        bounds = [b for b in (self.row_limit, self.eval_row_cap) if b is not None]
        return min(bounds) if bounds else None


@dataclass(frozen=True)
class Refusal:
    """Why a layer refused a statement."""

    layer: str
    reason: str
    timed_out: bool = False
