"""Following qualified columns through aliases, CTEs and subqueries down to base tables.

Works on a tree produced by ``qualify_query``. Two services: the *origin* of a bare column
(``schema.table.column``) and the alias-free *text* of any expression of the query, where a
column of a base table reads ``table.column`` and a column of a CTE or subquery reads as the
expression it stands for, so ``t.total`` over ``SUM(o.amount) AS total`` reads
``SUM(orders.amount)``. ``resolved`` gives the same reading as a standalone tree, for rewrites
that must not touch the query (see ``meaning``).
"""

from __future__ import annotations

from collections import Counter
from functools import cache

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, traverse_scope, walk_in_scope

from t2s_pipeline.sql.names import get_dialect, table_key
from t2s_pipeline.sql.render import make_generator
from t2s_pipeline.sql.schema import Schema

Source = exp.Table | Scope

# Operators whose precedence could change when a column is written as a compound expression.
_OPERATORS = (exp.Binary, exp.Unary, exp.Predicate)


class Resolver:
    """Scopes of one qualified query and the memoised texts of their columns.

    >>> from t2s_pipeline.sql.parse import parse_one_query
    >>> from t2s_pipeline.sql.qualify import qualify_query
    >>> sql = "WITH t AS (SELECT SUM(o.amount) AS s FROM orders o) SELECT s * 2 FROM t"
    >>> tree = qualify_query(parse_one_query(sql, "duckdb"), "duckdb", None)
    >>> resolver = Resolver(tree, "duckdb")
    >>> [resolver.text(p) for p in resolver.root.expression.expressions]
    ['SUM(orders.amount) * 2']
    """

    def __init__(self, tree: exp.Expr, dialect: str, schema: Schema | None = None) -> None:
        self.scopes: list[Scope] = traverse_scope(tree)
        self._scope_of = {
            id(node): scope
            for scope in self.scopes
            for node in walk_in_scope(scope.expression)
            if isinstance(node, exp.Column)
        }
        self._labels: dict[int, dict[str, exp.Identifier]] = {}
        self._dialect = get_dialect(dialect)
        self._inlined: dict[tuple[int, int], str | None] = {}
        self._busy: set[tuple[int, int]] = set()
        self._generator = make_generator(dialect, self._column_text)
        self.dialect = dialect
        self._schema = schema
        self._inlined_trees: dict[tuple[int, int], exp.Expr | None] = {}

    @property
    def root(self) -> Scope:
        """The outermost scope (traverse_scope yields it last)."""
        return self.scopes[-1]

    def text(self, node: exp.Expr) -> str:
        """Alias-free canonical text of a node of this query, columns resolved."""
        return self._generator.sql(node.unalias())

    def resolved(self, node: exp.Expr) -> exp.Expr:
        """A standalone copy of ``node`` that reads as ``text`` reads it: each column is its
        ``table.column`` (typed from the schema when known) or the expression it stands for.

        >>> from t2s_pipeline.sql.parse import parse_one_query
        >>> from t2s_pipeline.sql.qualify import qualify_query
        >>> sql = "WITH t AS (SELECT o.n + 1 AS m FROM orders o) SELECT m * 2 FROM t"
        >>> tree = qualify_query(parse_one_query(sql, "duckdb"), "duckdb", None)
        >>> resolver = Resolver(tree, "duckdb")
        >>> resolver.resolved(resolver.root.expression.expressions[0]).sql()
        '(orders.n + 1) * 2'
        """
        node = node.unalias()
        originals = list(node.find_all(exp.Column))
        replacements = [self._resolved_column(c) for c in originals]
        copy = node.copy()
        # A copy keeps the shape of its original, so both walks meet the columns in one order.
        for column, replacement in zip(list(copy.find_all(exp.Column)), replacements, strict=True):
            if column is copy:
                return replacement
            column.replace(replacement)
        return copy

    def source_of(self, column: exp.Column, scope: Scope) -> tuple[Scope, Source] | None:
        """The scope that declares the column's table and the source behind it."""
        current: Scope | None = scope
        while current is not None and column.table:
            if column.table in current.sources:
                return current, current.sources[column.table]
            current = current.parent
        return None

    def scope_of(self, column: exp.Column) -> Scope | None:
        """The scope a column of this query is written in."""
        return self._scope_of.get(id(column))

    def base_tables(self, scope: Scope) -> list[exp.Table]:
        """Base tables read in FROM/JOIN of this scope (CTEs, subqueries, functions excluded)."""
        return [
            source
            for _, source in scope.selected_sources.values()
            if isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier)
        ]

    def origin(self, node: exp.Expr, scope: Scope) -> str | None:
        """``schema.table.column`` when ``node`` is a bare column reference, else None."""
        node = node.unalias()
        if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star):
            return None
        found = self.source_of(node, scope)
        if found is None:
            return None
        source = found[1]
        if isinstance(source, exp.Table):
            if not isinstance(source.this, exp.Identifier):
                return None
            return f"{table_key(source)}.{node.name}"
        return self._scope_origin(source, node.name)

    def output_branches(self, scope: Scope) -> list[Scope]:
        """The SELECT scopes whose projections make up the output of ``scope``."""
        if isinstance(scope.expression, exp.SetOperation):
            children = scope.set_operation_scopes
            return [leaf for child in children for leaf in self.output_branches(child)]
        return [scope] if isinstance(scope.expression, exp.Select) else []

    def _scope_origin(self, scope: Scope, name: str) -> str | None:
        origins = set()
        for branch, position in self._projections_named(scope, name):
            key = (id(branch), position)
            if key in self._busy:
                return None  # a recursive CTE refers to itself
            self._busy.add(key)
            try:
                origins.add(self.origin(branch.expression.expressions[position], branch))
            finally:
                self._busy.discard(key)
        # A set-operation column has one origin only when every branch agrees on it.
        return origins.pop() if len(origins) == 1 else None

    def _column_text(self, column: exp.Column) -> str | None:
        scope = self._scope_of.get(id(column))
        found = self.source_of(column, scope) if scope is not None else None
        if found is None:
            return None  # unresolved: written as it stands
        owner, source = found
        if isinstance(source, Scope):
            inlined = self._inline(source, column.name)
            if inlined is not None:
                return inlined[0] if not _needs_parens(column, inlined[1]) else f"({inlined[0]})"
        label = self._generator.sql(self._label(owner, column.table))
        return f"{label}.{self._generator.sql(column.this)}"

    def _resolved_column(self, column: exp.Column) -> exp.Expr:
        """What ``_column_text`` writes, as a fresh node."""
        scope = self._scope_of.get(id(column))
        found = self.source_of(column, scope) if scope is not None else None
        if found is None:
            return column.copy()
        owner, source = found
        if isinstance(source, Scope):
            inlined = self._inline_tree(source, column.name)
            if inlined is not None:
                tree = inlined.copy()
                return exp.paren(tree, copy=False) if _needs_parens(column, tree) else tree
        label = self._label(owner, column.table)
        fresh = exp.column(column.this.copy(), table=label.copy())
        if isinstance(source, exp.Table) and self._schema is not None:
            declared = self._schema.column_type(source.db, source.name, column.name)
            kind = _data_type(declared, self.dialect) if declared else None
            if kind is not None:
                fresh.type = kind
        return fresh

    def _inline_tree(self, scope: Scope, name: str) -> exp.Expr | None:
        """The resolved projection a CTE or subquery column stands for (memoised, not copied)."""
        named = self._projections_named(scope, name)
        if len(named) != 1:
            return None
        branch, position = named[0]
        key = (id(branch), position)
        if key not in self._inlined_trees:
            if key in self._busy:
                return None
            self._busy.add(key)
            try:
                projection = branch.expression.expressions[position]
                self._inlined_trees[key] = self.resolved(projection)
            finally:
                self._busy.discard(key)
        return self._inlined_trees[key]

    def _inline(self, scope: Scope, name: str) -> tuple[str, exp.Expr] | None:
        """Text and node of the projection a CTE or subquery column stands for."""
        named = self._projections_named(scope, name)
        if len(named) != 1:
            return None  # set operations are not inlined: each branch differs
        branch, position = named[0]
        key = (id(branch), position)
        projection = branch.expression.expressions[position].unalias()
        if key not in self._inlined:
            if key in self._busy:
                return None
            self._busy.add(key)
            try:
                self._inlined[key] = self.text(projection)
            finally:
                self._busy.discard(key)
        text = self._inlined[key]
        return (text, projection) if text is not None else None

    def _projections_named(self, scope: Scope, name: str) -> list[tuple[Scope, int]]:
        branches = self.output_branches(scope)
        if not branches:
            return []
        # Set operations take their column names from the first branch, then go by position.
        names = [p.alias_or_name for p in branches[0].expression.expressions]
        if name not in names:
            return []
        position = names.index(name)
        return [(b, position) for b in branches if position < len(b.expression.expressions)]

    def _label(self, scope: Scope, alias: str) -> exp.Identifier:
        """How a source of ``scope`` is written in resolved texts, quoted where case matters."""
        labels = self._labels.get(id(scope))
        if labels is None:
            labels = self._labels[id(scope)] = {
                key: self._dialect.quote_identifier(exp.to_identifier(name), identify=False)
                for key, name in _source_labels(scope).items()
            }
        return labels.get(alias) or exp.to_identifier(alias)


