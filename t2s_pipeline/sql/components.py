"""Reduce a qualified query to the component sets of SPEC section 7.

Every string is the normal form (``meaning``) of an alias-free, resolved expression (see
``resolve``), so two queries that differ only in aliases, CTE layering, operand order or the
spelling of a condition (``NOT x`` / ``x = FALSE``, ``BETWEEN`` / two bounds, ``IN`` / ``OR``)
produce the same strings; ``display`` keeps the text as written.
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, walk_in_scope

from t2s_pipeline.scoring.components import ComponentSets
from t2s_pipeline.sql.meaning import conjuncts, normalise, sort_keys
from t2s_pipeline.sql.names import table_key
from t2s_pipeline.sql.render import render
from t2s_pipeline.sql.resolve import Resolver


def extract_components(resolver: Resolver) -> ComponentSets:
    """The component sets of the query behind ``resolver``.

    >>> from t2s_pipeline.sql.parse import parse_one_query
    >>> from t2s_pipeline.sql.qualify import qualify_query
    >>> sql = "SELECT c.name FROM customers c, orders o WHERE o.customer_id = c.id AND 5 < o.n"
    >>> tree = qualify_query(parse_one_query(sql, "duckdb"), "duckdb", None)
    >>> sets = extract_components(Resolver(tree, "duckdb"))
    >>> sorted(sets.joins), sorted(sets.filters)
    (['customers.id = orders.customer_id'], ['orders.n > 5'])
    >>> sql = "SELECT COUNT(1) FROM orders o WHERE o.n BETWEEN 1 AND 5"
    >>> sets = extract_components(Resolver(qualify_query(parse_one_query(sql, "duckdb"),
    ...     "duckdb", None), "duckdb"))
    >>> sorted(sets.filters), sorted(sets.aggregations), sets.display["orders.n >= 1"]
    (['orders.n <= 5', 'orders.n >= 1'], ['COUNT(*)'], 'orders.n BETWEEN 1 AND 5')
    """
    return _Extractor(resolver).extract()


class _Extractor:
    """Walks every SELECT scope once, collecting strings per set."""

    def __init__(self, resolver: Resolver) -> None:
        self.resolver = resolver
        self.dialect = resolver.dialect
        self.display: dict[str, str] = {}
        # Nodes of one query that read alike (the resolver's text: columns resolved) are the
        # same element: a projection met again in GROUP BY, ORDER BY or the aggregations is
        # normalised once (about two calls in five repeat one on the demo's gold queries).
        self._known: dict[tuple[str, bool], list[str]] = {}

    def _elements(self, node: exp.Expr, split: bool = False) -> list[str]:
        """The normalised element(s) of ``node`` (its conjuncts when ``split``), each shown as
        ``node`` is written."""
        shown = self.resolver.text(node)
        known = self._known.get((shown, split))
        if known is not None:
            return known
        self._known[shown, split] = keys = self._normalised(node, shown, split)
        return keys

    def _normalised(self, node: exp.Expr, shown: str, split: bool) -> list[str]:
        # resolved() gives a fresh standalone copy: normalise may rewrite it in place. A bare
        # column is its own normal form (nothing to rewrite or simplify), and most are bare.
        resolved = self.resolver.resolved(node)
        bare = isinstance(resolved, exp.Column) and isinstance(resolved.this, exp.Identifier)
        normal = resolved if bare else normalise(resolved, self.dialect, copy=False)
        keys = [render(term, self.dialect) for term in (conjuncts(normal) if split else [normal])]
        for key in keys:
            if key != shown:
                self.display.setdefault(key, shown)
        return keys

    def _element(self, node: exp.Expr) -> str:
        return self._elements(node)[0]

    def extract(self) -> ComponentSets:
        selects = [s for s in self.resolver.scopes if isinstance(s.expression, exp.Select)]
        joins: set[str] = set()
        filters: set[str] = set()
        for scope in selects:
            self._conditions(scope, joins, filters)
        root = self.resolver.root
        return ComponentSets(
            select=frozenset(self._select(root)),
            tables=frozenset(
                table_key(t) for s in self.resolver.scopes for t in self.resolver.base_tables(s)
            ),
            joins=frozenset(joins),
            filters=frozenset(filters),
            group_by=frozenset(g for s in selects for g in self._group_by(s)),
            aggregations=frozenset(a for s in selects for a in self._aggregations(s)),
            order_by=frozenset(self._order_by(root)),
            limit=frozenset(self._limit(root.expression)),
            display=self.display,
        )

    def _select(self, root: Scope) -> Iterator[str]:
        for branch in self.resolver.output_branches(root):
            for projection in branch.expression.expressions:
                yield self._element(projection)

    def _conditions(self, scope: Scope, joins: set[str], filters: set[str]) -> None:
        select = scope.expression
        for condition in _join_and_where_conditions(select):
            for term in conjuncts(condition):
                pair = self._join_pair(term, scope)
                if pair is not None:
                    joins.add(pair)
                else:
                    filters.update(self._elements(term, split=True))
        # HAVING and QUALIFY filter rows too (after grouping, after windows); an engine
        # without QUALIFY spells it as a WHERE around a derived table.
        for clause in ("having", "qualify"):
            found = select.args.get(clause)
            if found is not None:
                for term in conjuncts(found.this):
                    filters.update(self._elements(term, split=True))

    def _join_pair(self, term: exp.Expr, scope: Scope) -> str | None:
        """``a = b`` between columns of two different sources, operands sorted; else None."""
        if not isinstance(term, exp.EQ):
            return None
        left, right = term.this, term.expression
        if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
            return None
        if self._source_key(left, scope) == self._source_key(right, scope):
            return None
        sides = sorted(self.resolver.text(column) for column in (left, right))
        return " = ".join(sides)

    def _source_key(self, column: exp.Column, scope: Scope) -> object:
        found = self.resolver.source_of(column, scope)
        return (id(found[0]), column.table) if found is not None else column.table

    def _group_by(self, scope: Scope) -> Iterator[str]:
        group = scope.expression.args.get("group")
        if group is None:
            return
        nodes = group.expressions
        if group.args.get("all"):
            # GROUP BY ALL groups by every projection that is not an aggregate.
            projections = scope.expression.expressions
            nodes = [p for p in projections if not any(_aggregate_calls(p))]
        for node in nodes:
            yield self._element(node)

    def _aggregations(self, scope: Scope) -> Iterator[str]:
        for node in _aggregate_calls(scope.expression):
            # A filtered or windowed aggregate is a different computation from the plain one.
            whole: exp.Expr = node
            for wrapper in (exp.Filter, exp.Window):
                if isinstance(whole.parent, wrapper):
                    whole = whole.parent
            yield self._element(whole)

    def _order_by(self, root: Scope) -> Iterator[str]:
        order = root.expression.args.get("order")

        def same(a: exp.Expr, b: exp.Expr) -> bool:
            return self._element(self._sort_key(a, root)) == self._element(self._sort_key(b, root))

        for ordered in sort_keys(order, same):
            direction = "DESC" if ordered.args.get("desc") else "ASC"
            key = self._sort_key(ordered.this, root)
            text = f"{self._element(key)} {direction}"
            shown = f"{self.resolver.text(key)} {direction}"
            if text != shown:
                self.display.setdefault(text, shown)
            yield text

    def _sort_key(self, node: exp.Expr, root: Scope) -> exp.Expr:
        """ORDER BY may name an output column; then it sorts by that column's expression."""
        branches = self.resolver.output_branches(root)
        if isinstance(node, exp.Column) and not node.table and branches:
            first = branches[0]
            for projection in first.expression.expressions:
                if projection.alias_or_name == node.name:
                    return projection
        return node

    def _limit(self, query: exp.Expr) -> Iterator[str]:
        for key in ("limit", "offset"):
            clause = query.args.get(key)
            if clause is not None:
                yield self.resolver.text(clause).strip()


def _aggregate_calls(node: exp.Expr) -> Iterator[exp.AggFunc]:
    """Aggregate calls in ``node`` that belong to its own scope."""
    return (n for n in walk_in_scope(node) if isinstance(n, exp.AggFunc))


def _join_and_where_conditions(select: exp.Expr) -> Iterator[exp.Expr]:
    for join in select.args.get("joins") or []:
        on = join.args.get("on")
        if on is not None:
            yield on
    where = select.args.get("where")
    if where is not None:
        yield where.this
