"""Cleaning the candidate: drop only what the system under test adds by design.

Both sides are parsed the same way; only the candidate loses clauses, and only clauses the gold
does not have (the serving path appends ``LIMIT 1000`` to every query, SPEC section 9).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp


@dataclass(frozen=True)
class CleaningRules:
    """Which top-level clauses the candidate loses when the gold has none of them."""

    drop_limit: bool = True
    drop_offset: bool = True
    drop_order_by: bool = False


def clean_candidate(
    candidate_tree: exp.Expr,
    gold_tree: exp.Expr,
    rules: CleaningRules | None = None,
    copy: bool = True,
) -> exp.Expr:
    """A copy of the candidate without the top-level clauses ``rules`` drop and gold lacks
    (the candidate itself, cleaned, without ``copy``).

    >>> import sqlglot
    >>> gold = sqlglot.parse_one("SELECT a FROM t")
    >>> candidate = sqlglot.parse_one("SELECT a FROM t LIMIT 1000")
    >>> clean_candidate(candidate, gold).sql()
    'SELECT a FROM t'
    """
    rules = rules or CleaningRules()
    cleaned = candidate_tree.copy() if copy else candidate_tree
    wanted = {"limit": rules.drop_limit, "offset": rules.drop_offset, "order": rules.drop_order_by}
    for key, drop in wanted.items():
        if drop and gold_tree.args.get(key) is None:
            cleaned.set(key, None)
    return cleaned