@cache
def _data_type(declared: str, dialect: str) -> exp.DataType | None:
    """The sqlglot type of a catalog type name; None when sqlglot cannot read it."""
    try:
        return exp.DataType.build(declared, dialect=dialect)
    except (SqlglotError, ValueError):
        return None


def _needs_parens(column: exp.Column, replacement: exp.Expr) -> bool:
    return isinstance(replacement, _OPERATORS) and isinstance(column.parent, _OPERATORS)


def _source_labels(scope: Scope) -> dict[str, str]:
    """Base tables by their own name, numbered only when a table is read twice where both
    reads are visible (in one scope, or in a subquery and the queries around it)."""
    tables = _base_table_names(scope)
    visible_outside: Counter[str] = Counter()
    outer = scope
    while outer.is_subquery and outer.parent is not None:
        outer = outer.parent
        visible_outside.update(_base_table_names(outer).values())
    counts = visible_outside + Counter(tables.values())
    seen = Counter(visible_outside)
    labels = {}
    for alias, name in tables.items():
        seen[name] += 1
        labels[alias] = name if counts[name] == 1 else f"{name}_{seen[name]}"
    return labels


def _base_table_names(scope: Scope) -> dict[str, str]:
    return {
        alias: source.name
        for alias, (_, source) in scope.selected_sources.items()
        if isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier)
    }
