"""Canonical form of a query, the key that finds twins for leave-one-out (SPEC section 4).

Parse, qualify against the live schema, then rewrite only what cannot change the result:
sources, CTEs and projections get positional names; inner-join conditions move to WHERE when
a SELECT has no outer join; commutative operands are put in one order; sqlglot writes the text.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope, walk_in_scope

from t2s_pipeline.cases import Case, Domain
from t2s_pipeline.errors import SqlAnalysisError
from t2s_pipeline.spread import spread
from t2s_pipeline.sql.parse import parse_one_query
from t2s_pipeline.sql.qualify import qualify_query
from t2s_pipeline.sql.render import render
from t2s_pipeline.sql.schema import Schema, domain_schemas

_INNER_KINDS = frozenset({"", "INNER", "CROSS"})


class _Unrenamable(Exception):
    """A reference could not be tied to its source, so renaming could merge distinct queries."""


def canonical_form(sql: str, dialect: str, schema: Schema | None) -> str:
    """One string shared by differently written equal queries.

    >>> a = "SELECT o.id AS x FROM orders o JOIN items i ON o.id = i.oid"
    >>> b = "select z.id from ORDERS z, items y where y.oid = z.id"
    >>> canonical_form(a, "duckdb", None) == canonical_form(b, "duckdb", None)
    True
    """
    qualified = qualify_query(parse_one_query(sql, dialect), dialect, schema)
    return canonical_from_qualified(qualified, dialect, copy=False)  # the qualified copy is ours


def canonical_from_qualified(
    tree: exp.Expr, dialect: str, copy: bool = True, scopes: list[Scope] | None = None
) -> str:
    """Canonical form of a tree already produced by ``qualify_query``.

    With ``copy=False`` the tree is rewritten in place, and ``scopes`` (its traverse_scope,
    when the caller already has it) saves walking it again.
    """
    if copy:
        tree, scopes = tree.copy(), None
    scopes = scopes if scopes is not None else traverse_scope(tree)
    try:
        plan = _plan_renames(tree, scopes)
    except _Unrenamable:
        pass  # keep the written names: a longer key is safe, a merged one is not
    else:
        plan.apply()
    for scope in scopes:
        if isinstance(scope.expression, exp.Select):
            _move_inner_join_conditions(scope.expression)
    return render(tree, dialect)


class _RenamePlan:
    """Every rename decided before any is applied, so a failure leaves the tree untouched."""

    def __init__(self) -> None:
        self.identifiers: list[tuple[exp.Expr, str, str]] = []

    def rename(self, node: exp.Expr, key: str, name: str) -> None:
        self.identifiers.append((node, key, name))

    def apply(self) -> None:
        for node, key, name in self.identifiers:
            if key == "alias" and isinstance(node, exp.Alias):
                node.set("alias", exp.to_identifier(name))
            elif key == "alias":
                alias = node.args.get("alias") or exp.TableAlias()
                alias.set("this", exp.to_identifier(name))
                node.set("alias", alias)
            else:
                node.set(key, exp.to_identifier(name))


def _plan_renames(tree: exp.Expr, scopes: list[Scope]) -> _RenamePlan:
    plan = _RenamePlan()
    cte_names = _plan_cte_names(tree, plan)
    source_names = _plan_source_names(scopes, cte_names, plan)
    for scope in scopes:
        _plan_projection_names(scope, plan)
        for node in walk_in_scope(scope.expression):
            if isinstance(node, exp.Column):
                _plan_column(node, scope, source_names, plan)
    return plan


def _plan_cte_names(tree: exp.Expr, plan: _RenamePlan) -> dict[str, str]:
    counter = itertools.count()
    names: dict[str, str] = {}
    for cte in tree.find_all(exp.CTE):
        names[cte.alias] = f"_w{next(counter)}"
        plan.rename(cte, "alias", names[cte.alias])
    return names


def _plan_source_names(
    scopes: list[Scope], cte_names: dict[str, str], plan: _RenamePlan
) -> dict[int, dict[str, str]]:
    """``_t0, _t1, ...`` for every FROM/JOIN source, in scope order; CTE references renamed."""
    counter = itertools.count()
    names: dict[int, dict[str, str]] = {}
    for scope in scopes:
        local = names[id(scope)] = {}
        for alias, (node, source) in scope.selected_sources.items():
            # A derived table is selected as its query; the alias sits on the wrapping Subquery.
            target = node.parent if isinstance(node.parent, exp.Subquery) else node
            if not isinstance(target, exp.Table | exp.Subquery):
                continue
            local[alias] = f"_t{next(counter)}"
            plan.rename(target, "alias", local[alias])
            if isinstance(source, Scope) and isinstance(node, exp.Table) and not node.db:
                if node.name not in cte_names:
                    raise _Unrenamable(node.name)
                plan.rename(node, "this", cte_names[node.name])
    return names


def _plan_projection_names(scope: Scope, plan: _RenamePlan) -> None:
    if isinstance(scope.expression, exp.Select):
        for position, projection in enumerate(scope.expression.expressions):
            if isinstance(projection, exp.Alias):
                plan.rename(projection, "alias", f"_c{position}")


def _plan_column(
    column: exp.Column, scope: Scope, source_names: dict[int, dict[str, str]], plan: _RenamePlan
) -> None:
    if not column.table:
        # Only ORDER BY may name an output alias; elsewhere an unqualified name is a column of
        # a table the schema does not know, and renaming it could merge distinct queries.
        position = _output_position(scope, column.name)
        if position is not None and _in_own_order_by(column, scope):
            plan.rename(column, "this", f"_c{position}")
        return
    owner: Scope | None = scope
    while owner is not None and column.table not in source_names[id(owner)]:
        owner = owner.parent
    if owner is None:
        raise _Unrenamable(column.sql())
    plan.rename(column, "table", source_names[id(owner)][column.table])
    source = owner.sources[column.table]
    if isinstance(source, Scope):
        position = _output_position(source, column.name)
        if position is None:
            raise _Unrenamable(column.sql())
        plan.rename(column, "this", f"_c{position}")


def _in_own_order_by(column: exp.Column, scope: Scope) -> bool:
    node: exp.Expr | None = column.parent
    while node is not None and node is not scope.expression:
        if isinstance(node, exp.Window):
            return False
        if isinstance(node, exp.Order):
            return node.parent is scope.expression
        node = node.parent
    return False


def _output_position(scope: Scope, name: str) -> int | None:
    """Position of an output column of ``scope`` (set operations: names of the first branch)."""
    expression = scope.expression
    while isinstance(expression, exp.SetOperation):
        expression = expression.this.unnest()
    if not isinstance(expression, exp.Select):
        return None
    names = [projection.alias_or_name for projection in expression.expressions]
    return names.index(name) if name in names else None


def _move_inner_join_conditions(select: exp.Select) -> None:
    """``a JOIN b ON p`` and ``a, b WHERE p`` are the same query when every join is inner."""
    joins = select.args.get("joins") or []
    if not joins or not all(_is_plain_inner(join) for join in joins):
        return
    conditions = [join.args["on"] for join in joins if join.args.get("on") is not None]
    where = select.args.get("where")
    if where is not None:
        conditions.append(where.this)
    for join in joins:
        join.set("on", None)
        join.set("kind", None)
    if conditions:
        select.set("where", exp.Where(this=exp.and_(*conditions, copy=False)))


def _is_plain_inner(join: exp.Join) -> bool:
    return (
        not join.side
        and join.kind in _INNER_KINDS
        and not join.method
        and not join.args.get("using")
        and isinstance(join.this, exp.Table | exp.Subquery)
    )


def find_twins(
    cases: tuple[Case, ...], domain: Domain, **spreading: int
) -> dict[str, frozenset[str]]:
    """Map each case id to the ids of its twins (same canonical gold query), itself excluded.

    Cases whose gold SQL cannot be canonicalised have no twins. Many cases are canonicalised
    over every core (``spreading``: :func:`t2s_pipeline.spread.spread`'s thresholds).
    """
    return twins_of(cases, canonical_forms(cases, domain, {}, **spreading))


def canonical_forms(
    cases: tuple[Case, ...], domain: Domain, known: Mapping[str, str | None], **spreading: int
) -> dict[str, str | None]:
    """Each case's canonical gold query by case id (None: it cannot be canonicalised); a case
    in ``known`` takes its form from there, the others are canonicalised (over every core when
    they are many, see :func:`find_twins`)."""
    schemas = domain_schemas(cases, domain)
    todo = [case for case in cases if case.id not in known]
    jobs = [(case.gold_sql, domain.dialect, schemas[case.db_id]) for case in todo]
    made = dict(
        zip(
            (case.id for case in todo),
            spread(_canonical_or_none, jobs, **spreading),
            strict=True,
        )
    )
    return {case.id: known[case.id] if case.id in known else made[case.id] for case in cases}


def twins_of(
    cases: tuple[Case, ...], canonicals: Mapping[str, str | None]
) -> dict[str, frozenset[str]]:
    """Each case's twins: the other cases of its database with its canonical gold query."""
    groups: dict[tuple[str | None, str], set[str]] = {}
    for case in cases:
        canonical = canonicals[case.id]
        if canonical is not None:
            groups.setdefault((case.db_id, canonical), set()).add(case.id)
    twins: dict[str, frozenset[str]] = {case.id: frozenset() for case in cases}
    for members in groups.values():
        for member in members:
            twins[member] = frozenset(members - {member})
    return twins


def _canonical_or_none(job: tuple[str, str, Schema]) -> str | None:
    """The canonical form of one gold query, None when it cannot be canonicalised."""
    try:
        return canonical_form(*job)
    except SqlAnalysisError:
        return None
