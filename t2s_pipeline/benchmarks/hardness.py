"""Spider's hardness bands (easy, medium, hard, extra), counted on a sqlglot tree.

Spider's evaluation script grades a gold query by three counts taken on its first SELECT:

- **component 1**: one each for WHERE, GROUP BY, ORDER BY and LIMIT when present, one per
  table joined beyond the first, one per ``OR`` and one per ``LIKE`` among the join, WHERE and
  HAVING conditions;
- **component 2**: one per subquery used as a condition's operand (``IN (SELECT ...)``,
  ``= (SELECT ...)``), plus one when the query is a UNION, INTERSECT or EXCEPT;
- **others**: one each when there is more than one aggregate, more than one selected column,
  more than one WHERE condition, more than one GROUP BY column.

Then: *easy* when component 1 <= 1 and the other two are 0; *medium* when component 2 is 0 and
either (component 1 <= 1, others <= 2) or (component 1 <= 2, others < 2); *hard* when
component 2 is 0 and either (component 1 <= 2, others > 2) or (component 1 is 3, others <= 2),
or when component 1 <= 1, others 0 and component 2 <= 1; *extra* otherwise.

The published aggregate count reads the first element of each WHERE and HAVING entry as if it
were an aggregate marker: a negated WHERE condition (``NOT IN``, ``NOT LIKE``) and every
AND/OR between HAVING conditions count as aggregates, while the aggregates written inside
HAVING do not. Those readings are reproduced so that imported bands agree with the published
split. Only the first SELECT of a set operation is graded (Spider's parser attaches a trailing
ORDER BY or LIMIT to the last branch), and a SELECT's own subqueries add nothing beyond
component 2.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from t2s_pipeline.sql.parse import parse_one_query

BANDS: tuple[str, ...] = ("easy", "medium", "hard", "extra")
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)


@dataclass(frozen=True)
class HardnessCounts:
    """The three counts Spider's bands are decided from."""

    component1: int
    component2: int
    others: int

    @property
    def band(self) -> str:
        """The band these counts give (the published decision table)."""
        c1, c2, others = self.component1, self.component2, self.others
        if c1 <= 1 and others == 0 and c2 == 0:
            return "easy"
        if c2 == 0 and ((others <= 2 and c1 <= 1) or (c1 <= 2 and others < 2)):
            return "medium"
        if (
            (c2 == 0 and others > 2 and c1 <= 2)
            or (c2 == 0 and 2 < c1 <= 3 and others <= 2)
            or (c1 <= 1 and others == 0 and c2 <= 1)
        ):
            return "hard"
        return "extra"


@dataclass(frozen=True)
class _Conditions:
    """The leaf conditions of one WHERE, HAVING or ON clause and the OR connectives between."""

    leaves: tuple[exp.Expr, ...] = ()
    ors: int = 0

    def __add__(self, other: _Conditions) -> _Conditions:
        return _Conditions(self.leaves + other.leaves, self.ors + other.ors)

    @property
    def connectives(self) -> int:
        return max(len(self.leaves) - 1, 0)


def spider_hardness(sql: str, dialect: str = "sqlite") -> str:
    """Spider's band of a gold query.

    Raises :class:`t2s_pipeline.errors.SqlAnalysisError` when the query does not parse.

    >>> spider_hardness("SELECT count(*) FROM singer")
    'easy'
    >>> spider_hardness("SELECT name, age FROM singer ORDER BY age DESC")
    'medium'
    >>> spider_hardness("SELECT name FROM stadium WHERE id NOT IN (SELECT stadium_id FROM concert)")
    'hard'
    """
    return hardness_counts(sql, dialect).band


def hardness_counts(sql: str, dialect: str = "sqlite") -> HardnessCounts:
    """Component 1, component 2 and others of a query (see the module docstring).

    >>> hardness_counts("SELECT a, b FROM t JOIN u ON t.id = u.id WHERE a LIKE 'x%'")
    HardnessCounts(component1=3, component2=0, others=1)
    """
    tree = parse_one_query(sql, dialect)
    select = _first_select(tree)
    set_operation = 1 if isinstance(tree, exp.SetOperation) else 0
    if select is None:  # VALUES: nothing to grade
        return HardnessCounts(0, set_operation, 0)
    where, having, joins = _where(select), _having(select), _join_conditions(select)
    everywhere = joins + where + having
    return HardnessCounts(
        component1=_component1(select, everywhere),
        component2=sum(_subquery_operands(leaf) for leaf in everywhere.leaves) + set_operation,
        others=_others(select, where, having),
    )


