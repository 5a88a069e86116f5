"""How each dialect folds names, and where an unqualified table name resolves by default.

What a guarded statement may *call* is an allowlist per engine
(:mod:`t2s_pipeline.execution.allowlists`); this module only says how names compare: the
allowlisted schema names are folded as the dialect folds an unquoted identifier, so ``Sales``
in domain.yaml and ``sales`` in a statement are the same schema.
"""

from __future__ import annotations

import functools

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

DEFAULT_SCHEMAS: dict[str, str] = {"duckdb": "main", "postgres": "public", "sqlite": "main"}
"""Where an unqualified table name resolves in each dialect (``main`` when not listed)."""


def default_schema(dialect: str) -> str:
    """The schema an unqualified table name resolves to in ``dialect``.

    >>> default_schema("postgres"), default_schema("sqlite")
    ('public', 'main')
    """
    return DEFAULT_SCHEMAS.get(dialect, "main")


def fold_schema_names(names: tuple[str, ...] | list[str], dialect: str) -> frozenset[str]:
    """Allowlisted schema names folded as the dialect folds an unquoted identifier.

    >>> sorted(fold_schema_names(("Sales", "hr"), "postgres"))
    ['hr', 'sales']
    """
    return frozenset(fold_identifier(n, False, dialect) for n in names)


@functools.lru_cache(maxsize=8192)
def fold_identifier(name: str, quoted: bool, dialect: str) -> str:
    """An identifier as the dialect resolves it (quoted names keep their case where it matters).

    >>> fold_identifier("Orders", False, "postgres"), fold_identifier("Orders", True, "postgres")
    ('orders', 'Orders')
    >>> fold_identifier("Orders", True, "duckdb")
    'orders'
    """
    engine = Dialect.get_or_raise(dialect)
    return engine.normalize_identifier(exp.Identifier(this=name, quoted=quoted)).name
