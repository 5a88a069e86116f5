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


CLAUSES = ("limit", "offset", "order")
"""The top-level clauses cleaning may drop, as sqlglot names them."""


def top_clauses(tree: exp.Expr) -> frozenset[str]:
    """Which of :data:`CLAUSES` the query has at its top level.

    >>> import sqlglot
    >>> sorted(top_clauses(sqlglot.parse_one("SELECT a FROM t ORDER BY a LIMIT 5 OFFSET 1")))
    ['limit', 'offset', 'order']
    >>> top_clauses(sqlglot.parse_one("SELECT a FROM (SELECT a FROM t LIMIT 5) AS s"))
    frozenset()
    """
    return frozenset(key for key in CLAUSES if tree.args.get(key) is not None)


def clean_candidate(
    candidate_tree: exp.Expr,
    gold: exp.Expr | frozenset[str],
    rules: CleaningRules | None = None,
    copy: bool = True,
) -> exp.Expr:
    """A copy of the candidate without the top-level clauses ``rules`` drop and the gold
    lacks (the candidate itself, cleaned, without ``copy``). ``gold``: the gold's tree, or its
    :func:`top_clauses` when they are known already (the gold need not be parsed again).

    >>> import sqlglot
    >>> gold = sqlglot.parse_one("SELECT a FROM t")
    >>> candidate = sqlglot.parse_one("SELECT a FROM t LIMIT 1000")
    >>> clean_candidate(candidate, gold).sql()
    'SELECT a FROM t'
    >>> clean_candidate(candidate, frozenset({"limit"})).sql()
    'SELECT a FROM t LIMIT 1000'
    """
    rules = rules or CleaningRules()
    kept = gold if isinstance(gold, frozenset) else top_clauses(gold)
    cleaned = candidate_tree.copy() if copy else candidate_tree
    wanted = {"limit": rules.drop_limit, "offset": rules.drop_offset, "order": rules.drop_order_by}
    for key, drop in wanted.items():
        if drop and key not in kept:
            cleaned.set(key, None)
    return cleaned
