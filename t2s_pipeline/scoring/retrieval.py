"""Retrieval family (SPEC section 5): were the tables the answer needs offered at all?"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from t2s_pipeline.sql.names import split_table_name

TableName = tuple[str, str]


@dataclass(frozen=True)
class RetrievalScore:
    """Recall and precision of the offered tables against the required ones.

    ``spurious`` counts offered tables the answer does not need; ``missing`` names the required
    tables that were not offered.
    """

    recall: float | None
    precision: float | None
    spurious: int
    missing: tuple[str, ...]


def score_retrieval(
    required: frozenset[str], offered: Iterable[str], dialect: str = "duckdb"
) -> RetrievalScore:
    """Score offered table names against required ones (both folded by the dialect's rules).

    A name written without a schema matches a same-named table in any schema, because
    retrievers often return bare table names.

    >>> required = frozenset({"sales.orders", "sales.order_lines", "sales.customers"})
    >>> offered = ["sales.orders", "sales.customers", "sales.items", "sales.sites", "hr.employees"]
    >>> score = score_retrieval(required, offered)
    >>> round(score.recall, 3), round(score.precision, 3), score.spurious, score.missing
    (0.667, 0.4, 3, ('sales.order_lines',))
    """
    wanted = sorted({split_table_name(name, dialect) for name in required})
    given = sorted({split_table_name(name, dialect) for name in offered})
    found = _match(wanted, given)
    return RetrievalScore(
        recall=len(found) / len(wanted) if wanted else None,
        precision=len(found) / len(given) if given else None,
        spurious=len(given) - len(found),
        missing=tuple(_display(name) for name in wanted if name not in found),
    )


def _match(required: list[TableName], offered: list[TableName]) -> dict[TableName, TableName]:
    """Pair each required table with at most one offered table, exact names first."""
    pairs = {name: name for name in required if name in offered}
    free = [name for name in offered if name not in pairs.values()]
    for name in required:
        if name in pairs:
            continue
        partner = next((o for o in free if _same_table(name, o)), None)
        if partner is not None:
            pairs[name] = partner
            free.remove(partner)
    return pairs


def _same_table(left: TableName, right: TableName) -> bool:
    """Same name, where a side without a schema matches any schema."""
    if left[0] and right[0]:
        return left == right
    return left[1] == right[1]


def _display(name: TableName) -> str:
    return f"{name[0]}.{name[1]}" if name[0] else name[1]