def _first_select(tree: exp.Expr) -> exp.Select | None:
    node = tree
    while isinstance(node, exp.SetOperation | exp.Subquery):
        node = node.this
    return node if isinstance(node, exp.Select) else None


def _component1(select: exp.Select, conditions: _Conditions) -> int:
    present = [select.args.get(k) is not None for k in ("where", "group", "order", "limit")]
    likes = sum(1 for leaf in conditions.leaves if isinstance(_unnegated(leaf), exp.Like))
    return sum(present) + _extra_tables(select) + conditions.ors + likes


def _others(select: exp.Select, where: _Conditions, having: _Conditions) -> int:
    aggregates = (
        sum(1 for p in select.expressions if isinstance(p.unalias(), exp.AggFunc))
        + sum(1 for leaf in where.leaves if _negated(leaf))
        + sum(1 for g in _group_by(select) if isinstance(g, exp.AggFunc))
        + _order_aggregates(select)
        # The published count reads HAVING's connectives and negations as aggregates.
        + having.connectives
        + sum(1 for leaf in having.leaves if _negated(leaf))
    )
    flags = (
        aggregates > 1,
        len(select.expressions) > 1,
        len(where.leaves) > 1,
        len(_group_by(select)) > 1,
    )
    return sum(flags)


def _extra_tables(select: exp.Select) -> int:
    if select.args.get("from_") is None:
        return 0
    return len(select.args.get("joins") or [])


def _group_by(select: exp.Select) -> list[exp.Expr]:
    group = select.args.get("group")
    return [] if group is None else list(group.expressions)


def _order_aggregates(select: exp.Select) -> int:
    """Aggregates of ORDER BY keys: each side of one arithmetic operator counts on its own."""
    order = select.args.get("order")
    count = 0
    for ordered in [] if order is None else order.expressions:
        key = ordered.this
        sides = [key.this, key.expression] if isinstance(key, _ARITHMETIC) else [key]
        count += sum(1 for side in sides if isinstance(side, exp.AggFunc))
    return count


def _where(select: exp.Select) -> _Conditions:
    where = select.args.get("where")
    return _Conditions() if where is None else _split(where.this)


def _having(select: exp.Select) -> _Conditions:
    having = select.args.get("having")
    return _Conditions() if having is None else _split(having.this)


def _join_conditions(select: exp.Select) -> _Conditions:
    found = _Conditions()
    for join in select.args.get("joins") or []:
        on = join.args.get("on")
        if on is not None:
            found += _split(on)
    return found


def _split(condition: exp.Expr) -> _Conditions:
    """Flatten AND/OR (and parentheses) into leaf conditions, counting the ORs."""
    if isinstance(condition, exp.Paren):
        return _split(condition.this)
    if isinstance(condition, exp.And | exp.Or):
        both = _split(condition.this) + _split(condition.expression)
        return _Conditions(both.leaves, both.ors + isinstance(condition, exp.Or))
    return _Conditions((condition,))


def _negated(leaf: exp.Expr) -> bool:
    """A NOT in front of the operator (``NOT IN``, ``NOT LIKE``, ``NOT BETWEEN``).

    ``IS NOT NULL`` is not one: Spider's parser reads that NOT after the operator.
    """
    if isinstance(leaf, exp.Not):
        return not isinstance(leaf.this, exp.Is)
    return bool(leaf.args.get("negate"))


def _unnegated(leaf: exp.Expr) -> exp.Expr:
    return leaf.this if isinstance(leaf, exp.Not) else leaf


def _subquery_operands(leaf: exp.Expr) -> int:
    """Subqueries used directly as operands of one condition."""
    condition = _unnegated(leaf)
    if isinstance(condition, exp.Exists):
        return 1
    count = 0
    for value in condition.args.values():
        for operand in value if isinstance(value, list) else [value]:
            if isinstance(operand, exp.Subquery | exp.Query):
                count += 1
    return count
